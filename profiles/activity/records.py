"""Recording the activity log: one row per entity write, with a field-level before/after.

Every write service calls ``activity_record`` (one entity) or ``activity_record_many`` (an
import, a change set, a bulk ingest) inside its transaction, after writing, with the entity's
SPEC §2 entry before and after (``None``: it did not exist / no longer exists) and the write's
``origin``. Nothing is recorded when before and after are equal.

Field paths are SPEC §2 names relative to the entry (``itemFilter.customer_id``,
``rules.kb.maxItems``, ``metadata.updated_at``; ``profiles.workspace.entity_changes``); nested
objects are compared key by key, lists and scalars as wholes. A text value longer than
``TEXT_KEPT`` characters is kept as its first ``TEXT_KEPT`` characters followed by
``" … (N more characters)"``: the log says what changed without holding every article twice.
"""

from collections.abc import Iterable, Mapping

from django.utils import timezone

from profiles.models import Activity, ActivityOrigin
from profiles.workspace.bulk_writes import JsonText, json_encoder, rows_insert
from profiles.workspace.entity_changes import EntityChange, entry_changes
from profiles.workspace.origin import WriteOrigin

# An activity entry is the entity change it records.
ActivityEntry = EntityChange


def _actor(user, origin: WriteOrigin):
    actor = origin.author if origin.author is not None else user
    return actor if getattr(actor, "is_authenticated", False) else None


def _row(
    entry: EntityChange, *, at, actor, origin: WriteOrigin, fields: list[dict] | JsonText
) -> dict:
    return {
        "at": at,
        "actor_id": actor.pk if actor is not None else None,
        "actor_name": actor.get_username() if actor is not None else "",
        "origin": origin.door or ActivityOrigin.CLI,
        "change_request_id": getattr(origin.change_request, "pk", None),
        "kind": entry.kind,
        "key": entry.key,
        "path": entry.path,
        "op": entry.op,
        "fields": fields,
    }


def activity_fields_encoded(entry: EntityChange) -> JsonText:
    """Return an entry's logged fields as the log stores them (JSON text), for a writer that
    encodes them before taking the writers' lock (``activity_record_many``'s ``encoded``)."""
    encoder = json_encoder(Activity._meta.get_field("fields").encoder)
    return JsonText(encoder.encode(entry_changes(entry.before, entry.after)))


def activity_record_many(
    entries: Iterable[EntityChange],
    *,
    user,
    origin: WriteOrigin | None,
    encoded: Mapping[tuple, JsonText] | None = None,
) -> int:
    """Record the writes that changed something, in one bulk insert; return how many.

    The actor is ``origin.author`` when given (an applied change request is the requester's
    change, as its profile versions say), else ``user``. The origin's door is the log's
    ``origin`` (a write whose caller named no door is a command line's). ``encoded`` gives
    the fields of some entries already encoded (``activity_fields_encoded``), by
    (kind, key, path, op); an entry's op is part of the key, so fields encoded for a create
    are never used for the update the write turned out to be.
    """
    origin = origin or WriteOrigin()
    actor = _actor(user, origin)
    at = timezone.now()
    rows = []
    for entry in entries:
        text = encoded.get((entry.kind, entry.key, entry.path, entry.op)) if encoded else None
        if text is not None:
            if text != "[]" or entry.op != "update":  # an update that changed nothing: none
                rows.append(_row(entry, at=at, actor=actor, origin=origin, fields=text))
            continue
        fields = entry_changes(entry.before, entry.after)
        if not fields and entry.before is not None and entry.after is not None:
            continue
        rows.append(_row(entry, at=at, actor=actor, origin=origin, fields=fields))
    # An import of 50,000 items writes as many entries: in one COPY, not an INSERT per batch.
    rows_insert(Activity, rows)
    return len(rows)


def activity_record(
    *,
    kind: str,
    key: str,
    before: dict | None,
    after: dict | None,
    user,
    origin: WriteOrigin | None,
    path: str | None = None,
) -> int:
    """Record one entity write (see ``activity_record_many``); return 1, or 0 if unchanged."""
    return activity_record_many(
        [EntityChange(kind=kind, key=key, path=path, before=before, after=after)],
        user=user,
        origin=origin,
    )

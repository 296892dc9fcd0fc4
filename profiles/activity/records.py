"""Recording the activity log: one row per entity write, with a field-level before/after.

Every write service calls ``activity_record`` (one entity) or ``activity_record_many`` (an
import, a change set, a bulk ingest) inside its transaction, after writing, with the entity's
SPEC §2 entry before and after (``None``: it did not exist / no longer exists) and the write's
``origin``. Nothing is recorded when before and after are equal.

Field paths are SPEC §2 names relative to the entry (``itemFilter.customer_id``,
``rules.kb.maxItems``, ``metadata.updated_at``); nested objects are compared key by key, lists
and scalars as wholes. A text value longer than ``TEXT_KEPT`` characters is kept as its first
``TEXT_KEPT`` characters followed by ``" … (N more characters)"``: the log says what changed
without holding every article twice.
"""

from collections.abc import Iterable
from dataclasses import dataclass

from profiles.models import Activity, ActivityOrigin
from profiles.workspace.mappers import json_safe
from profiles.workspace.origin import WriteOrigin

TEXT_KEPT = 2_000

# Objects whose keys are compared one by one (others are compared as one value).
_NESTED = {"itemFilter", "metadata", "rules", "currentness", "appliesTo", "render", "input"}


@dataclass(frozen=True)
class ActivityEntry:
    """One entity write to record: its kind, op, key (an item's layer key) and path."""

    kind: str
    key: str
    before: dict | None
    after: dict | None
    path: str | None = None

    @property
    def op(self) -> str:
        if self.before is None:
            return Activity.Op.CREATE
        if self.after is None:
            return Activity.Op.DELETE
        return Activity.Op.UPDATE


def _kept(value):
    if isinstance(value, str) and len(value) > TEXT_KEPT:
        return f"{value[:TEXT_KEPT]} … ({len(value) - TEXT_KEPT:,} more characters)"
    return value


def _walk(path: str, before, after, out: list, *, nested: bool) -> None:
    if nested and isinstance(before, dict) and isinstance(after, dict):
        for key in sorted({*before, *after}, key=str):
            _walk(f"{path}.{key}", before.get(key), after.get(key), out, nested=True)
    elif before != after:
        out.append({"path": path, "from": _kept(before), "to": _kept(after)})


def entry_changes(before: dict | None, after: dict | None) -> list[dict]:
    """Return what differs between two SPEC §2 entries as ``[{path, from, to}]``.

    ``None`` on a side is "not given". A created entry lists every field it gives; a deleted
    one every field it had.
    """
    before = json_safe(before or {})
    after = json_safe(after or {})
    out: list[dict] = []
    for name in sorted({*before, *after}, key=str):
        if name == "items":  # a layer's items are entries of their own
            continue
        _walk(str(name), before.get(name), after.get(name), out, nested=name in _NESTED)
    return out


def _actor(user, origin: WriteOrigin):
    actor = origin.author if origin.author is not None else user
    return actor if getattr(actor, "is_authenticated", False) else None


def _row(entry: ActivityEntry, *, actor, origin: WriteOrigin, fields: list[dict]) -> Activity:
    return Activity(
        actor=actor,
        actor_name=actor.get_username() if actor is not None else "",
        origin=origin.door or ActivityOrigin.CLI,
        change_request=origin.change_request,
        kind=entry.kind,
        key=entry.key,
        path=entry.path,
        op=entry.op,
        fields=fields,
    )


def activity_record_many(
    entries: Iterable[ActivityEntry], *, user, origin: WriteOrigin | None
) -> int:
    """Record the writes that changed something, in one bulk insert; return how many.

    The actor is ``origin.author`` when given (an applied change request is the requester's
    change, as its profile versions say), else ``user``. The origin's door is the log's
    ``origin`` (a write whose caller named no door is a command line's).
    """
    origin = origin or WriteOrigin()
    actor = _actor(user, origin)
    rows = []
    for entry in entries:
        fields = entry_changes(entry.before, entry.after)
        if not fields and entry.before is not None and entry.after is not None:
            continue
        rows.append(_row(entry, actor=actor, origin=origin, fields=fields))
    Activity.objects.bulk_create(rows, batch_size=1000)
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
        [ActivityEntry(kind=kind, key=key, path=path, before=before, after=after)],
        user=user,
        origin=origin,
    )

"""Reads of the activity log: the rows a reader asks for, newest first, a page at a time, and
which of the entities they name still exist (for links).

Every filter rides an index of ``Activity``: an entity on (kind, key, -id), an actor on
(actor, -id), a door on (origin, -id), a time range on (at). A page is read by keyset (``id``
below or above the one a link carries), never by counting or offsetting a log that only
grows: one query for its rows (with their actor), one to know whether the other direction has
more, one to find the actor's id when a username is asked for.
"""

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from profiles.activity.filters import PEOPLE_KINDS
from profiles.models import Activity, Consumer, Item, Layer, Profile


def activity_list(
    *,
    kind: str | None = None,
    key: str | None = None,
    path: str | None = None,
    actor: str | None = None,
    origin: str | None = None,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    change_request: int | None = None,
    include_items: bool = True,
    include_people: bool = True,
) -> QuerySet[Activity]:
    """Return the activity rows that match, newest first, with their actor.

    ``actor`` is a username: the rows of that user, or when no user has it (any more), the
    rows that kept the name of a deleted one. ``since`` is inclusive, ``until`` exclusive.
    Without ``include_items`` no item row is returned (item rows carry customer material;
    reading them needs READ_MATERIAL). Without ``include_people`` no member or invitation
    row is returned (they name people's addresses; reading them needs ADMINISTER).
    """
    rows = Activity.objects.select_related("actor").order_by("-id")
    if kind is not None:
        rows = rows.filter(kind=kind)
    if not include_items:
        rows = rows.exclude(kind="item")
    if not include_people:
        rows = rows.exclude(kind__in=PEOPLE_KINDS)
    if key is not None:
        rows = rows.filter(key=key)
    if path is not None:
        rows = rows.filter(path=path)
    if actor is not None:
        actor_id = (
            get_user_model()
            .objects.filter(**{get_user_model().USERNAME_FIELD: actor})
            .values_list("pk", flat=True)
            .first()
        )
        if actor_id is None:
            rows = rows.filter(actor__isnull=True, actor_name=actor)
        else:
            rows = rows.filter(actor_id=actor_id)
    if origin is not None:
        rows = rows.filter(origin=origin)
    if since is not None:
        rows = rows.filter(at__gte=since)
    if until is not None:
        rows = rows.filter(at__lt=until)
    if change_request is not None:
        rows = rows.filter(change_request_id=change_request)
    return rows


@dataclass(frozen=True)
class ActivityPage:
    """One page of the log, newest first. ``newer``: pass it as ``after`` for the page of
    newer rows (None: this is the newest page); ``older``: as ``before`` for the older rows
    (None: this is the last page)."""

    rows: list[Activity]
    newer: int | None
    older: int | None


def activity_page(
    rows: QuerySet[Activity], *, size: int, before: int | None = None, after: int | None = None
) -> ActivityPage:
    """Return the page of ``rows`` (``activity_list``) with ids below ``before`` (the newest
    such rows), or else above ``after`` (the oldest such rows), else the newest rows."""
    if after is not None and before is None:
        found = list(rows.filter(id__gt=after).order_by("id")[: size + 1])
        more_newer = len(found) > size
        page = found[:size][::-1]
        more_older = bool(page) and rows.filter(id__lt=page[-1].id).exists()
    else:
        rows_below = rows.filter(id__lt=before) if before is not None else rows
        found = list(rows_below[: size + 1])
        more_older = len(found) > size
        page = found[:size]
        more_newer = before is not None and bool(page) and rows.filter(id__gt=page[0].id).exists()
    return ActivityPage(
        rows=page,
        newer=page[0].id if page and more_newer else None,
        older=page[-1].id if page and more_older else None,
    )


def activity_entities_existing(rows) -> dict[tuple[str, str, str | None], int | str]:
    """Return, for the entities the rows name that still exist, what their page needs: the
    key (consumer, layer, profile) or the item's id, by ``(kind, key, path)``.

    One query per kind the rows name (at most four), whatever their number.
    """
    wanted: dict[str, set] = defaultdict(set)
    for row in rows:
        wanted[row.kind].add((row.key, row.path) if row.kind == "item" else row.key)
    existing: dict[tuple[str, str, str | None], int | str] = {}
    for kind, model in (("consumer", Consumer), ("layer", Layer), ("profile", Profile)):
        if wanted[kind]:
            for key in model.objects.filter(key__in=wanted[kind]).values_list("key", flat=True):
                existing[(kind, key, None)] = key
    if wanted["item"]:
        layers = {key for key, _ in wanted["item"]}
        paths = {path for _, path in wanted["item"]}
        for pk, key, path in Item.objects.filter(layer__key__in=layers, path__in=paths).values_list(
            "pk", "layer__key", "path"
        ):
            if (key, path) in wanted["item"]:
                existing[("item", key, path)] = pk
    return existing

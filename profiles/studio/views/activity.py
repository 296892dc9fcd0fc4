"""The studio's Activity page: every write to any entity, from any door, newest first, with
filters (kind, key, actor, door, dates) as a GET form and pages of 50.

The same filters, checks and rows as ``GET /api/v1/activity`` (``profiles.activity``): readers
of configuration see the log; item rows (customer material) only who may read material;
member and invitation rows (people's addresses and roles) only staff.
"""

import json

from django.http import QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from profiles.activity.filters import (
    ACTIVITY_KINDS,
    FILTER_PARAMETERS,
    PEOPLE_KINDS,
    ActivityFilters,
    activity_filters_parse,
)
from profiles.activity.selectors import (
    ActivityPage,
    activity_entities_existing,
    activity_list,
    activity_page,
)
from profiles.models import Activity, ActivityOrigin
from profiles.workspace.parameters import ParameterInvalid, positive_integer
from profiles.workspace.permissions import (
    ADMINISTER,
    READ_CONFIG,
    READ_MATERIAL,
    capability_required,
    require,
    user_can,
)

ACTIVITY_PER_PAGE = 50
# A value longer than this (as the page shows it) is folded into a <details>.
VALUE_SHOWN_CHARS = 120


def activity_url(kind: str, key: str, path: str | None = None) -> str:
    """Return the Activity page filtered on one entity (the link of each entity's page)."""
    query = QueryDict(mutable=True)
    query.update({"kind": kind, "key": key})
    if path:
        query["path"] = path
    return f"{reverse('activity')}?{query.urlencode()}"


def _shown(value) -> str:
    """Return a logged value as a reader reads it (JSON; "—" for not given)."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _entity_url(row: Activity, existing: dict) -> str | None:
    """Return the page of the entity the row is about, when it still exists."""
    found = existing.get((row.kind, row.key, row.path if row.kind == "item" else None))
    if row.kind in PEOPLE_KINDS:
        return reverse("team")  # only staff read these rows, and the Team page
    if found is None:
        return {"environment": reverse("environment-list")}.get(row.kind)
    if row.kind == "item":
        return reverse("item-edit", args=[row.key, found])
    names = {"consumer": "consumer-edit", "layer": "layer-edit", "profile": "profile-editor"}
    return reverse(names[row.kind], args=[found])


def _field_rows(fields: list[dict]) -> list[dict]:
    rows = []
    for change in fields:
        before, after = _shown(change.get("from")), _shown(change.get("to"))
        rows.append(
            {
                "path": change.get("path", ""),
                "before": before,
                "after": after,
                "long": max(len(before), len(after)) > VALUE_SHOWN_CHARS,
            }
        )
    return rows


def _row(row: Activity, existing: dict) -> dict:
    return {
        "activity": row,
        "actor": row.actor.get_username() if row.actor is not None else row.actor_name,
        "origin": ActivityOrigin(row.origin).label if row.origin in ActivityOrigin.values else "",
        "entity_url": _entity_url(row, existing),
        "fields": _field_rows(row.fields or []),
    }


def _page_link(request, name: str, value: int | None) -> str | None:
    if value is None:
        return None
    query = request.GET.copy()
    for cursor in ("before", "after"):
        query.pop(cursor, None)
    query[name] = str(value)
    return f"?{query.urlencode()}"


@capability_required(READ_CONFIG)
@require_GET
def activity_log(request):
    """List the activity log, filtered by the GET form, a page at a time."""
    include_items = user_can(request.user, READ_MATERIAL)
    include_people = user_can(request.user, ADMINISTER)
    error = ""
    try:
        filters = activity_filters_parse(request.GET)
        before = positive_integer(request.GET, "before", meaning="an activity id")
        after = positive_integer(request.GET, "after", meaning="an activity id")
    except ParameterInvalid as exc:
        filters, before, after, error = ActivityFilters(), None, None, str(exc)
    if filters.kind == "item":
        require(request.user, READ_MATERIAL)  # item rows carry customer material
    if filters.kind in PEOPLE_KINDS:
        require(request.user, ADMINISTER)  # they name people's addresses and roles
    if error:
        page = ActivityPage(rows=[], newer=None, older=None)
    else:
        page = activity_page(
            activity_list(
                **filters.as_arguments(),
                include_items=include_items,
                include_people=include_people,
            ),
            size=ACTIVITY_PER_PAGE,
            before=before,
            after=after,
        )
    existing = activity_entities_existing(page.rows)
    filtered = any(request.GET.get(name) for name in FILTER_PARAMETERS)
    context = {
        "rows": [_row(row, existing) for row in page.rows],
        "values": {name: request.GET.get(name, "") for name in FILTER_PARAMETERS},
        "kinds": [
            kind
            for kind in ACTIVITY_KINDS
            if (include_items or kind != "item") and (include_people or kind not in PEOPLE_KINDS)
        ],
        "origins": ActivityOrigin.choices,
        "filtered": filtered,
        "error": error,
        "newer_url": _page_link(request, "after", page.newer),
        "older_url": _page_link(request, "before", page.older),
        "first_url": "?" + _without_cursor(request) if before or after else None,
    }
    return render(request, "profiles/activity.html", context, status=400 if error else 200)


def _without_cursor(request) -> str:
    query = request.GET.copy()
    for cursor in ("before", "after"):
        query.pop(cursor, None)
    return query.urlencode()

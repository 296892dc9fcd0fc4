"""The activity log over the API: ``GET /api/v1/activity``, newest first, a page at a time.

Readers of configuration read it (a key: the ``read`` scope); item rows carry customer
material, so only requests that may read material (READ_MATERIAL) see them, and asking for
``kind=item`` without it is refused. Member and invitation rows name people's addresses and
roles: only staff with their own token (ADMINISTER, which no key scope grants) see them. The
filters are checked by the feature's one parser (``profiles.activity.filters``); a page is a
keyset (``before``/``after`` an id), never a count of a log that only grows.
"""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

from profiles.activity.filters import (
    ACTIVITY_KINDS,
    ACTIVITY_ORIGINS,
    ACTOR_MAX_LENGTH,
    KEY_MAX_LENGTH,
    MOMENT_MAX_LENGTH,
    PATH_MAX_LENGTH,
    PEOPLE_KINDS,
    activity_filters_parse,
)
from profiles.activity.selectors import activity_list, activity_page
from profiles.api.base import ApiView
from profiles.api.exceptions import ApiError
from profiles.api.pagination import MAX_PAGE_SIZE, PageNumberPagination
from profiles.api.serializers import activity as s
from profiles.api.throttling import ResolutionRateThrottle
from profiles.models import Activity
from profiles.workspace.parameters import positive_integer
from profiles.workspace.permissions import (
    ADMINISTER,
    READ_CONFIG,
    READ_MATERIAL,
    capability_permission,
    request_can,
)
from profiles.workspace.validation import MAX_STORED_INTEGER

ROW_ID = {"type": "integer", "minimum": 1, "maximum": MAX_STORED_INTEGER}
MOMENT = {"type": "string", "format": "date-time", "maxLength": MOMENT_MAX_LENGTH}


def activity_row_record(row: Activity) -> dict:
    """Return one activity row as the API shows it (``path`` only for an item)."""
    record = {
        "id": row.id,
        "at": row.at,
        "actor": row.actor.get_username() if row.actor is not None else (row.actor_name or None),
        "origin": row.origin,
        "changeRequest": row.change_request_id,
        "kind": row.kind,
        "key": row.key,
        "op": row.op,
        "fields": row.fields,
    }
    if row.path is not None:
        record["path"] = row.path
    return record


class ActivityView(ApiView):
    permission_classes = [capability_permission(READ_CONFIG)]
    throttle_classes = [ResolutionRateThrottle]
    throttle_scope = "activity"

    @extend_schema(
        operation_id="activity_list",
        summary="Every write to any entity, from any door: newest first, a page at a time",
        description="One row per entity write with who (`actor`; an applied change request's "
        "rows name its author), the door (`origin`; `changeRequest` for an applied request), "
        "when, and the field-level before/after. Item rows carry customer material: only a "
        "request that may read material (editors, staff; a key's `read` scope) sees them "
        "(`kind=item` without it: 403). Member and invitation rows name people: only staff "
        "with their own token see them (`kind=member` or `kind=invitation` otherwise: 403). "
        "`since` is inclusive and `until` exclusive; each is a date-time (UTC without an "
        "offset) or a date (`until` a date: that whole day). Pages "
        "follow `next` (older rows) and `previous` (newer rows); there is no count.",
        parameters=[
            OpenApiParameter("kind", str, enum=list(ACTIVITY_KINDS), description="Entity kind."),
            OpenApiParameter(
                "key",
                {"type": "string", "maxLength": KEY_MAX_LENGTH},
                description="The entity's key (an item's: its layer's).",
            ),
            OpenApiParameter(
                "path",
                {"type": "string", "maxLength": PATH_MAX_LENGTH},
                description="An item's path (with `kind=item&key=<layer>`).",
            ),
            OpenApiParameter(
                "actor",
                {"type": "string", "maxLength": ACTOR_MAX_LENGTH},
                description="Username of whose change it is.",
            ),
            OpenApiParameter(
                "origin", str, enum=list(ACTIVITY_ORIGINS), description="The door of the write."
            ),
            OpenApiParameter("since", MOMENT, description="From this moment (inclusive)."),
            OpenApiParameter("until", MOMENT, description="Before this moment (exclusive)."),
            OpenApiParameter(
                "changeRequest", ROW_ID, description="Only what this change request applied."
            ),
            OpenApiParameter("before", ROW_ID, description="Rows older than this id (`next`)."),
            OpenApiParameter("after", ROW_ID, description="Rows newer than this id (`previous`)."),
            OpenApiParameter(
                "page_size",
                ROW_ID,
                description=f"Rows per page, from 1 (more than {MAX_PAGE_SIZE}: "
                f"{MAX_PAGE_SIZE}; default 50).",
            ),
        ],
        responses={200: s.ActivityPageSerializer},
        examples=[s.ACTIVITY_EXAMPLE],
        tags=["activity"],
    )
    def get(self, request):
        params = request.query_params
        filters = activity_filters_parse(params)
        include_items = request_can(request, READ_MATERIAL)
        if filters.kind == "item" and not include_items:
            raise ApiError(
                403,
                "PERMISSION_DENIED",
                "the activity of items needs the READ_MATERIAL permission (editors or staff; "
                "a key's read scope)",
                "kind",
            )
        include_people = request_can(request, ADMINISTER)
        if filters.kind in PEOPLE_KINDS and not include_people:
            raise ApiError(
                403,
                "PERMISSION_DENIED",
                f"the activity of {filters.kind}s needs the ADMINISTER permission (staff)",
                "kind",
            )
        size = PageNumberPagination().get_page_size(request)
        page = activity_page(
            activity_list(
                **filters.as_arguments(),
                include_items=include_items,
                include_people=include_people,
            ),
            size=size,
            before=positive_integer(params, "before", meaning="an activity id"),
            after=positive_integer(params, "after", meaning="an activity id"),
        )
        url = request.build_absolute_uri()
        url = remove_query_param(remove_query_param(url, "before"), "after")
        return Response(
            {
                "next": None
                if page.older is None
                else replace_query_param(url, "before", page.older),
                "previous": None
                if page.newer is None
                else replace_query_param(url, "after", page.newer),
                "results": [activity_row_record(row) for row in page.rows],
            }
        )

"""What the API's views share: the ``ApiView`` and ``ApiViewSet`` bases (the API's schema, a
page of records, on whose behalf a write runs), the 400 of an invalid request (``invalid``),
the body check and a whole number of the query."""

from django.http import QueryDict
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.viewsets import GenericViewSet

from profiles.api.exceptions import ApiError
from profiles.api.schema import ApiAutoSchema
from profiles.api.serializers.entries import NoBodySerializer
from profiles.api.throttling import ResolutionRateThrottle
from profiles.workspace.origin import API as API_ORIGIN
from profiles.workspace.parameters import whole_number
from profiles.workspace.permissions import DefaultApiPermission


def invalid(path: str, message: str) -> ApiError:
    return ApiError(400, "INVALID_REQUEST", f"{path}: {message}" if path else message, path)


def body_object(
    request, allowed: tuple[str, ...] | None = None, required: tuple[str, ...] = ()
) -> dict:
    """Return the request body as a dict; reject a non-object body, unknown fields and a
    missing ``required`` one."""
    return body_fields(request.data, allowed, required)


def body_fields(
    data, allowed: tuple[str, ...] | None = None, required: tuple[str, ...] = ()
) -> dict:
    """Return a parsed body as a dict; reject a non-object body, unknown fields and a missing
    ``required`` one (the rule of every door: DRF's ``request.data`` or the lean door's parsed
    bytes)."""
    if isinstance(data, QueryDict):  # a form post from the browsable API
        data = data.dict()
    if not isinstance(data, dict):
        raise invalid("", "the request body must be a JSON object")
    data = dict(data)
    if allowed is not None:
        for key in data:
            if key not in allowed:
                raise invalid(str(key), "unknown field")
    for field in required:
        if field not in data:
            raise invalid(field, "is required")
    return data


def query_whole_number(request, name: str) -> int:
    """Return the query's whole number ``name`` (an offset), 0 when not given."""
    text = request.query_params.get(name)
    if text in (None, ""):
        return 0
    number = whole_number(text)
    if number is None:
        raise invalid(name, "must be a whole number (0-9)")
    return number


def no_body_action(**schema):
    """Return the decorator of a POST action on one object that takes no fields (send ``{}``
    or nothing); ``schema``: the rest of its ``extend_schema``."""

    def decorate(function):
        function = action(detail=True, methods=["post"])(function)
        return extend_schema(request=NoBodySerializer, **schema)(function)

    return decorate


def viewset_schema(
    tag: str, *, operations: str = "", record: type | None = None, listing: str = "", **schema
):
    """Return the decorator of an ``ApiViewSet``: its schema's ``tag`` (and the rest of its
    ``extend_schema``), the prefix of its operation ids (``operations``, the tag by default),
    the record its actions answer with (``ApiAutoSchema`` derives both) and the summary of
    its ``list`` when ``RecordListMixin`` writes it (``listing``)."""

    def decorate(viewset: type) -> type:
        viewset.operation_prefix, viewset.record_serializer = operations or tag, record
        if listing:
            viewset = extend_schema_view(list=extend_schema(summary=listing))(viewset)
        return extend_schema(tags=[tag], **schema)(viewset)

    return decorate


class ApiView(APIView):
    schema = ApiAutoSchema()
    permission_classes = [DefaultApiPermission]


# A viewset of the API on its services (an entry's: ``EntryViewSet``). No docstring: the
# schema would describe every operation without one of its own with it.
class ApiViewSet(GenericViewSet):
    schema = ApiAutoSchema()
    #: the actions counted like the costly doors (``ResolutionRateThrottle`` in
    #: ``throttle_scope``), the others not at all; ``None``: the project's default throttles
    throttled_actions: tuple[str, ...] | None = None

    def get_throttles(self):
        if self.throttled_actions is None:
            return super().get_throttles()
        return [ResolutionRateThrottle()] if self.action in self.throttled_actions else []

    @property
    def if_match(self) -> str | None:
        return self.request.headers.get("If-Match")

    def author(self) -> dict:
        """Return on whose behalf a write runs, as every write service takes it."""
        return {"user": self.request.user, "origin": API_ORIGIN}

    def guarded(self) -> dict:
        """Return ``author()`` with the request's ``If-Match`` (for a change or a delete)."""
        return {**self.author(), "if_match": self.if_match}

    def page_of(self, rows, record) -> Response:
        """Answer the page of ``rows`` the query asks for, each row as ``record`` shows it."""
        page = self.paginate_queryset(rows)
        return self.get_paginated_response([record(row) for row in page])


# ``list`` of a viewset of records: the page of ``rows()`` the query asks for, each row as
# ``record`` shows it (its summary: ``viewset_schema``'s ``listing``). No docstring: the
# schema would describe the viewset's operations with it.
class RecordListMixin:
    #: how ``list`` shows one of ``rows()`` (a function of the row)
    record = None

    def rows(self):
        raise NotImplementedError

    def list(self, request, *args, **kwargs):
        return self.page_of(self.rows(), self.record)

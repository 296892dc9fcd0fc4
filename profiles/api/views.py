"""The API's views: thin, each validating its body, calling a service and answering.

Resolve, preview and expand pass the request to the engine unchanged (SPEC §3 validation,
SPEC §7 answer). CRUD writes change one entry of the workspace document and save it through
the import path (``services.workspace_document_change``), so they validate exactly as an
import does.
"""

import time

from django.db.models import Count, Prefetch, Q
from django.http import QueryDict, StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.generics import GenericAPIView
from rest_framework.mixins import ListModelMixin
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from profiles.api import serializers as s
from profiles.api.exceptions import ApiError, ref_not_available
from profiles.api.imports import ImportJobSerializer, import_job_response
from profiles.api.renderers import (
    WORKSPACE_PARSERS,
    ResolutionJSONRenderer,
    WorkspaceText,
    YAMLRenderer,
)
from profiles.api.schema import (
    ERROR_EXAMPLES,
    EXPAND_EXAMPLES,
    PREVIEW_EXAMPLES,
    RESOLUTION_EXAMPLE,
    RESOLVE_REQUEST_EXAMPLES,
    ApiAutoSchema,
)
from profiles.api.throttling import ResolutionRateThrottle
from profiles.concurrency import (
    PreconditionFailed,
    document_etag,
    etag_matches,
    item_etag,
    layer_etag,
    profile_etag,
    workspace_write,
)
from profiles.decision_log import decision_log_record
from profiles.exports import CONTENT_TYPES as EXPORT_CONTENT_TYPES
from profiles.exports import workspace_export_chunks
from profiles.imports import import_job_start
from profiles.mappers import (
    RULE_FIELDS,
    canonical_string,
    json_safe,
    map_consumer_to_resolver,
    map_item_to_resolver,
    map_layer_to_resolver,
    map_profile_to_resolver,
)
from profiles.models import Consumer, DecisionLog, Item, Layer, Profile, Rule, Scenario
from profiles.permissions import (
    IMPORT_EXPORT,
    READ_CONFIG,
    READ_MATERIAL,
    RESOLVE,
    WRITE_MATERIAL,
    WRITE_RULES,
    DefaultApiPermission,
    capability_permission,
)
from profiles.services import (
    IMPORT_MODES,
    EntryInvalid,
    RefNotAvailable,
    profile_resolve,
    profile_save_rules,
    ref_expand,
    scenarios_upsert,
    workspace_export,
    workspace_import,
    workspace_resolve,
)
from profiles.validation import WorkspaceValidationError


def workspace_document_change(change, *, user=None, check=None):
    """Apply ``change`` to the stored document and import the result (replaced next by the
    per-entry services behind viewsets)."""
    with workspace_write():
        if check is not None:
            check()
        document = workspace_export()
        prefix = change(document)
        try:
            return workspace_import(document=document, mode="replace", user=user)
        except WorkspaceValidationError as exc:
            raise EntryInvalid(exc.issues, prefix) from exc


# --- helpers ------------------------------------------------------------------------------


def invalid(path: str, message: str) -> ApiError:
    return ApiError(400, "INVALID_REQUEST", f"{path}: {message}" if path else message, path)


def not_found(what: str, path: str = "") -> ApiError:
    return ApiError(404, "NOT_FOUND", f"{what} not found", path)


def conflict(message: str, path: str = "") -> ApiError:
    return ApiError(409, "CONFLICT", message, path)


def body_object(request, allowed: tuple[str, ...] | None = None) -> dict:
    """Return the request body as a dict; reject a non-object body and unknown fields."""
    data = request.data
    if isinstance(data, QueryDict):  # a form post from the browsable API
        data = data.dict()
    if not isinstance(data, dict):
        raise invalid("", "the request body must be a JSON object")
    data = dict(data)
    if allowed is not None:
        for key in data:
            if key not in allowed:
                raise invalid(str(key), "unknown field")
    return data


def fixed_identity(body: dict, name: str, value: str) -> None:
    """Reject a body that tries to change the key (or path/name) the URL names."""
    if name in body and body[name] is not None and canonical_string(body[name]) != value:
        raise invalid(name, "cannot be changed")
    body[name] = value


def if_match(request) -> str | None:
    return request.headers.get("If-Match")


def check_etag(header: str | None, current: str) -> None:
    if not etag_matches(header, current):
        raise PreconditionFailed(current)


def entry_index(entries: list, field: str, value: str) -> int:
    return next(index for index, entry in enumerate(entries) if entry.get(field) == value)


def merged(entry: dict, body: dict) -> dict:
    """PATCH: the body's top-level fields replace the entry's (null = back to the default)."""
    return {**entry, **body}


def with_etag(data, etag: str, status: int = 200, location: str | None = None) -> Response:
    headers = {"ETag": etag}
    if location:
        headers["Location"] = location
    return Response(data, status=status, headers=headers)


class ApiView(APIView):
    schema = ApiAutoSchema()
    permission_classes = [DefaultApiPermission]


class ApiListView(ListModelMixin, GenericAPIView):
    schema = ApiAutoSchema()
    permission_classes = [DefaultApiPermission]

    def represent(self, row) -> dict:
        raise NotImplementedError

    def filter_rows(self, queryset):
        return queryset

    def get(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.filter_rows(self.get_queryset()))
        return self.get_paginated_response([self.represent(row) for row in page])


def search_parameter(fields: str) -> OpenApiParameter:
    return OpenApiParameter("search", str, description=f"Case-insensitive search in {fields}.")


# --- resolve, preview, expand -------------------------------------------------------------

SELECTION = ("profile", "consumer", "objective", "environment")


class ResolutionView(ApiView):
    permission_classes = [capability_permission(RESOLVE)]
    throttle_classes = [ResolutionRateThrottle]


class ResolveView(ResolutionView):
    throttle_scope = "resolve"
    renderer_classes = [ResolutionJSONRenderer, BrowsableAPIRenderer]

    @extend_schema(
        operation_id="resolve",
        summary="Resolve a request (SPEC §3) and return the resolution (SPEC §7)",
        description=(
            "The answer is byte-for-byte what `python -m resolver resolve` prints for the same "
            "workspace and request. `scenario` fills the request from a saved scenario."
        ),
        request=s.ResolveRequestSerializer,
        responses={200: s.ResolutionSerializer},
        examples=[*RESOLVE_REQUEST_EXAMPLES, RESOLUTION_EXAMPLE, *ERROR_EXAMPLES],
        tags=["resolve"],
    )
    def post(self, request):
        started = time.perf_counter()
        body = body_object(request)
        if "scenario" in body:
            body = request_from_scenario(body, body.pop("scenario"))
        resolution = workspace_resolve(request=body)
        decision_log_record(
            request_data=body,
            resolution=resolution,
            source=DecisionLog.Source.API,
            started=started,
            user=request.user,
            auth=authentication_kind(request),
        )
        return Response(resolution)


def authentication_kind(request) -> str:
    """Return how the caller authenticated: ``token`` or ``session``."""
    authenticator = getattr(request, "successful_authenticator", None)
    if authenticator is None:
        return ""
    return "token" if "Token" in type(authenticator).__name__ else "session"


def request_from_scenario(body: dict, name) -> dict:
    """Fill what the body does not give (selection, input, now, format, availability)."""
    if not isinstance(name, str) or not name:
        raise invalid("scenario", "must be a scenario name")
    scenario = Scenario.objects.select_related("profile").filter(name=name).first()
    if scenario is None:
        raise ApiError(404, "NOT_FOUND", f'scenario: no scenario "{name}"', "scenario")
    saved = scenario.as_request()
    request = dict(body)
    if not any(key in body for key in SELECTION):
        request["profile"] = saved["profile"]
    for key in ("input", "now", "format", "availability"):
        if key not in body and key in saved:
            request[key] = saved[key]
    return request


class PreviewView(ResolutionView):
    throttle_scope = "preview"
    renderer_classes = [ResolutionJSONRenderer, BrowsableAPIRenderer]

    @extend_schema(
        operation_id="profile_preview",
        summary="Resolve a profile with unsaved rule edits (writes nothing)",
        request=s.PreviewRequestSerializer,
        responses={200: s.ResolutionSerializer},
        examples=[*PREVIEW_EXAMPLES, RESOLUTION_EXAMPLE],
        tags=["resolve"],
    )
    def post(self, request, key):
        started = time.perf_counter()
        body = body_object(request, ("rules", "budget", "input", "now", "format", "availability"))
        resolution = profile_resolve(
            profile=key,
            request={
                name: body[name]
                for name in ("input", "now", "format", "availability")
                if name in body
            },
            rule_overrides=body.get("rules"),
            budget_override=body.get("budget"),
        )
        decision_log_record(
            request_data=body,
            resolution=resolution,
            source=DecisionLog.Source.PREVIEW,
            started=started,
            user=request.user,
            auth=authentication_kind(request),
        )
        return Response(resolution)


class ExpandView(ResolutionView):
    throttle_scope = "expand"

    @extend_schema(
        operation_id="expand",
        summary="Return one item that the resolution of the same request offers",
        description=(
            "The item is returned only when its ref belongs to a selected layer's candidates "
            "for this request (inline, a reference of any reason, or trimmed). Anything else "
            "answers the same 404 `REF_NOT_AVAILABLE`, whether or not the item exists."
        ),
        request=s.ExpandRequestSerializer,
        responses={200: s.ExpandedItemSerializer},
        examples=EXPAND_EXAMPLES,
        tags=["resolve"],
    )
    def post(self, request):
        body = body_object(request)
        ref = body.pop("ref", None)
        if not isinstance(ref, str) or not ref:
            raise invalid("ref", "must be a reference <layer>/<item path>")
        try:
            return Response(ref_expand(request=body, ref=ref))
        except RefNotAvailable:
            raise ref_not_available() from None


# --- consumers ----------------------------------------------------------------------------


def consumer_etag(consumer: Consumer) -> str:
    return document_etag(map_consumer_to_resolver(consumer))


def consumer_get(key: str, *, lock: bool = False) -> Consumer:
    queryset = Consumer.objects.select_for_update() if lock else Consumer.objects
    consumer = queryset.filter(key=key).first()
    if consumer is None:
        raise not_found(f'consumer "{key}"')
    return consumer


@extend_schema(tags=["consumers"])
class ConsumerListView(ApiListView):
    permission_classes = [capability_permission(READ_CONFIG, unsafe=WRITE_MATERIAL)]
    serializer_class = s.ConsumerSerializer
    queryset = Consumer.objects.order_by("position", "id")

    def represent(self, row):
        return map_consumer_to_resolver(row)

    def filter_rows(self, queryset):
        search = self.request.query_params.get("search")
        if search:
            queryset = queryset.filter(Q(key__icontains=search) | Q(name__icontains=search))
        return queryset

    @extend_schema(operation_id="consumers_list", parameters=[search_parameter("key and name")])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        operation_id="consumers_create",
        request=s.ConsumerSerializer,
        responses={201: s.ConsumerSerializer},
    )
    def post(self, request):
        body = body_object(request)
        key = canonical_string(body.get("key") or "")

        def check():
            if key and Consumer.objects.filter(key=key).exists():
                raise conflict(f'key: consumer "{key}" already exists', "key")

        def change(document):
            document["consumers"].append(body)
            return f"consumers[{len(document['consumers']) - 1}]"

        workspace_document_change(change, user=request.user, check=check)
        consumer = consumer_get(key)
        return with_etag(
            map_consumer_to_resolver(consumer),
            consumer_etag(consumer),
            201,
            reverse("api:consumer-detail", args=[key], request=request),
        )


@extend_schema(tags=["consumers"])
class ConsumerDetailView(ApiView):
    permission_classes = [capability_permission(READ_CONFIG, unsafe=WRITE_MATERIAL)]

    @extend_schema(operation_id="consumers_retrieve", responses={200: s.ConsumerSerializer})
    def get(self, request, key):
        consumer = consumer_get(key)
        return with_etag(map_consumer_to_resolver(consumer), consumer_etag(consumer))

    def _update(self, request, key, *, partial: bool):
        body = body_object(request)
        fixed_identity(body, "key", key)
        header = if_match(request)

        def check():
            check_etag(header, consumer_etag(consumer_get(key, lock=True)))

        def change(document):
            index = entry_index(document["consumers"], "key", key)
            entry = document["consumers"][index]
            document["consumers"][index] = merged(entry, body) if partial else body
            return f"consumers[{index}]"

        workspace_document_change(change, user=request.user, check=check)
        consumer = consumer_get(key)
        return with_etag(map_consumer_to_resolver(consumer), consumer_etag(consumer))

    @extend_schema(
        operation_id="consumers_update",
        request=s.ConsumerUpdateSerializer,
        responses={200: s.ConsumerSerializer},
    )
    def put(self, request, key):
        return self._update(request, key, partial=False)

    @extend_schema(
        operation_id="consumers_partial_update",
        request=s.ConsumerUpdateSerializer,
        responses={200: s.ConsumerSerializer},
    )
    def patch(self, request, key):
        return self._update(request, key, partial=True)

    @extend_schema(operation_id="consumers_destroy", responses={204: None})
    def delete(self, request, key):
        header = if_match(request)

        def check():
            consumer = consumer_get(key, lock=True)
            check_etag(header, consumer_etag(consumer))
            users = list(consumer.profiles.order_by("key").values_list("key", flat=True))
            if users:
                raise conflict(f'consumer "{key}" is used by profiles: ' + ", ".join(users))

        def change(document):
            document["consumers"].pop(entry_index(document["consumers"], "key", key))

        workspace_document_change(change, user=request.user, check=check)
        return Response(status=204)


# --- layers -------------------------------------------------------------------------------

LAYER_READ_ONLY = ("itemCount",)


def layer_document(layer: Layer) -> dict:
    document = map_layer_to_resolver(layer, [])
    document.pop("items", None)
    count = getattr(layer, "item_count", None)
    document["itemCount"] = layer.items.count() if count is None else count
    return document


def layer_get(key: str, *, lock: bool = False) -> Layer:
    queryset = Layer.objects.select_for_update() if lock else Layer.objects
    layer = queryset.filter(key=key).first()
    if layer is None:
        raise not_found(f'layer "{key}"')
    return layer


def layer_response(key: str, status: int = 200, location: str | None = None) -> Response:
    layer = Layer.objects.annotate(item_count=Count("items")).get(key=key)
    return with_etag(layer_document(layer), layer_etag(layer), status, location)


def without(body: dict, names) -> dict:
    return {key: value for key, value in body.items() if key not in names}


@extend_schema(tags=["layers"])
class LayerListView(ApiListView):
    permission_classes = [capability_permission(READ_CONFIG, unsafe=WRITE_MATERIAL)]
    serializer_class = s.LayerSerializer
    queryset = Layer.objects.annotate(item_count=Count("items")).order_by("position", "id")

    def represent(self, row):
        return layer_document(row)

    def filter_rows(self, queryset):
        search = self.request.query_params.get("search")
        if search:
            queryset = queryset.filter(
                Q(key__icontains=search)
                | Q(name__icontains=search)
                | Q(description__icontains=search)
            )
        return queryset

    @extend_schema(
        operation_id="layers_list", parameters=[search_parameter("key, name and description")]
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        operation_id="layers_create", request=s.LayerSerializer, responses={201: s.LayerSerializer}
    )
    def post(self, request):
        body = without(body_object(request), LAYER_READ_ONLY)
        key = canonical_string(body.get("key") or "")
        body.setdefault("items", [])

        def check():
            if key and Layer.objects.filter(key=key).exists():
                raise conflict(f'key: layer "{key}" already exists', "key")

        def change(document):
            document["layers"].append(body)
            return f"layers[{len(document['layers']) - 1}]"

        workspace_document_change(change, user=request.user, check=check)
        return layer_response(key, 201, reverse("api:layer-detail", args=[key], request=request))


@extend_schema(tags=["layers"])
class LayerDetailView(ApiView):
    permission_classes = [capability_permission(READ_CONFIG, unsafe=WRITE_MATERIAL)]

    @extend_schema(operation_id="layers_retrieve", responses={200: s.LayerSerializer})
    def get(self, request, key):
        layer_get(key)
        return layer_response(key)

    def _update(self, request, key, *, partial: bool):
        body = without(body_object(request), LAYER_READ_ONLY)
        if "items" in body:
            raise invalid("items", "edit items through layers/<key>/items/")
        fixed_identity(body, "key", key)
        header = if_match(request)

        def check():
            check_etag(header, layer_etag(layer_get(key, lock=True)))

        def change(document):
            index = entry_index(document["layers"], "key", key)
            entry = document["layers"][index]
            new = merged(entry, body) if partial else {**body, "items": entry.get("items", [])}
            document["layers"][index] = new
            return f"layers[{index}]"

        workspace_document_change(change, user=request.user, check=check)
        return layer_response(key)

    @extend_schema(
        operation_id="layers_update",
        request=s.LayerUpdateSerializer,
        responses={200: s.LayerSerializer},
    )
    def put(self, request, key):
        return self._update(request, key, partial=False)

    @extend_schema(
        operation_id="layers_partial_update",
        request=s.LayerUpdateSerializer,
        responses={200: s.LayerSerializer},
    )
    def patch(self, request, key):
        return self._update(request, key, partial=True)

    @extend_schema(operation_id="layers_destroy", responses={204: None})
    def delete(self, request, key):
        header = if_match(request)

        def check():
            layer = layer_get(key, lock=True)
            check_etag(header, layer_etag(layer))
            users = sorted(Rule.objects.filter(layer=layer).values_list("profile__key", flat=True))
            if users:
                raise conflict(f'layer "{key}" has rules in profiles: ' + ", ".join(users))

        def change(document):
            document["layers"].pop(entry_index(document["layers"], "key", key))

        workspace_document_change(change, user=request.user, check=check)
        return Response(status=204)


# --- items --------------------------------------------------------------------------------

ITEM_READ_ONLY = ("ref",)


def item_document(item: Item, layer_key: str) -> dict:
    document = {"ref": f"{layer_key}/{item.path}", "title": "", "body": "", "metadata": {}}
    document.update(map_item_to_resolver(item))
    document["metadata"] = json_safe(document["metadata"])
    return document


def item_get(layer: Layer, path: str, *, lock: bool = False) -> Item:
    queryset = Item.objects.select_for_update() if lock else Item.objects
    item = queryset.filter(layer=layer, path=path).first()
    if item is None:
        raise not_found(f'item "{path}" of layer "{layer.key}"')
    return item


def item_response(layer: Layer, path: str, status=200, location=None) -> Response:
    item = item_get(layer, path)
    return with_etag(item_document(item, layer.key), item_etag(item), status, location)


METADATA_PREFIX = "metadata."


@extend_schema(tags=["items"])
class ItemListView(ApiListView):
    serializer_class = s.ItemSerializer
    permission_classes = [capability_permission(READ_MATERIAL, unsafe=WRITE_MATERIAL)]

    def get_queryset(self):
        self.layer = layer_get(self.kwargs["key"])
        return Item.objects.filter(layer=self.layer).order_by("position", "id")

    def represent(self, row):
        return item_document(row, self.layer.key)

    def filter_rows(self, queryset):
        params = self.request.query_params
        query = params.get("q")
        if query:
            queryset = queryset.filter(
                Q(path__icontains=query) | Q(title__icontains=query) | Q(body__icontains=query)
            )
        for name, value in params.items():
            if not name.startswith(METADATA_PREFIX):
                continue
            field = name[len(METADATA_PREFIX) :]
            if not field or "__" in field or not field.replace("-", "_").isidentifier():
                raise invalid(name, "must be metadata.<field> with a field name")
            condition = Q(**{f"metadata__{field}": value})
            if value.lstrip("-").isdigit():
                condition |= Q(**{f"metadata__{field}": int(value)})
            queryset = queryset.filter(condition)
        return queryset

    @extend_schema(
        operation_id="items_list",
        parameters=[
            OpenApiParameter("q", str, description="Case-insensitive search in path, title, body."),
            OpenApiParameter(
                "metadata.customer_id",
                str,
                description="Exact metadata filter; any `metadata.<field>=<value>` works.",
            ),
        ],
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        operation_id="items_create", request=s.ItemSerializer, responses={201: s.ItemSerializer}
    )
    def post(self, request, key):
        body = without(body_object(request), ITEM_READ_ONLY)
        path = canonical_string(body.get("path") or "")

        def check():
            layer = layer_get(key, lock=True)
            if path and Item.objects.filter(layer=layer, path=path).exists():
                raise conflict(f'path: item "{path}" already exists in layer "{key}"', "path")

        def change(document):
            index = entry_index(document["layers"], "key", key)
            items = document["layers"][index].setdefault("items", [])
            items.append(body)
            return f"layers[{index}].items[{len(items) - 1}]"

        workspace_document_change(change, user=request.user, check=check)
        layer = layer_get(key)
        location = reverse("api:item-detail", args=[key, path], request=request)
        return item_response(layer, path, 201, location)


@extend_schema(tags=["items"])
class ItemDetailView(ApiView):
    permission_classes = [capability_permission(READ_MATERIAL, unsafe=WRITE_MATERIAL)]

    @extend_schema(operation_id="items_retrieve", responses={200: s.ItemSerializer})
    def get(self, request, key, path):
        return item_response(layer_get(key), path)

    def _update(self, request, key, path, *, partial: bool):
        body = without(body_object(request), ITEM_READ_ONLY)
        fixed_identity(body, "path", path)
        header = if_match(request)

        def check():
            check_etag(header, item_etag(item_get(layer_get(key), path, lock=True)))

        def change(document):
            index = entry_index(document["layers"], "key", key)
            items = document["layers"][index]["items"]
            position = entry_index(items, "path", path)
            items[position] = merged(items[position], body) if partial else body
            return f"layers[{index}].items[{position}]"

        workspace_document_change(change, user=request.user, check=check)
        return item_response(layer_get(key), path)

    @extend_schema(
        operation_id="items_update",
        request=s.ItemUpdateSerializer,
        responses={200: s.ItemSerializer},
    )
    def put(self, request, key, path):
        return self._update(request, key, path, partial=False)

    @extend_schema(
        operation_id="items_partial_update",
        request=s.ItemUpdateSerializer,
        responses={200: s.ItemSerializer},
    )
    def patch(self, request, key, path):
        return self._update(request, key, path, partial=True)

    @extend_schema(operation_id="items_destroy", responses={204: None})
    def delete(self, request, key, path):
        header = if_match(request)

        def check():
            check_etag(header, item_etag(item_get(layer_get(key), path, lock=True)))

        def change(document):
            index = entry_index(document["layers"], "key", key)
            items = document["layers"][index]["items"]
            items.pop(entry_index(items, "path", path))

        workspace_document_change(change, user=request.user, check=check)
        return Response(status=204)


# --- profiles and rules -------------------------------------------------------------------


def profiles_with_rules():
    return Profile.objects.select_related("consumer").prefetch_related(
        Prefetch("rules", queryset=Rule.objects.select_related("layer").order_by("position", "id"))
    )


def profile_document(profile: Profile) -> dict:
    rules = list(profile.rules.all())
    document = map_profile_to_resolver(
        profile,
        rules,
        consumer_key=profile.consumer.key,
        layer_keys={rule.layer_id: rule.layer.key for rule in rules},
    )
    document.setdefault("rules", {})
    return document


def profile_get(key: str, *, lock: bool = False) -> Profile:
    queryset = profiles_with_rules()
    if lock:
        queryset = queryset.select_for_update(of=("self",))
    profile = queryset.filter(key=key).first()
    if profile is None:
        raise not_found(f'profile "{key}"')
    return profile


def profile_response(key: str, status=200, location=None) -> Response:
    profile = profile_get(key)
    return with_etag(
        profile_document(profile),
        profile_etag(profile, list(profile.rules.all())),
        status,
        location,
    )


@extend_schema(tags=["profiles"])
class ProfileListView(ApiListView):
    permission_classes = [capability_permission(READ_CONFIG, unsafe=WRITE_RULES)]
    serializer_class = s.ProfileSerializer
    queryset = profiles_with_rules().order_by("position", "id")

    def represent(self, row):
        return profile_document(row)

    def filter_rows(self, queryset):
        params = self.request.query_params
        search = params.get("search")
        if search:
            queryset = queryset.filter(Q(key__icontains=search) | Q(name__icontains=search))
        if params.get("consumer"):
            queryset = queryset.filter(consumer__key=params["consumer"])
        if params.get("objective"):
            queryset = queryset.filter(objective=params["objective"])
        if params.get("environment"):
            queryset = queryset.filter(environment=params["environment"])
        return queryset

    @extend_schema(
        operation_id="profiles_list",
        parameters=[
            search_parameter("key and name"),
            OpenApiParameter("consumer", str, description="Only this consumer's profiles."),
            OpenApiParameter("objective", str, description="Only profiles for this objective."),
            OpenApiParameter("environment", str, description="Only this environment."),
        ],
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        operation_id="profiles_create",
        request=s.ProfileSerializer,
        responses={201: s.ProfileSerializer},
    )
    def post(self, request):
        body = body_object(request)
        key = canonical_string(body.get("key") or "")

        def check():
            if key and Profile.objects.filter(key=key).exists():
                raise conflict(f'key: profile "{key}" already exists', "key")

        def change(document):
            document["profiles"].append(body)
            return f"profiles[{len(document['profiles']) - 1}]"

        workspace_document_change(change, user=request.user, check=check)
        return profile_response(
            key, 201, reverse("api:profile-detail", args=[key], request=request)
        )


@extend_schema(tags=["profiles"])
class ProfileDetailView(ApiView):
    permission_classes = [capability_permission(READ_CONFIG, unsafe=WRITE_RULES)]

    @extend_schema(operation_id="profiles_retrieve", responses={200: s.ProfileSerializer})
    def get(self, request, key):
        return profile_response(key)

    def _update(self, request, key, *, partial: bool):
        body = body_object(request)
        fixed_identity(body, "key", key)
        header = if_match(request)
        rules = body.get("rules")
        if partial and rules is not None and not isinstance(rules, dict):
            raise invalid("rules", "must be an object keyed by layer")

        def check():
            profile = profile_get(key, lock=True)
            check_etag(header, profile_etag(profile, list(profile.rules.all())))

        def change(document):
            index = entry_index(document["profiles"], "key", key)
            entry = document["profiles"][index]
            if partial:
                new = merged(entry, without(body, ("rules",)))
                if rules is not None:
                    # PATCH rules per layer: a layer's rule is replaced; null = default rule.
                    combined = dict(entry.get("rules") or {})
                    for layer_key, rule in rules.items():
                        if rule is None:
                            combined.pop(layer_key, None)
                        else:
                            combined[layer_key] = rule
                    new["rules"] = combined
            else:
                new = body
            document["profiles"][index] = new
            return f"profiles[{index}]"

        workspace_document_change(change, user=request.user, check=check)
        return profile_response(key)

    @extend_schema(
        operation_id="profiles_update",
        request=s.ProfileUpdateSerializer,
        responses={200: s.ProfileSerializer},
    )
    def put(self, request, key):
        return self._update(request, key, partial=False)

    @extend_schema(
        operation_id="profiles_partial_update",
        request=s.ProfileUpdateSerializer,
        responses={200: s.ProfileSerializer},
        description="Top-level fields replace the saved ones; `rules` replaces the rule of "
        "each layer it names (null: back to the default rule) and keeps the others.",
    )
    def patch(self, request, key):
        return self._update(request, key, partial=True)

    @extend_schema(operation_id="profiles_destroy", responses={204: None})
    def delete(self, request, key):
        header = if_match(request)

        def check():
            profile = profile_get(key, lock=True)
            check_etag(header, profile_etag(profile, list(profile.rules.all())))

        def change(document):
            document["profiles"].pop(entry_index(document["profiles"], "key", key))

        workspace_document_change(change, user=request.user, check=check)
        return Response(status=204)


RULE_DOCUMENT_FIELDS = (*RULE_FIELDS, "currentness")


@extend_schema(tags=["profiles"])
class RuleDetailView(ApiView):
    permission_classes = [capability_permission(READ_CONFIG, unsafe=WRITE_RULES)]

    def _record(self, key: str, layer_key: str) -> Response:
        profile = profile_get(key)
        layer_get(layer_key)
        rules = list(profile.rules.all())
        document = profile_document(profile)
        rule = document["rules"].get(layer_key)
        record = {
            "profile": key,
            "layer": layer_key,
            "ruleSource": "default" if rule is None else "profile",
            "rule": rule or {},
        }
        return with_etag(record, profile_etag(profile, rules))

    @extend_schema(operation_id="rules_retrieve", responses={200: s.RuleRecordSerializer})
    def get(self, request, key, layer):
        return self._record(key, layer)

    def _save(self, request, key, layer_key, partial_rule) -> Response:
        profile_get(key)
        layer_get(layer_key)
        profile_save_rules(
            profile=key,
            rules={layer_key: partial_rule},
            user=request.user,
            if_match=if_match(request),
        )
        return self._record(key, layer_key)

    @extend_schema(
        operation_id="rules_update",
        request=s.RuleSerializer,
        responses={200: s.RuleRecordSerializer},
        description="Replace the profile's rule for this layer (fields not given: default).",
    )
    def put(self, request, key, layer):
        body = body_object(request)
        return self._save(request, key, layer, {name: None for name in RULE_DOCUMENT_FIELDS} | body)

    @extend_schema(
        operation_id="rules_partial_update",
        request=s.RuleSerializer,
        responses={200: s.RuleRecordSerializer},
        description="Change the given fields of the rule (null: back to the default).",
    )
    def patch(self, request, key, layer):
        return self._save(request, key, layer, body_object(request))

    @extend_schema(
        operation_id="rules_destroy",
        responses={204: None},
        description="The layer goes back to the default rule.",
    )
    def delete(self, request, key, layer):
        self._save(request, key, layer, None)
        return Response(status=204)


# --- scenarios ----------------------------------------------------------------------------

SCENARIO_FIELDS = (
    "name",
    "profile",
    "description",
    "input",
    "now",
    "format",
    "availability",
    "default",
)


def scenario_document(scenario: Scenario) -> dict:
    return {
        "name": scenario.name,
        "profile": scenario.profile.key,
        "description": scenario.description,
        "input": json_safe(scenario.input or {}),
        "now": scenario.now,
        "format": scenario.format,
        "availability": dict(scenario.availability or {}),
        "default": scenario.is_default,
    }


def scenario_get(name: str) -> Scenario:
    scenario = Scenario.objects.select_related("profile").filter(name=name).first()
    if scenario is None:
        raise not_found(f'scenario "{name}"')
    return scenario


def scenario_save(entry: dict) -> None:
    """Save one scenario through ``scenarios_upsert``; its errors name the body's field."""
    try:
        scenarios_upsert(scenarios=[entry])
    except WorkspaceValidationError as exc:
        issue = exc.issues[0]
        path = issue.path.removeprefix("scenarios[0]").lstrip(".")
        raise invalid(path, issue.message) from exc


def scenario_response(name: str, status=200, location=None) -> Response:
    scenario = scenario_get(name)
    document = scenario_document(scenario)
    return with_etag(document, document_etag(document), status, location)


@extend_schema(tags=["scenarios"])
class ScenarioListView(ApiListView):
    permission_classes = [capability_permission(READ_CONFIG, unsafe=WRITE_RULES)]
    serializer_class = s.ScenarioSerializer
    queryset = Scenario.objects.select_related("profile").order_by(
        "profile__position", "-is_default", "name"
    )

    def represent(self, row):
        return scenario_document(row)

    def filter_rows(self, queryset):
        params = self.request.query_params
        if params.get("profile"):
            queryset = queryset.filter(profile__key=params["profile"])
        if params.get("search"):
            queryset = queryset.filter(name__icontains=params["search"])
        return queryset

    @extend_schema(
        operation_id="scenarios_list",
        parameters=[
            search_parameter("name"),
            OpenApiParameter("profile", str, description="Only this profile's scenarios."),
        ],
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        operation_id="scenarios_create",
        request=s.ScenarioSerializer,
        responses={201: s.ScenarioSerializer},
    )
    def post(self, request):
        body = body_object(request, SCENARIO_FIELDS)
        name = body.get("name")
        if not isinstance(name, str) or not name.strip():
            raise invalid("name", "is required")
        if Scenario.objects.filter(name=name).exists():
            raise conflict(f'name: scenario "{name}" already exists', "name")
        scenario_save(body)
        location = reverse("api:scenario-detail", args=[name], request=request)
        return scenario_response(name, 201, location)


@extend_schema(tags=["scenarios"])
class ScenarioDetailView(ApiView):
    permission_classes = [capability_permission(READ_CONFIG, unsafe=WRITE_RULES)]

    @extend_schema(operation_id="scenarios_retrieve", responses={200: s.ScenarioSerializer})
    def get(self, request, name):
        return scenario_response(name)

    def _update(self, request, name, *, partial: bool):
        body = body_object(request, SCENARIO_FIELDS)
        fixed_identity(body, "name", name)
        current = scenario_document(scenario_get(name))
        check_etag(if_match(request), document_etag(current))
        entry = {**current, **body} if partial else body
        scenario_save({key: value for key, value in entry.items() if value is not None})
        return scenario_response(name)

    @extend_schema(
        operation_id="scenarios_update",
        request=s.ScenarioUpdateSerializer,
        responses={200: s.ScenarioSerializer},
    )
    def put(self, request, name):
        return self._update(request, name, partial=False)

    @extend_schema(
        operation_id="scenarios_partial_update",
        request=s.ScenarioUpdateSerializer,
        responses={200: s.ScenarioSerializer},
    )
    def patch(self, request, name):
        return self._update(request, name, partial=True)

    @extend_schema(operation_id="scenarios_destroy", responses={204: None})
    def delete(self, request, name):
        scenario = scenario_get(name)
        check_etag(if_match(request), document_etag(scenario_document(scenario)))
        scenario.delete()
        return Response(status=204)


# --- workspace ----------------------------------------------------------------------------


class WorkspaceView(ApiView):
    # An export shows every customer's material: it is READ_MATERIAL as well.
    permission_classes = [capability_permission(READ_MATERIAL, IMPORT_EXPORT, unsafe=IMPORT_EXPORT)]
    renderer_classes = [JSONRenderer, YAMLRenderer, BrowsableAPIRenderer]
    parser_classes = WORKSPACE_PARSERS

    @extend_schema(
        operation_id="workspace_export",
        summary="Export the workspace document (SPEC §2); YAML with ?format=yaml",
        parameters=[
            OpenApiParameter("format", str, enum=["json", "yaml"], description="Default: JSON."),
            OpenApiParameter(
                "layer", str, description="Export only this layer (imports with ?layer=)."
            ),
        ],
        responses={
            (200, "application/json"): s.WorkspaceSerializer,
            (200, "application/yaml"): s.WorkspaceSerializer,
        },
        tags=["workspace"],
    )
    def get(self, request):
        renderer_format = request.accepted_renderer.format
        if renderer_format not in ("json", "yaml"):
            return Response(workspace_export())  # the browsable API
        export_format = "yaml" if renderer_format == "yaml" else "json-compact"
        layer = request.query_params.get("layer")
        if layer is not None and not Layer.objects.filter(key=layer).exists():
            raise not_found(f'layer "{layer}"', "layer")
        return StreamingHttpResponse(
            workspace_export_chunks(format=export_format, layer=layer),
            content_type=EXPORT_CONTENT_TYPES[export_format],
        )

    @extend_schema(
        operation_id="workspace_import",
        summary="Import a workspace document (JSON or YAML) as a background job",
        description=(
            "Answers 202 with the import job (its `url` is also the `Location`); GET the job "
            "until its status is `succeeded` (with the summary) or `failed` (with every error "
            "and its path in the file). All or nothing: a failed import writes nothing."
        ),
        parameters=[
            OpenApiParameter(
                "mode",
                str,
                enum=list(IMPORT_MODES),
                description="merge (default) upserts; replace also deletes what is not given.",
            ),
            OpenApiParameter(
                "layer",
                str,
                description=(
                    "Import only this layer of the file (a workspace document, or one layer's "
                    "document); with replace, its items not in the file are deleted."
                ),
            ),
        ],
        request={
            "application/json": s.WorkspaceSerializer,
            "application/yaml": s.WorkspaceSerializer,
        },
        responses={202: ImportJobSerializer},
        tags=["workspace"],
    )
    def post(self, request):
        mode = request.query_params.get("mode", "merge")
        if mode not in IMPORT_MODES:
            raise invalid("mode", "must be one of " + ", ".join(IMPORT_MODES))
        data = request.data
        if not isinstance(data, WorkspaceText):
            raise invalid("", "send the workspace document as JSON or YAML")
        job = import_job_start(
            text=str(data), mode=mode, layer=request.query_params.get("layer"), user=request.user
        )
        return import_job_response(request, job, status=202)


# --- token --------------------------------------------------------------------------------


class TokenView(ObtainAuthToken):
    """Exchange a username and password for the user's API token."""

    schema = ApiAutoSchema()

    @extend_schema(
        operation_id="auth_token",
        summary="Get your API token (send it as `Authorization: Token <key>`)",
        request=s.TokenRequestSerializer,
        responses={200: s.TokenSerializer},
        tags=["auth"],
        auth=[],
    )
    def post(self, request, *args, **kwargs):
        return super().post(request, *args, **kwargs)

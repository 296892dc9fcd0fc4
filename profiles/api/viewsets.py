"""CRUD of the workspace's entries and of scenarios: DRF viewsets on the write services.

Each viewset lists (paginated, filtered by django-filter FilterSets and SearchFilter), reads
one object with its ETag, and writes through ``profiles.services`` — the same services the
studio, the admin and the import call: the serializer checks the body's shape, the service
locks, compares ``If-Match``, validates the entry with the engine and writes it.
"""

from django.core.exceptions import ObjectDoesNotExist
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.filters import SearchFilter
from rest_framework.response import Response
from rest_framework.reverse import reverse

from profiles import selectors, services
from profiles.api import serializers as s
from profiles.api.exceptions import ApiError
from profiles.api.filters import (
    ItemSearchFilter,
    MetadataFilter,
    ProfileFilterSet,
    ScenarioFilterSet,
)
from profiles.api.schema import ApiAutoSchema
from profiles.concurrency import (
    consumer_etag,
    item_etag,
    layer_etag,
    profile_etag,
    scenario_etag,
)
from profiles.models import Layer, Profile
from profiles.permissions import (
    READ_CONFIG,
    READ_MATERIAL,
    WRITE_MATERIAL,
    WRITE_RULES,
    capability_permission,
)

# Object URLs end without a slash and keys never contain one.
KEY_REGEX = "[^/]+"


def not_found(what: str) -> ApiError:
    return ApiError(404, "NOT_FOUND", f"{what} not found")


class EntryViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """List, read, create, replace, change and delete one kind of entry, on its services.

    A subclass names its lookups and services; the shape of every answer is here: an object
    with its ``ETag``, 201 with ``Location``, 204 for a delete, the error shape otherwise.
    """

    schema = ApiAutoSchema()
    lookup_value_regex = KEY_REGEX
    update_serializer_class: type[s.EntrySerializer]
    #: what the 404 calls an object ("consumer")
    kind = ""

    def get_serializer_class(self):
        if self.action in ("update", "partial_update"):
            return self.update_serializer_class
        return self.serializer_class

    def lookup(self) -> str:
        return self.kwargs[self.lookup_field]

    def fetch(self, lookup: str):
        """Return the stored object the URL names; raise its model's DoesNotExist."""
        raise NotImplementedError

    def get_object(self):
        try:
            return self.fetch(self.lookup())
        except ObjectDoesNotExist as exc:
            raise not_found(f'{self.kind} "{self.lookup()}"') from exc

    def etag(self, row) -> str:
        raise NotImplementedError

    def body(self, *, identity: str | None = None) -> dict:
        """Return the request body, checked by the serializer (an object, identity kept)."""
        serializer = self.get_serializer(
            data=self.request.data, context={**self.get_serializer_context(), "identity": identity}
        )
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def answer(self, row, status_code: int = status.HTTP_200_OK) -> Response:
        headers = {"ETag": self.etag(row)}
        if status_code == status.HTTP_201_CREATED:
            headers["Location"] = self.location(row)
        return Response(self.get_serializer(row).data, status=status_code, headers=headers)

    def location(self, row) -> str:
        raise NotImplementedError

    @property
    def if_match(self) -> str | None:
        return self.request.headers.get("If-Match")

    # -- the actions ------------------------------------------------------------------------

    def retrieve(self, request, *args, **kwargs):
        return self.answer(self.get_object())

    def create(self, request, *args, **kwargs):
        return self.answer(self.service_create(self.body()), status.HTTP_201_CREATED)

    def update(self, request, *args, partial: bool = False, **kwargs):
        self.get_object()  # 404 before the body is looked at
        changes = self.body(identity=self.lookup())
        return self.answer(self.service_update(changes, replace=not partial))

    def destroy(self, request, *args, **kwargs):
        self.get_object()
        self.service_delete()
        return Response(status=status.HTTP_204_NO_CONTENT)

    def service_create(self, document: dict):
        raise NotImplementedError

    def service_update(self, changes: dict, *, replace: bool):
        raise NotImplementedError

    def service_delete(self) -> None:
        raise NotImplementedError


def entry_schema(tag: str, name: str, *, create: type, update: type, read: type | None = None):
    """Return the schema decorator of an entry viewset: tag, operation ids and bodies."""
    read = read or create
    return extend_schema_view(
        list=extend_schema(operation_id=f"{name}_list", tags=[tag]),
        retrieve=extend_schema(operation_id=f"{name}_retrieve", responses={200: read}, tags=[tag]),
        create=extend_schema(
            operation_id=f"{name}_create", request=create, responses={201: read}, tags=[tag]
        ),
        update=extend_schema(
            operation_id=f"{name}_update", request=update, responses={200: read}, tags=[tag]
        ),
        partial_update=extend_schema(
            operation_id=f"{name}_partial_update",
            request=update,
            responses={200: read},
            tags=[tag],
            description="The given fields replace the saved ones (null: back to the default).",
        ),
        destroy=extend_schema(operation_id=f"{name}_destroy", responses={204: None}, tags=[tag]),
    )


# --- consumers ----------------------------------------------------------------------------


@entry_schema(
    "consumers", "consumers", create=s.ConsumerSerializer, update=s.ConsumerUpdateSerializer
)
class ConsumerViewSet(EntryViewSet):
    permission_classes = [capability_permission(READ_CONFIG, unsafe=WRITE_MATERIAL)]
    serializer_class = s.ConsumerSerializer
    update_serializer_class = s.ConsumerUpdateSerializer
    lookup_field = "key"
    kind = "consumer"
    filter_backends = [SearchFilter]
    search_fields = ["key", "name"]

    def get_queryset(self):
        return selectors.consumer_list()

    def fetch(self, key):
        return selectors.consumer_get(key=key)

    def etag(self, consumer):
        return consumer_etag(consumer)

    def location(self, consumer):
        return reverse("api:consumer-detail", args=[consumer.key], request=self.request)

    def service_create(self, document):
        return services.consumer_create(document=document, user=self.request.user)

    def service_update(self, changes, *, replace):
        return services.consumer_update(
            key=self.lookup(),
            changes=changes,
            replace=replace,
            user=self.request.user,
            if_match=self.if_match,
        )

    def service_delete(self):
        services.consumer_delete(key=self.lookup(), user=self.request.user, if_match=self.if_match)


# --- layers -------------------------------------------------------------------------------


@entry_schema("layers", "layers", create=s.LayerSerializer, update=s.LayerUpdateSerializer)
class LayerViewSet(EntryViewSet):
    permission_classes = [capability_permission(READ_CONFIG, unsafe=WRITE_MATERIAL)]
    serializer_class = s.LayerSerializer
    update_serializer_class = s.LayerUpdateSerializer
    lookup_field = "key"
    kind = "layer"
    filter_backends = [SearchFilter]
    search_fields = ["key", "name", "description"]

    def get_queryset(self):
        return selectors.layer_list()

    def fetch(self, key):
        return selectors.layer_get(key=key)

    def etag(self, layer):
        return layer_etag(layer)

    def location(self, layer):
        return reverse("api:layer-detail", args=[layer.key], request=self.request)

    def service_create(self, document):
        return services.layer_create(document=document, user=self.request.user)

    def service_update(self, changes, *, replace):
        return services.layer_update(
            key=self.lookup(),
            changes=changes,
            replace=replace,
            user=self.request.user,
            if_match=self.if_match,
        )

    def service_delete(self):
        services.layer_delete(key=self.lookup(), user=self.request.user, if_match=self.if_match)


# --- items --------------------------------------------------------------------------------


@entry_schema("items", "items", create=s.ItemSerializer, update=s.ItemUpdateSerializer)
class ItemViewSet(EntryViewSet):
    """The items of the layer ``key``; an item's URL ends with its path (slashes and all)."""

    permission_classes = [capability_permission(READ_MATERIAL, unsafe=WRITE_MATERIAL)]
    serializer_class = s.ItemSerializer
    update_serializer_class = s.ItemUpdateSerializer
    lookup_field = "path"
    lookup_value_regex = ".+"
    kind = "item"
    filter_backends = [ItemSearchFilter, MetadataFilter]
    search_fields = ["path", "title", "body"]

    def layer(self) -> Layer:
        if not hasattr(self, "_layer"):
            try:
                self._layer = selectors.layer_get(key=self.kwargs["key"])
            except Layer.DoesNotExist as exc:
                raise not_found(f'layer "{self.kwargs["key"]}"') from exc
        return self._layer

    def get_queryset(self):
        return selectors.item_list(layer=self.layer())

    def paginate_queryset(self, queryset):
        page = super().paginate_queryset(queryset)
        layer = self.layer()
        for item in page if page is not None else []:
            item.layer = layer
        return page

    def fetch(self, path):
        return selectors.item_get(layer=self.layer(), path=path)

    def get_object(self):
        self.layer()
        return super().get_object()

    def etag(self, item):
        return item_etag(item)

    def location(self, item):
        return reverse("api:item-detail", args=[item.layer.key, item.path], request=self.request)

    def service_create(self, document):
        return services.item_create(
            layer=self.layer().key, document=document, user=self.request.user
        )

    def service_update(self, changes, *, replace):
        return services.item_update(
            layer=self.layer().key,
            path=self.lookup(),
            changes=changes,
            replace=replace,
            user=self.request.user,
            if_match=self.if_match,
        )

    def service_delete(self):
        services.item_delete(
            layer=self.layer().key,
            path=self.lookup(),
            user=self.request.user,
            if_match=self.if_match,
        )


# --- profiles and rules -------------------------------------------------------------------


@entry_schema("profiles", "profiles", create=s.ProfileSerializer, update=s.ProfileUpdateSerializer)
class ProfileViewSet(EntryViewSet):
    permission_classes = [capability_permission(READ_CONFIG, unsafe=WRITE_RULES)]
    serializer_class = s.ProfileSerializer
    update_serializer_class = s.ProfileUpdateSerializer
    lookup_field = "key"
    kind = "profile"
    filter_backends = [DjangoFilterBackend, SearchFilter]
    filterset_class = ProfileFilterSet
    search_fields = ["key", "name"]

    def get_queryset(self):
        return selectors.profile_list()

    def fetch(self, key):
        return selectors.profile_with_rules_get(key=key)

    def etag(self, profile):
        return profile_etag(profile, profile.workspace_rules)

    def location(self, profile):
        return reverse("api:profile-detail", args=[profile.key], request=self.request)

    def service_create(self, document):
        return services.profile_create(document=document, user=self.request.user)

    def service_update(self, changes, *, replace):
        return services.profile_update(
            key=self.lookup(),
            changes=changes,
            replace=replace,
            user=self.request.user,
            if_match=self.if_match,
        )

    def service_delete(self):
        services.profile_delete(key=self.lookup(), user=self.request.user, if_match=self.if_match)


@extend_schema_view(
    retrieve=extend_schema(
        operation_id="rules_retrieve", responses={200: s.RuleRecordSerializer}, tags=["profiles"]
    ),
    update=extend_schema(
        operation_id="rules_update",
        request=s.RuleSerializer,
        responses={200: s.RuleRecordSerializer},
        tags=["profiles"],
        description="Replace the profile's rule for this layer (fields not given: default).",
    ),
    partial_update=extend_schema(
        operation_id="rules_partial_update",
        request=s.RuleSerializer,
        responses={200: s.RuleRecordSerializer},
        tags=["profiles"],
        description="Change the given fields of the rule (null: back to the default).",
    ),
    destroy=extend_schema(
        operation_id="rules_destroy",
        responses={204: None},
        tags=["profiles"],
        description="The layer goes back to the default rule.",
    ),
)
class RuleViewSet(
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """The rule of profile ``key`` for one layer. A rule write is a write of the profile:
    its ETag is the profile's, and If-Match compares it."""

    schema = ApiAutoSchema()
    permission_classes = [capability_permission(READ_CONFIG, unsafe=WRITE_RULES)]
    serializer_class = s.RuleSerializer
    lookup_field = "layer"
    lookup_value_regex = KEY_REGEX

    def profile(self) -> Profile:
        key, layer = self.kwargs["key"], self.kwargs["layer"]
        try:
            profile = selectors.profile_with_rules_get(key=key)
        except Profile.DoesNotExist as exc:
            raise not_found(f'profile "{key}"') from exc
        if not Layer.objects.filter(key=layer).exists():
            raise not_found(f'layer "{layer}"')
        return profile

    def answer(self, profile: Profile) -> Response:
        layer = self.kwargs["layer"]
        rule = s.ProfileSerializer(profile).data["rules"].get(layer)
        record = {
            "profile": profile.key,
            "layer": layer,
            "ruleSource": "default" if rule is None else "profile",
            "rule": rule or {},
        }
        return Response(record, headers={"ETag": profile_etag(profile, profile.workspace_rules)})

    def retrieve(self, request, *args, **kwargs):
        return self.answer(self.profile())

    def update(self, request, *args, partial: bool = False, **kwargs):
        self.profile()
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        profile = services.rule_update(
            profile=self.kwargs["key"],
            layer=self.kwargs["layer"],
            changes=serializer.validated_data,
            replace=not partial,
            user=request.user,
            if_match=request.headers.get("If-Match"),
        )
        return self.answer(profile)

    def destroy(self, request, *args, **kwargs):
        self.profile()
        services.rule_delete(
            profile=self.kwargs["key"],
            layer=self.kwargs["layer"],
            user=request.user,
            if_match=request.headers.get("If-Match"),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- scenarios ----------------------------------------------------------------------------


@entry_schema(
    "scenarios", "scenarios", create=s.ScenarioSerializer, update=s.ScenarioUpdateSerializer
)
class ScenarioViewSet(EntryViewSet):
    """Saved requests. Names are unique across profiles; a scenario has an ETag like the
    workspace's entries, and a write with a stale ``If-Match`` is refused with 412."""

    permission_classes = [capability_permission(READ_CONFIG, unsafe=WRITE_RULES)]
    serializer_class = s.ScenarioSerializer
    update_serializer_class = s.ScenarioUpdateSerializer
    lookup_field = "name"
    lookup_value_regex = ".+"
    kind = "scenario"
    filter_backends = [DjangoFilterBackend, SearchFilter]
    filterset_class = ScenarioFilterSet
    search_fields = ["name"]

    def get_queryset(self):
        return selectors.scenario_list_all()

    def fetch(self, name):
        return selectors.scenario_get(name=name)

    def etag(self, scenario):
        return scenario_etag(scenario)

    def location(self, scenario):
        return reverse("api:scenario-detail", args=[scenario.name], request=self.request)

    def service_create(self, document):
        return services.scenario_create(document=document, user=self.request.user)

    def service_update(self, changes, *, replace):
        return services.scenario_update(
            name=self.lookup(),
            changes=changes,
            replace=replace,
            user=self.request.user,
            if_match=self.if_match,
        )

    def service_delete(self):
        services.scenario_delete(name=self.lookup(), user=self.request.user, if_match=self.if_match)

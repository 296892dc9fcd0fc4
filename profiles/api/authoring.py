"""Profiles, their rules and saved scenarios over the API: entry viewsets on the authoring
services, and the rule of one profile for one layer (a write of the profile, its ETag)."""

from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.filters import SearchFilter
from rest_framework.response import Response

from profiles.api.entries import KEY_REGEX, EntryViewSet, entry_schema
from profiles.api.exceptions import not_found
from profiles.api.filters import ProfileFilterSet, ScenarioFilterSet
from profiles.api.schema import ApiAutoSchema
from profiles.api.serializers import authoring as s
from profiles.authoring.profiles import (
    profile_create,
    profile_delete,
    profile_update,
    rule_delete,
    rule_update,
)
from profiles.authoring.scenarios import scenario_create, scenario_delete, scenario_update
from profiles.models import Profile
from profiles.workspace import selectors
from profiles.workspace.concurrency import profile_etag, scenario_etag
from profiles.workspace.origin import API as API_ORIGIN
from profiles.workspace.permissions import READ_CONFIG, WRITE_RULES, capability_permission


@entry_schema("profiles", "profiles", create=s.ProfileSerializer, update=s.ProfileUpdateSerializer)
class ProfileViewSet(EntryViewSet):
    permission_classes = [capability_permission(READ_CONFIG, unsafe=WRITE_RULES)]
    serializer_class = s.ProfileSerializer
    update_serializer_class = s.ProfileUpdateSerializer
    lookup_field = "key"
    kind = "profile"
    reads = (selectors.profile_list, selectors.profile_with_rules_get, None)
    writes = (profile_create, profile_update, profile_delete)
    filter_backends = [DjangoFilterBackend, SearchFilter]
    filterset_class = ProfileFilterSet
    search_fields = ["key", "name"]

    def etag(self, profile):
        return profile_etag(profile, profile.workspace_rules)


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
        if not selectors.layer_exists(key=layer):
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
        profile = rule_update(
            profile=self.kwargs["key"],
            layer=self.kwargs["layer"],
            changes=serializer.validated_data,
            replace=not partial,
            user=request.user,
            origin=API_ORIGIN,
            if_match=request.headers.get("If-Match"),
        )
        return self.answer(profile)

    def destroy(self, request, *args, **kwargs):
        self.profile()
        rule_delete(
            profile=self.kwargs["key"],
            layer=self.kwargs["layer"],
            user=request.user,
            origin=API_ORIGIN,
            if_match=request.headers.get("If-Match"),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


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
    reads = (selectors.scenario_list_all, selectors.scenario_get, scenario_etag)
    writes = (scenario_create, scenario_update, scenario_delete)
    filter_backends = [DjangoFilterBackend, SearchFilter]
    filterset_class = ScenarioFilterSet
    search_fields = ["name"]

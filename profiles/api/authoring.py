"""Profiles, their rules and saved scenarios over the API: entry viewsets on the authoring
services, and the rule of one profile for one layer (a write of the profile, its ETag)."""

from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import mixins, status
from rest_framework.filters import SearchFilter
from rest_framework.response import Response

from profiles.api.base import ApiViewSet
from profiles.api.entries import KEY_REGEX, EntryViewSet, entry_operations, entry_schema
from profiles.api.exceptions import not_found, or_404
from profiles.api.filters import ProfileFilterSet, ScenarioFilterSet
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
from profiles.workspace.permissions import READ_CONFIG, WRITE_RULES, capability_permission

ReadConfigWriteRules = capability_permission(READ_CONFIG, unsafe=WRITE_RULES)


@entry_schema("profiles", "profile", create=s.ProfileSerializer, update=s.ProfileUpdateSerializer)
class ProfileViewSet(EntryViewSet):
    permission_classes = [ReadConfigWriteRules]
    reads = (selectors.profile_list, selectors.profile_with_rules_get, None)
    writes = (profile_create, profile_update, profile_delete)
    filter_backends = [DjangoFilterBackend, SearchFilter]
    filterset_class = ProfileFilterSet
    search_fields = ["key", "name"]

    def etag(self, profile):
        return profile_etag(profile, profile.workspace_rules)


@entry_operations(
    "profiles",
    name="rules",
    read=s.RuleRecordSerializer,
    update=s.RuleSerializer,
    actions=("retrieve", "update", "partial_update", "destroy"),
    descriptions={
        "update": "Replace the profile's rule for this layer (fields not given: default).",
        "partial_update": "Change the given fields of the rule (null: back to the default).",
        "destroy": "The layer goes back to the default rule.",
    },
)
class RuleViewSet(
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    ApiViewSet,
):
    """The rule of profile ``key`` for one layer. A rule write is a write of the profile:
    its ETag is the profile's, and If-Match compares it."""

    permission_classes = [ReadConfigWriteRules]
    serializer_class = s.RuleSerializer
    lookup_field = "layer"
    lookup_value_regex = KEY_REGEX

    def profile(self) -> Profile:
        key, layer = self.kwargs["key"], self.kwargs["layer"]
        profile = or_404(f'profile "{key}"', selectors.profile_with_rules_get, key=key)
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
            **self.guarded(),
        )
        return self.answer(profile)

    def destroy(self, request, *args, **kwargs):
        self.profile()
        rule_delete(profile=self.kwargs["key"], layer=self.kwargs["layer"], **self.guarded())
        return Response(status=status.HTTP_204_NO_CONTENT)


@entry_schema(
    "scenarios", "scenario", create=s.ScenarioSerializer, update=s.ScenarioUpdateSerializer
)
class ScenarioViewSet(EntryViewSet):
    """Saved requests. Names are unique across profiles; a scenario has an ETag like the
    workspace's entries, and a write with a stale ``If-Match`` is refused with 412."""

    permission_classes = [ReadConfigWriteRules]
    lookup_field = "name"
    lookup_value_regex = ".+"
    reads = (selectors.scenario_list_all, selectors.scenario_get, scenario_etag)
    replica_reads = False  # a scenario's write moves no workspace counter: the primary reads
    writes = (scenario_create, scenario_update, scenario_delete)
    filter_backends = [DjangoFilterBackend, SearchFilter]
    filterset_class = ScenarioFilterSet
    search_fields = ["name"]

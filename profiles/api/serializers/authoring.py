"""Serializers of profiles, rules and scenarios."""

from rest_framework import serializers

from profiles.api.serializers.entries import (
    EntrySerializer,
    choice_field,
    key_field,
    strings_field,
    text_field,
    update_serializer,
)
from profiles.workspace.mappers import map_profile_to_resolver, map_scenario_to_document
from resolver.limits import MAX_NAME_CHARS
from resolver.model import AVAILABILITIES, FORMATS, MODES, ON_POLICIES, ORDERS, PARTICIPATIONS


class CurrentnessSerializer(serializers.Serializer):
    maxAgeDays = serializers.IntegerField(min_value=0)
    field = serializers.CharField(required=False, allow_null=True)
    onStale = choice_field(ON_POLICIES)
    onUnknown = choice_field(ON_POLICIES)


class RuleSerializer(EntrySerializer):
    """A profile's rule for one layer: the fields it gives (absent: the default rule's)."""

    identity = "layer"

    participation = choice_field(PARTICIPATIONS)
    mode = choice_field(MODES)
    required = serializers.BooleanField(required=False, allow_null=True)
    priority = serializers.FloatField(required=False, allow_null=True)
    maxItems = serializers.IntegerField(min_value=0, required=False, allow_null=True)
    maxTokens = serializers.IntegerField(min_value=1, required=False, allow_null=True)
    order = choice_field(ORDERS)
    facets = strings_field(required=False, allow_null=True)
    currentness = CurrentnessSerializer(required=False, allow_null=True)


class RuleRecordSerializer(serializers.Serializer):
    profile = serializers.CharField()
    layer = serializers.CharField()
    ruleSource = serializers.ChoiceField(["profile", "default"])
    rule = RuleSerializer(help_text="The fields the profile gives ({} for the default rule).")


class ProfileSerializer(EntrySerializer):
    key = key_field()
    name = text_field(MAX_NAME_CHARS)
    description = text_field(MAX_NAME_CHARS)
    consumer = key_field()
    objective = key_field()
    environment = key_field(required=False, allow_null=True)
    budget = serializers.IntegerField(min_value=1)
    rules = serializers.DictField(
        child=RuleSerializer(allow_null=True),
        required=False,
        allow_null=True,
        help_text="keyed by layer; in a PATCH, a layer set to null goes back to the default rule",
    )

    def represent(self, profile):
        rules = profile.workspace_rules
        document = map_profile_to_resolver(
            profile,
            rules,
            consumer_key=profile.consumer.key,
            layer_keys={rule.layer_id: rule.layer.key for rule in rules},
        )
        document.setdefault("rules", {})
        return document


ProfileUpdateSerializer = update_serializer(
    ProfileSerializer,
    consumer=key_field(required=False),
    objective=key_field(required=False),
    budget=serializers.IntegerField(min_value=1, required=False),
)


class ScenarioSerializer(EntrySerializer):
    """A saved request of one profile, named uniquely across the workspace."""

    identity = "name"

    name = serializers.CharField(max_length=200)
    profile = key_field()
    description = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    input = serializers.DictField(required=False, allow_null=True)
    now = serializers.CharField(required=False, allow_null=True, max_length=64)
    format = choice_field(FORMATS)
    availability = serializers.DictField(
        child=serializers.ChoiceField(list(AVAILABILITIES)), required=False, allow_null=True
    )
    default = serializers.BooleanField(required=False)

    def represent(self, scenario):
        return map_scenario_to_document(scenario)


ScenarioUpdateSerializer = update_serializer(ScenarioSerializer, profile=key_field(required=False))

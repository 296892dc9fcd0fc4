"""Shapes of the API's bodies, for the OpenAPI schema and the browsable API.

Writes are validated by the engine's own validator on the whole workspace (the same as an
import), so these serializers describe the documents; they do not re-implement the rules.
Field names are those of the SPEC §2 workspace document and the SPEC §7 resolution.
"""

from rest_framework import serializers

KEY_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
FORMATS = ["markdown", "xml"]
AVAILABILITIES = ["auto", "unavailable", "unknown"]


def key_field(**kwargs) -> serializers.RegexField:
    return serializers.RegexField(KEY_PATTERN, max_length=64, **kwargs)


# --- errors -------------------------------------------------------------------------------


class IssueSerializer(serializers.Serializer):
    path = serializers.CharField(allow_blank=True)
    message = serializers.CharField()


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(
        help_text="A stable code, e.g. INVALID_REQUEST, REF_NOT_AVAILABLE."
    )
    message = serializers.CharField(help_text="What is wrong, for a person.")
    path = serializers.CharField(
        allow_blank=True, help_text='The offending field, e.g. "input.message" or "ref".'
    )
    field = serializers.CharField(
        required=False, help_text="The path relative to the request body, when it differs."
    )
    issues = IssueSerializer(
        many=True, required=False, help_text="Every problem of an invalid workspace write."
    )


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


# --- workspace documents (SPEC §2) --------------------------------------------------------


class RenderSerializer(serializers.Serializer):
    format = serializers.ChoiceField(FORMATS, required=False, allow_null=True)
    includeCurrentness = serializers.BooleanField(required=False, allow_null=True)


class ConsumerSerializer(serializers.Serializer):
    key = key_field()
    name = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    render = RenderSerializer(required=False, allow_null=True)


class ConsumerUpdateSerializer(ConsumerSerializer):
    key = key_field(required=False, help_text="Cannot change; when given it must be the same.")


class AppliesToSerializer(serializers.Serializer):
    objectives = serializers.ListField(child=serializers.CharField(), required=False)
    consumers = serializers.ListField(child=serializers.CharField(), required=False)


class LayerSerializer(serializers.Serializer):
    key = key_field()
    name = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    description = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    availability = serializers.ChoiceField(AVAILABILITIES, required=False, allow_null=True)
    appliesTo = AppliesToSerializer(required=False, allow_null=True)
    requiresInput = serializers.ListField(
        child=serializers.CharField(), required=False, allow_null=True
    )
    itemFilter = serializers.DictField(
        child=serializers.CharField(),
        required=False,
        allow_null=True,
        help_text="item metadata field -> input key",
    )
    itemCount = serializers.IntegerField(read_only=True, required=False)


class LayerUpdateSerializer(LayerSerializer):
    key = key_field(required=False, help_text="Cannot change; when given it must be the same.")


class ItemSerializer(serializers.Serializer):
    ref = serializers.CharField(read_only=True, required=False, help_text="<layer>/<path>")
    path = serializers.CharField(max_length=255)
    title = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    body = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    metadata = serializers.DictField(required=False, allow_null=True)


class ItemUpdateSerializer(ItemSerializer):
    path = serializers.CharField(
        max_length=255, required=False, help_text="Cannot change; when given it must be the same."
    )


class CurrentnessSerializer(serializers.Serializer):
    maxAgeDays = serializers.IntegerField(min_value=0)
    field = serializers.CharField(required=False, allow_null=True)
    onStale = serializers.ChoiceField(["exclude", "warn"], required=False, allow_null=True)
    onUnknown = serializers.ChoiceField(["exclude", "warn"], required=False, allow_null=True)


class RuleSerializer(serializers.Serializer):
    participation = serializers.ChoiceField(
        ["auto", "include", "exclude"], required=False, allow_null=True
    )
    mode = serializers.ChoiceField(
        ["inline", "retrieve", "on-demand"], required=False, allow_null=True
    )
    required = serializers.BooleanField(required=False, allow_null=True)
    priority = serializers.FloatField(required=False, allow_null=True)
    maxItems = serializers.IntegerField(min_value=0, required=False, allow_null=True)
    maxTokens = serializers.IntegerField(min_value=1, required=False, allow_null=True)
    order = serializers.ChoiceField(
        ["relevance", "recency", "path"], required=False, allow_null=True
    )
    facets = serializers.ListField(child=serializers.CharField(), required=False, allow_null=True)
    currentness = CurrentnessSerializer(required=False, allow_null=True)


class RuleRecordSerializer(serializers.Serializer):
    profile = serializers.CharField()
    layer = serializers.CharField()
    ruleSource = serializers.ChoiceField(["profile", "default"])
    rule = RuleSerializer(help_text="The fields the profile gives ({} for the default rule).")


class ProfileSerializer(serializers.Serializer):
    key = key_field()
    name = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    description = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    consumer = serializers.CharField()
    objective = serializers.CharField()
    environment = serializers.CharField(required=False, allow_null=True)
    budget = serializers.IntegerField(min_value=1)
    rules = serializers.DictField(
        child=RuleSerializer(), required=False, allow_null=True, help_text="keyed by layer"
    )


class ProfileUpdateSerializer(ProfileSerializer):
    key = key_field(required=False, help_text="Cannot change; when given it must be the same.")
    consumer = serializers.CharField(required=False)
    objective = serializers.CharField(required=False)
    budget = serializers.IntegerField(min_value=1, required=False)


class ScenarioSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    profile = serializers.CharField()
    description = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    input = serializers.DictField(required=False, allow_null=True)
    now = serializers.CharField(required=False, allow_null=True)
    format = serializers.ChoiceField(FORMATS, required=False, allow_null=True)
    availability = serializers.DictField(
        child=serializers.ChoiceField(AVAILABILITIES), required=False, allow_null=True
    )
    default = serializers.BooleanField(required=False)


class ScenarioUpdateSerializer(ScenarioSerializer):
    name = serializers.CharField(
        max_length=200, required=False, help_text="Cannot change; when given it must be the same."
    )
    profile = serializers.CharField(required=False)


class ImportSummaryCountsSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    deleted = serializers.IntegerField()
    unchanged = serializers.IntegerField()


class ImportSummarySerializer(serializers.Serializer):
    mode = serializers.ChoiceField(["merge", "replace"])
    changed = serializers.BooleanField()
    consumers = ImportSummaryCountsSerializer()
    layers = ImportSummaryCountsSerializer()
    items = ImportSummaryCountsSerializer()
    profiles = ImportSummaryCountsSerializer()
    rules = ImportSummaryCountsSerializer()


class WorkspaceSerializer(serializers.Serializer):
    version = serializers.IntegerField(required=False)
    consumers = ConsumerSerializer(many=True, required=False)
    layers = serializers.ListField(child=serializers.DictField(), required=False)
    profiles = ProfileSerializer(many=True, required=False)


# --- requests (SPEC §3) -------------------------------------------------------------------

INPUT_HELP = (
    "A flat object of string/number/boolean/null values (at most 100 keys); "
    "input.message is the user's message (at most 20,000 characters)."
)


class SelectionSerializer(serializers.Serializer):
    profile = serializers.CharField(
        required=False, help_text="Profile key, or give consumer + objective."
    )
    consumer = serializers.CharField(required=False)
    objective = serializers.CharField(required=False)
    environment = serializers.CharField(required=False, allow_null=True)


class RequestSerializer(SelectionSerializer):
    input = serializers.DictField(required=False, allow_null=True, help_text=INPUT_HELP)
    now = serializers.CharField(
        required=False, allow_null=True, help_text="ISO-8601 date or datetime; default: now."
    )
    format = serializers.ChoiceField(FORMATS, required=False, allow_null=True)
    availability = serializers.DictField(
        child=serializers.ChoiceField(AVAILABILITIES), required=False, allow_null=True
    )


class ResolveRequestSerializer(RequestSerializer):
    scenario = serializers.CharField(
        required=False,
        help_text="A saved scenario's name: fills profile, input, now, format and "
        "availability where the body does not give them.",
    )


class PreviewRequestSerializer(serializers.Serializer):
    rules = serializers.DictField(
        child=RuleSerializer(allow_null=True),
        required=False,
        allow_null=True,
        help_text="Unsaved partial rules by layer (a field set to null goes back to the "
        "default; a layer set to null gets the default rule).",
    )
    budget = serializers.IntegerField(min_value=1, required=False, allow_null=True)
    input = serializers.DictField(required=False, allow_null=True, help_text=INPUT_HELP)
    now = serializers.CharField(required=False, allow_null=True)
    format = serializers.ChoiceField(FORMATS, required=False, allow_null=True)
    availability = serializers.DictField(
        child=serializers.ChoiceField(AVAILABILITIES), required=False, allow_null=True
    )


class ExpandRequestSerializer(RequestSerializer):
    ref = serializers.CharField(help_text="<layer>/<item path>, as in the resolution's references.")


class ExpandedItemSerializer(serializers.Serializer):
    ref = serializers.CharField()
    layer = serializers.CharField()
    item = serializers.CharField(help_text="The item's path.")
    title = serializers.CharField(allow_blank=True)
    body = serializers.CharField(allow_blank=True)
    metadata = serializers.DictField()


# --- resolution (SPEC §7) -----------------------------------------------------------------


class ResolvedProfileSerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField(allow_blank=True)
    consumer = serializers.CharField()
    objective = serializers.CharField()
    environment = serializers.CharField(allow_null=True)


class StatusEntrySerializer(serializers.Serializer):
    code = serializers.CharField()
    layer = serializers.CharField()
    detail = serializers.CharField(allow_null=True)


class ExcludedItemSerializer(serializers.Serializer):
    layer = serializers.CharField()
    item = serializers.CharField()
    reason = serializers.ChoiceField(["STALE", "UNKNOWN"])
    date = serializers.CharField(allow_null=True)
    ageDays = serializers.IntegerField(allow_null=True)


class SizeSerializer(serializers.Serializer):
    characters = serializers.IntegerField()
    estimatedTokens = serializers.IntegerField()


class BudgetSerializer(serializers.Serializer):
    limit = serializers.IntegerField()
    estimatedTokens = serializers.IntegerField()
    remaining = serializers.IntegerField()
    characters = serializers.IntegerField()
    byLayer = serializers.DictField(child=SizeSerializer())


class AvailableSerializer(serializers.Serializer):
    state = serializers.ChoiceField(["UNAVAILABLE", "UNKNOWN", "EMPTY", "MATERIAL_PRESENT"])
    items = serializers.IntegerField()


class ApplicableSerializer(serializers.Serializer):
    state = serializers.ChoiceField(["APPLICABLE", "NOT_APPLICABLE", "UNKNOWN", "SKIPPED"])
    reason = serializers.CharField(allow_null=True, allow_blank=True)
    candidates = serializers.IntegerField()


class LayerCurrentnessSerializer(serializers.Serializer):
    state = serializers.ChoiceField(["ASSESSED", "NOT_ASSESSED", "SKIPPED"])
    current = serializers.IntegerField()
    stale = serializers.IntegerField()
    unknown = serializers.IntegerField()
    excluded = serializers.IntegerField()
    warned = serializers.IntegerField()


class DecisionSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(["inline", "on-demand", "omitted"])
    reason = serializers.CharField()
    detail = serializers.CharField(allow_null=True)


class MaterializedItemSerializer(serializers.Serializer):
    item = serializers.CharField()
    score = serializers.FloatField(allow_null=True)
    matchedTerms = serializers.ListField(child=serializers.CharField())
    date = serializers.CharField(allow_null=True)
    notCurrent = serializers.CharField(allow_null=True)


class LayerReferenceSerializer(serializers.Serializer):
    item = serializers.CharField()
    reason = serializers.CharField()


class MaterializedSerializer(serializers.Serializer):
    items = MaterializedItemSerializer(many=True)
    references = LayerReferenceSerializer(many=True)


class ProjectedSerializer(serializers.Serializer):
    facets = serializers.ListField(child=serializers.CharField())
    derived = serializers.DictField(child=serializers.IntegerField())


class RenderedSerializer(serializers.Serializer):
    items = serializers.ListField(child=serializers.CharField())
    trimmed = serializers.ListField(child=serializers.CharField())
    characters = serializers.IntegerField()
    estimatedTokens = serializers.IntegerField()


class LayerTraceSerializer(serializers.Serializer):
    layer = serializers.CharField()
    name = serializers.CharField()
    ruleSource = serializers.ChoiceField(["profile", "default"])
    participation = serializers.CharField()
    mode = serializers.CharField()
    required = serializers.BooleanField()
    priority = serializers.FloatField()
    available = AvailableSerializer()
    applicable = ApplicableSerializer()
    currentness = LayerCurrentnessSerializer()
    decision = DecisionSerializer()
    materialized = MaterializedSerializer()
    projected = ProjectedSerializer()
    rendered = RenderedSerializer()


class ReferenceSerializer(serializers.Serializer):
    ref = serializers.CharField()
    layer = serializers.CharField()
    item = serializers.CharField()
    title = serializers.CharField(allow_blank=True)
    reason = serializers.CharField()
    rendered = serializers.BooleanField()


class OutputSerializer(serializers.Serializer):
    format = serializers.ChoiceField(FORMATS)
    text = serializers.CharField(allow_blank=True)
    estimatedTokens = serializers.IntegerField()


class ResolutionSerializer(serializers.Serializer):
    resolver = serializers.CharField()
    profile = ResolvedProfileSerializer()
    now = serializers.CharField()
    status = serializers.ChoiceField(["RESOLVED", "RENDERING_INCOMPLETE", "BLOCKED"])
    blockers = StatusEntrySerializer(many=True)
    warnings = StatusEntrySerializer(many=True)
    currentness = serializers.ChoiceField(["CURRENT", "UNKNOWN", "NOT_CURRENT"])
    currentnessExcluded = ExcludedItemSerializer(many=True)
    budget = BudgetSerializer()
    layers = LayerTraceSerializer(many=True)
    references = ReferenceSerializer(many=True)
    output = OutputSerializer(allow_null=True, help_text="null when the status is BLOCKED")


class TokenRequestSerializer(serializers.Serializer):
    username = serializers.CharField()
    password = serializers.CharField(style={"input_type": "password"})


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="Send it as `Authorization: Token <token>`.")

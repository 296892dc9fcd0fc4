"""Requests and resolutions (SPEC §3, §7) as the schema documents them; the resolution itself is
the engine's own JSON, passed through."""

from rest_framework import serializers

from profiles.api.serializers.authoring import RuleSerializer
from profiles.api.serializers.entries import SCENARIO_NAME_MAX_LENGTH, choice_field, strings_field
from resolver.model import AVAILABILITIES, FORMATS
from resolver.request import DETAILS

INPUT_HELP = (
    "A flat object of string/number/boolean/null values (at most 100 keys); "
    "input.message is the user's message (at most 20,000 characters)."
)


def string_or_null() -> serializers.CharField:
    """Return a field of the resolution that is a string or null (SPEC §7)."""
    return serializers.CharField(allow_null=True)


class SelectionSerializer(serializers.Serializer):
    profile = serializers.CharField(
        required=False, help_text="Profile key, or give consumer + objective."
    )
    consumer = serializers.CharField(required=False)
    objective = serializers.CharField(required=False)
    environment = serializers.CharField(required=False, allow_null=True)


# A ref is "<layer key>/<item path>" (the path may hold slashes).
REF_PATTERN = r"^[^/]+/.+$"

DETAIL_HELP = (
    "`summary` lists only what is rendered (SPEC §7.1): the response grows with the output, "
    "not with the layers — what applications should ask for. Default: `full`."
)


def detail_field() -> serializers.ChoiceField:
    return choice_field(DETAILS, help_text=DETAIL_HELP)


class RequestSerializer(SelectionSerializer):
    input = serializers.DictField(required=False, allow_null=True, help_text=INPUT_HELP)
    now = serializers.CharField(
        required=False, allow_null=True, help_text="ISO-8601 date or datetime; default: now."
    )
    format = choice_field(FORMATS)
    availability = serializers.DictField(
        child=serializers.ChoiceField(list(AVAILABILITIES)), required=False, allow_null=True
    )


class ResolveSerializer(RequestSerializer):
    detail = detail_field()
    scenario = serializers.CharField(
        required=False,
        min_length=1,
        max_length=SCENARIO_NAME_MAX_LENGTH,
        help_text="A saved scenario's name: fills profile, input, now, format and "
        "availability where the body does not give them.",
    )


class PreviewSerializer(serializers.Serializer):
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
    format = choice_field(FORMATS)
    availability = serializers.DictField(
        child=serializers.ChoiceField(list(AVAILABILITIES)), required=False, allow_null=True
    )
    detail = detail_field()


class ExpandSerializer(RequestSerializer):
    scenario = serializers.CharField(
        required=False,
        min_length=1,
        max_length=SCENARIO_NAME_MAX_LENGTH,
        help_text="A saved scenario's name, as in resolve.",
    )
    detail = choice_field(
        DETAILS,
        help_text="Accepted for a resolve body sent as is; the offer is always that "
        "of the full resolution (a summary's cut refs stay expandable).",
    )
    ref = serializers.RegexField(
        REF_PATTERN, help_text="<layer>/<item path>, as in the resolution's references."
    )


class ExpandedItemSerializer(serializers.Serializer):
    ref = serializers.CharField()
    layer = serializers.CharField()
    item = serializers.CharField(help_text="The item's path.")
    title = serializers.CharField(allow_blank=True)
    body = serializers.CharField(allow_blank=True)
    metadata = serializers.DictField()


class ResolvedProfileSerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField(allow_blank=True)
    consumer = serializers.CharField()
    objective = serializers.CharField()
    environment = string_or_null()


class StatusEntrySerializer(serializers.Serializer):
    code = serializers.CharField()
    layer = serializers.CharField()
    detail = string_or_null()


class ExcludedItemSerializer(serializers.Serializer):
    layer = serializers.CharField()
    item = serializers.CharField()
    reason = serializers.ChoiceField(["STALE", "UNKNOWN"])
    date = string_or_null()
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
    detail = string_or_null()


class MaterializedItemSerializer(serializers.Serializer):
    item = serializers.CharField()
    score = serializers.FloatField(allow_null=True)
    matchedTerms = strings_field()
    date = string_or_null()
    notCurrent = string_or_null()


class LayerReferenceSerializer(serializers.Serializer):
    item = serializers.CharField()
    reason = serializers.CharField()


class MaterializedSerializer(serializers.Serializer):
    items = MaterializedItemSerializer(many=True)
    references = LayerReferenceSerializer(many=True)


class ProjectedSerializer(serializers.Serializer):
    facets = strings_field()
    derived = serializers.DictField(child=serializers.IntegerField())


class RenderedSerializer(serializers.Serializer):
    items = strings_field()
    trimmed = strings_field()
    characters = serializers.IntegerField()
    estimatedTokens = serializers.IntegerField()


class LayerCountsSerializer(serializers.Serializer):
    """A summary's full lengths of the lists it cuts (SPEC §7.1)."""

    items = serializers.IntegerField(min_value=0, help_text="Content items of the layer.")
    references = serializers.IntegerField(
        min_value=0, help_text="Materialized references (rendered or not)."
    )
    trimmed = serializers.IntegerField(min_value=0, help_text="Items trimmed by the budget.")


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
    counts = LayerCountsSerializer(
        required=False, help_text='Only with `detail: "summary"`: the lengths of the full lists.'
    )


class ReferenceSerializer(serializers.Serializer):
    ref = serializers.CharField()
    layer = serializers.CharField()
    item = serializers.CharField()
    title = serializers.CharField(allow_blank=True)
    reason = serializers.CharField()
    rendered = serializers.BooleanField()


class OutputSerializer(serializers.Serializer):
    format = serializers.ChoiceField(list(FORMATS))
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
    detail = serializers.ChoiceField(
        ["summary"],
        required=False,
        help_text='"summary" when the request asked for one (absent: the full resolution).',
    )
    referenceCounts = serializers.DictField(
        child=serializers.IntegerField(min_value=1),
        required=False,
        help_text='Only with `detail: "summary"`: references by reason (ON_DEMAND, '
        "LAYER_TOKEN_LIMIT, BEYOND_MAX_ITEMS, NOT_RETRIEVED, BUDGET_TRIMMED), rendered or not; "
        "a reason with none is left out.",
    )

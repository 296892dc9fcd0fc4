"""Serializers of the API: they document every body (the OpenAPI schema) and check it.

Entries of the workspace document (consumers, layers, items, profiles, rules) and scenarios
are checked in two steps that never disagree with the schema: the serializer checks what
HTTP adds (a JSON object, read-only fields left out, the key the URL names not changed), then
the write service runs the engine's validator of one entry — the same checks as an import,
the studio and the admin, with the same messages and paths. The documented fields, choices
and key pattern are the engine's own vocabulary (``resolver.model``, ``resolver.validation``),
so a new mode or field appears in the schema and the checks at once.
Field names are those of the SPEC §2 workspace document and the SPEC §7 resolution.
"""

from django.http import QueryDict
from rest_framework import serializers

from profiles.mappers import (
    canonical_string,
    json_safe,
    map_consumer_to_resolver,
    map_item_to_resolver,
    map_layer_to_resolver,
    map_profile_to_resolver,
    map_scenario_to_document,
)
from resolver.limits import MAX_BODY_CHARS, MAX_NAME_CHARS, MAX_TITLE_CHARS
from resolver.model import AVAILABILITIES, FORMATS, MODES, ON_POLICIES, ORDERS, PARTICIPATIONS
from resolver.request import DETAILS
from resolver.validation import KEY_RE

KEY_PATTERN = f"^{KEY_RE.pattern}$"


def key_field(**kwargs) -> serializers.RegexField:
    return serializers.RegexField(KEY_PATTERN, max_length=64, **kwargs)


def choice_field(choices, **kwargs) -> serializers.ChoiceField:
    return serializers.ChoiceField(list(choices), required=False, allow_null=True, **kwargs)


def text_field(max_length: int, **kwargs) -> serializers.CharField:
    return serializers.CharField(
        required=False, allow_blank=True, allow_null=True, max_length=max_length, **kwargs
    )


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


class EntrySerializer(serializers.Serializer):
    """One entry of the workspace document (or a scenario), read and written as JSON.

    ``to_internal_value`` checks what HTTP adds and returns the body as the entry's document
    for the write service; the engine validates the rest there. ``to_representation`` is the
    mapper's document form (absent fields stay absent), the same form an export gives.
    """

    #: the field the URL names (cannot change in an update)
    identity = "key"
    #: fields of the representation a client may send back but cannot write
    read_only_names: tuple[str, ...] = ()

    def to_internal_value(self, data):
        if isinstance(data, QueryDict):  # a form post from the browsable API
            data = data.dict()
        if not isinstance(data, dict):
            raise serializers.ValidationError(
                {"non_field_errors": ["the request body must be a JSON object"]}
            )
        body = {name: value for name, value in data.items() if name not in self.read_only_names}
        current = self.context.get("identity")
        given = body.get(self.identity)
        if current is not None and given is not None:
            if canonical_string(given) != current:
                raise serializers.ValidationError({self.identity: ["cannot be changed"]})
            body.pop(self.identity)
        return body

    def to_representation(self, row) -> dict:
        return self.represent(row)

    def represent(self, row) -> dict:
        raise NotImplementedError


def update_serializer(base: type[EntrySerializer], **optional) -> type[EntrySerializer]:
    """Return the update variant of an entry serializer: the identity may be left out."""
    field = base._declared_fields[base.identity]
    kwargs = {
        **field._kwargs,
        "required": False,
        "help_text": "Cannot change; when given it must be the same.",
    }
    fields = {base.identity: type(field)(*field._args, **kwargs), **optional}
    return type(base.__name__.replace("Serializer", "UpdateSerializer"), (base,), fields)


class RenderSerializer(serializers.Serializer):
    format = choice_field(FORMATS)
    includeCurrentness = serializers.BooleanField(required=False, allow_null=True)


class ConsumerSerializer(EntrySerializer):
    key = key_field()
    name = text_field(MAX_NAME_CHARS)
    render = RenderSerializer(required=False, allow_null=True)

    def represent(self, consumer):
        return map_consumer_to_resolver(consumer)


ConsumerUpdateSerializer = update_serializer(ConsumerSerializer)


class AppliesToSerializer(serializers.Serializer):
    objectives = serializers.ListField(child=key_field(), required=False)
    consumers = serializers.ListField(child=key_field(), required=False)


class ItemSerializer(EntrySerializer):
    identity = "path"
    read_only_names = ("ref",)

    ref = serializers.CharField(read_only=True, required=False, help_text="<layer>/<path>")
    path = serializers.CharField(max_length=255)
    title = text_field(MAX_TITLE_CHARS)
    body = text_field(MAX_BODY_CHARS)
    metadata = serializers.DictField(
        required=False, allow_null=True, help_text="At most 4 levels and 1,000 values."
    )

    def represent(self, item):
        document = {"ref": item.ref, "title": "", "body": "", "metadata": {}}
        document.update(map_item_to_resolver(item))
        document["metadata"] = json_safe(document["metadata"])
        return document


ItemUpdateSerializer = update_serializer(ItemSerializer)


class LayerSerializer(EntrySerializer):
    read_only_names = ("itemCount",)

    key = key_field()
    name = text_field(MAX_NAME_CHARS)
    description = text_field(MAX_NAME_CHARS)
    availability = choice_field(AVAILABILITIES)
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
    items = ItemSerializer(
        many=True,
        required=False,
        write_only=True,
        help_text="Only when creating a layer; then edit items through layers/<key>/items/.",
    )
    itemCount = serializers.IntegerField(read_only=True, required=False)

    def represent(self, layer):
        document = map_layer_to_resolver(layer, [])
        document.pop("items")
        count = getattr(layer, "item_count", None)
        document["itemCount"] = layer.items.count() if count is None else count
        return document


class LayerUpdateSerializer(update_serializer(LayerSerializer)):
    items = None  # edited through layers/<key>/items/

    def to_internal_value(self, data):
        body = super().to_internal_value(data)
        if "items" in body:
            raise serializers.ValidationError({"items": ["edit items through layers/<key>/items/"]})
        return body


LayerUpdateSerializer.__name__ = "LayerUpdateSerializer"


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
    facets = serializers.ListField(child=serializers.CharField(), required=False, allow_null=True)
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


class WorkspaceItemSerializer(ItemSerializer):
    ref = None


class WorkspaceLayerSerializer(LayerSerializer):
    items = WorkspaceItemSerializer(many=True, required=False)
    itemCount = None


class WorkspaceSerializer(serializers.Serializer):
    version = serializers.IntegerField(required=False)
    consumers = ConsumerSerializer(many=True, required=False)
    layers = WorkspaceLayerSerializer(many=True, required=False)
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


class ResolveRequestSerializer(RequestSerializer):
    detail = detail_field()
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
    format = choice_field(FORMATS)
    availability = serializers.DictField(
        child=serializers.ChoiceField(list(AVAILABILITIES)), required=False, allow_null=True
    )
    detail = detail_field()


class ExpandRequestSerializer(RequestSerializer):
    detail = choice_field(
        DETAILS,
        help_text="Accepted for a resolve body sent as is; the offer is always that "
        "of the full resolution (a summary's cut refs stay expandable).",
    )
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


class TokenRequestSerializer(serializers.Serializer):
    username = serializers.CharField()
    password = serializers.CharField(style={"input_type": "password"})


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="Send it as `Authorization: Token <token>`.")

"""Shapes and examples of the safe-change endpoints (impact, change requests, change sets,
promotion), for the OpenAPI schema. The services validate the bodies (with the engine's
messages); these serializers describe them. A profile's versions and the environments are
``versioning``'s."""

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from profiles.api.serializers.authoring import RuleSerializer
from profiles.api.serializers.entries import key_field, strings_field
from profiles.api.serializers.examples import (
    counts_example,
    error_example,
    request_example,
    response_example,
)
from profiles.api.serializers.reviews import apply_at_field, reviewers_field
from profiles.api.serializers.versioning import CREATED_AT, ChangeSerializer
from profiles.safechange.change_set_entries import MAX_SET_CHANGES
from profiles.safechange.titles import DESCRIPTION_MAX_LENGTH, TITLE_MAX_LENGTH
from profiles.workspace.entity_changes import KINDS, OPS

# --- drafts and impact ---------------------------------------------------------------------


class ChangesSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    description = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    budget = serializers.IntegerField(min_value=1, required=False, allow_null=True)
    rules = serializers.DictField(
        child=RuleSerializer(allow_null=True),
        required=False,
        help_text="Partial rules by layer: given fields replace the saved ones (null: back to "
        "the default); a layer set to null gets the default rule.",
    )


class ResolutionSummarySerializer(serializers.Serializer):
    status = serializers.ChoiceField(["RESOLVED", "RENDERING_INCOMPLETE", "BLOCKED"])
    estimatedTokens = serializers.IntegerField()
    admitted = serializers.ListField(
        child=serializers.CharField(), help_text="Refs admitted into the output, in order."
    )


class ImpactEntrySerializer(serializers.Serializer):
    profile = serializers.CharField(
        required=False,
        help_text="The scenario's profile (change sets and import dry runs span profiles).",
    )
    scenario = serializers.CharField()
    before = ResolutionSummarySerializer(allow_null=True)
    after = ResolutionSummarySerializer(allow_null=True)
    changed = serializers.BooleanField(
        help_text="The answer differs: status, tokens, admitted refs or output text."
    )
    skipped = serializers.BooleanField(
        required=False, help_text="Not resolved: beyond the scenarios one impact resolves."
    )


class ImpactSummarySerializer(serializers.Serializer):
    scenarios = serializers.IntegerField()
    changed = serializers.IntegerField()
    skipped = serializers.IntegerField(help_text="Scenarios not resolved (beyond the bound).")


class ImpactSerializer(serializers.Serializer):
    profile = serializers.CharField()
    baseVersion = serializers.IntegerField(allow_null=True)
    summary = ImpactSummarySerializer()
    next = serializers.URLField(
        allow_null=True, help_text="The dry run of the following scenarios (`?offset=`)."
    )
    impact = ImpactEntrySerializer(many=True)


IMPACT_ENTRY = {
    "scenario": "Dana asks about a late refund",
    "before": {
        "status": "RESOLVED",
        "estimatedTokens": 980,
        "admitted": ["policies/refunds", "tickets/T-1042", "kb/refund-timelines"],
    },
    "after": {
        "status": "RESOLVED",
        "estimatedTokens": 1130,
        "admitted": [
            "policies/refunds",
            "tickets/T-1042",
            "kb/refund-timelines",
            "kb/card-refunds",
        ],
    },
    "changed": True,
}

IMPACT_EXAMPLES = [
    request_example("A draft", {"budget": 1400, "rules": {"kb": {"maxItems": 3}}}),
    response_example(
        "Its impact",
        {
            "profile": "support-answer",
            "baseVersion": 4,
            "summary": {"scenarios": 6, "changed": 1, "skipped": 0},
            "next": None,
            "impact": [IMPACT_ENTRY],
        },
    ),
]

# --- change requests -----------------------------------------------------------------------


class ApprovalSerializer(serializers.Serializer):
    user = serializers.CharField()
    createdAt = serializers.DateTimeField()
    revision = serializers.IntegerField(help_text="The revision of the request approved.")
    counted = serializers.BooleanField(
        help_text="Whether it counts now: given to the current revision by a user who may "
        "still review (active, an editor or staff)."
    )


class ChangeRequestCreateSerializer(serializers.Serializer):
    profile = key_field(help_text="Key of the profile to change.")
    title = serializers.CharField(
        max_length=TITLE_MAX_LENGTH,
        required=False,
        help_text='Default: what the request changes ("Change support-answer: budget, '
        'rules.kb.maxItems").',
    )
    description = serializers.CharField(
        required=False, allow_blank=True, max_length=DESCRIPTION_MAX_LENGTH
    )
    changes = ChangesSerializer()
    reviewers = reviewers_field(required=False)


class ChangeSetEntrySerializer(serializers.Serializer):
    kind = serializers.ChoiceField(KINDS)
    op = serializers.ChoiceField(OPS)
    key = serializers.CharField(
        required=False,
        help_text="The consumer, layer or profile (a create takes it from value.key).",
    )
    layer = serializers.CharField(required=False, help_text="An item's layer key.")
    path = serializers.CharField(
        required=False, help_text="An item's path (a create takes it from value.path)."
    )
    value = serializers.DictField(
        required=False,
        allow_null=True,
        help_text="create: the whole SPEC §2 entry; update: the fields that replace the "
        "entry's (null removes one; a profile's rules are partial per layer); delete: none.",
    )


class ChangeSetCreateSerializer(serializers.Serializer):
    title = serializers.CharField(
        max_length=TITLE_MAX_LENGTH,
        required=False,
        help_text='Default: what the set does ("Create layer release-notes; change …").',
    )
    description = serializers.CharField(
        required=False, allow_blank=True, max_length=DESCRIPTION_MAX_LENGTH
    )
    changes = ChangeSetEntrySerializer(many=True, max_length=MAX_SET_CHANGES)
    reviewers = reviewers_field(required=False)


@extend_schema_field(
    PolymorphicProxySerializer(
        component_name="ChangeRequestChanges",
        serializers=[ChangeSetEntrySerializer(many=True), ChangesSerializer],
        resource_type_field_name=None,
        many=False,
    )
)
class ChangesOrSetField(serializers.JSONField):
    """A single profile's changes (an object) or a change set's (a list)."""


CHANGE_REQUEST_OR_SET_CREATE = PolymorphicProxySerializer(
    component_name="ChangeRequestOrSetCreate",
    serializers=[ChangeRequestCreateSerializer, ChangeSetCreateSerializer],
    resource_type_field_name=None,
    many=False,
)


class ChangeRequestUpdateSerializer(serializers.Serializer):
    title = serializers.CharField(max_length=TITLE_MAX_LENGTH, required=False)
    description = serializers.CharField(
        required=False, allow_blank=True, max_length=DESCRIPTION_MAX_LENGTH
    )
    changes = ChangesOrSetField(required=False)
    reviewers = reviewers_field(required=False)
    applyAt = apply_at_field(required=False)


class EntityChangeSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(KINDS)
    op = serializers.ChoiceField(OPS)
    key = serializers.CharField(required=False)
    layer = serializers.CharField(required=False)
    path = serializers.CharField(required=False)
    fields = ChangeSerializer(
        many=True, help_text="What differs, SPEC §2 paths relative to the entry; long texts cut."
    )


def entity_counts_serializer(name: str, by_op: str, **count) -> type[serializers.Serializer]:
    """Return the serializer (component ``name``) of counts of entity changes: one object
    (component ``by_op``) per kind, a number per op, each an ``IntegerField(**count)``."""
    counts = {op: serializers.IntegerField(**count) for op in OPS}
    ops = type(f"{by_op}Serializer", (serializers.Serializer,), counts)
    return type(f"{name}Serializer", (serializers.Serializer,), {kind: ops() for kind in KINDS})


EntityCountsSerializer = entity_counts_serializer("EntityCounts", "OpCounts", min_value=0)


class ChangeRequestListItemSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    revision = serializers.IntegerField(
        help_text="Grows with every edit and rebase; the ETag names it, and an approval "
        "approves one revision."
    )
    profile = serializers.CharField()
    environment = serializers.CharField(
        allow_null=True, help_text="The environment the profile is in now."
    )
    title = serializers.CharField()
    status = serializers.ChoiceField(["open", "applied", "rejected", "closed"])
    author = serializers.CharField(allow_null=True)
    baseVersion = serializers.IntegerField(
        allow_null=True, help_text="The profile version the changes were written against."
    )
    currentVersion = serializers.IntegerField(allow_null=True)
    stale = serializers.BooleanField(
        help_text="The profile moved past baseVersion: rebase before applying."
    )
    counts = EntityCountsSerializer(
        help_text="How many entities of each kind it creates, changes and deletes (a created "
        "layer's items are item creates); the changes themselves are on the request's detail."
    )
    affectedProfiles = strings_field(
        help_text="The profiles whose answer the request may change (its impact covers them).",
    )
    entities = strings_field(
        help_text="A change set: the entities it touches (layer:tickets, item:kb/a, …); the "
        "stale check compares each one's ETag at apply.",
    )
    itemsWithheld = serializers.IntegerField(
        min_value=0,
        help_text="How many item changes of a change set are left out of `changes`, "
        "`entities`, `entityChanges`, `staleEntities` and the refs `impact` admits: items are "
        "customer material, read with the READ_MATERIAL permission (editors or staff). 0 for "
        "whoever may read material.",
    )
    creates = serializers.DictField(
        allow_null=True, help_text="For a promotion to a new profile: the profile created."
    )
    promotedFrom = serializers.CharField(allow_null=True)
    approvals = ApprovalSerializer(many=True)
    approvalsRequired = serializers.IntegerField(
        help_text="What the profile's environment asks for now."
    )
    summary = ImpactSummarySerializer()
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()
    resolvedAt = serializers.DateTimeField(allow_null=True)
    resolvedBy = serializers.CharField(allow_null=True)
    appliedVersion = serializers.IntegerField(allow_null=True)
    reviewers = reviewers_field()
    applyAt = apply_at_field()
    applyScheduledBy = serializers.CharField(allow_null=True)


class ChangeRequestSerializer(ChangeRequestListItemSerializer):
    changes = ChangesOrSetField()
    description = serializers.CharField(allow_blank=True)
    changesRequestedBy = strings_field(
        help_text="Reviewers whose latest verdict on the current revision asks for changes: "
        "while any does, apply answers 409 CHANGES_REQUESTED.",
    )
    diff = ChangeSerializer(many=True)
    entityChanges = EntityChangeSerializer(
        many=True, help_text="A change set: each entry's field diff (empty for one profile)."
    )
    staleEntities = strings_field(
        help_text="A change set: the entities that moved since it was written (rebase).",
    )
    impact = ImpactEntrySerializer(many=True)


CHANGE_REQUEST_CREATE_EXAMPLE = request_example(
    "Propose a change",
    {
        "profile": "support-answer",
        "title": "Three KB articles and a larger budget",
        "description": "Refund questions need the card-refund article too.",
        "changes": {"budget": 1400, "rules": {"kb": {"maxItems": 3}}},
        "reviewers": ["lee"],
    },
)

CHANGE_REQUEST_EXAMPLE = response_example(
    "An open change request",
    {
        "id": 12,
        "revision": 1,
        "profile": "support-answer",
        "environment": "production",
        "title": "Three KB articles and a larger budget",
        "description": "Refund questions need the card-refund article too.",
        "status": "open",
        "author": "dana",
        "baseVersion": 4,
        "currentVersion": 4,
        "stale": False,
        "changes": {"budget": 1400, "rules": {"kb": {"maxItems": 3}}},
        "affectedProfiles": ["support-answer"],
        "entities": [],
        "itemsWithheld": 0,
        "counts": counts_example(profile={"update": 1}),
        "creates": None,
        "promotedFrom": None,
        "entityChanges": [],
        "staleEntities": [],
        "diff": [
            {"path": "budget", "from": 1200, "to": 1400},
            {"path": "rules.kb.maxItems", "from": 2, "to": 3},
        ],
        "approvals": [],
        "approvalsRequired": 1,
        "impact": [IMPACT_ENTRY],
        "summary": {"scenarios": 6, "changed": 1, "skipped": 0},
        "createdAt": CREATED_AT,
        "updatedAt": CREATED_AT,
        "resolvedAt": None,
        "resolvedBy": None,
        "appliedVersion": None,
        "reviewers": ["lee"],
        "applyAt": None,
        "applyScheduledBy": None,
        "changesRequestedBy": [],
    },
)

APPROVE_ERROR_EXAMPLES = [
    error_example(
        "Changed since it was read",
        412,
        "PRECONDITION_FAILED",
        "change request #12 changed since you read it (it is at revision 2): review it "
        "again, then approve",
        "If-Match",
    ),
    error_example(
        "No revision named",
        428,
        "PRECONDITION_REQUIRED",
        "send the ETag of change request #12 as If-Match: an approval approves the "
        "revision you reviewed",
        "If-Match",
        etag='"cr12.1"',
    ),
]

SAFE_CHANGE_ERROR_EXAMPLES = [
    error_example(
        "Self-approval", 403, "SELF_APPROVAL", "the author of a change request cannot approve it"
    ),
    error_example(
        "Stale base",
        409,
        "STALE_CHANGE_REQUEST",
        'profile "support-answer" moved past version 4 (it is at version 5): rebase the '
        "change request to recompute its impact, then apply it",
        "baseVersion",
        baseVersion=4,
        currentVersion=5,
    ),
]


class PromoteSerializer(serializers.Serializer):
    to = key_field(help_text="The target environment.")
    title = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        help_text='Default (left out or empty): "Promote <key> to <to>".',
    )
    description = serializers.CharField(required=False, allow_blank=True)
    key = key_field(
        required=False, help_text="Key of the profile to create when the target has none."
    )
    reviewers = reviewers_field(required=False)


PROMOTE_EXAMPLE = request_example("Promote staging to production", {"to": "production"})

# --- change sets ---------------------------------------------------------------------------

CHANGE_SET_CHANGES = [
    {
        "kind": "layer",
        "op": "create",
        "value": {"key": "release-notes", "name": "Release notes", "items": []},
    },
    {
        "kind": "profile",
        "op": "update",
        "key": "support-answer",
        "value": {"rules": {"release-notes": {"participation": "exclude"}}},
    },
    {
        "kind": "profile",
        "op": "update",
        "key": "support-staging",
        "value": {"rules": {"tickets": {"maxItems": 3}}},
    },
]

CHANGE_SET_CREATE_EXAMPLE = request_example(
    "Propose a change set",
    {
        "title": "Release notes, kept out of production",
        "description": "A new layer; production excludes it until it is reviewed.",
        "changes": CHANGE_SET_CHANGES,
    },
)

CHANGE_SET_EXAMPLE = response_example(
    "An open change set",
    {
        **CHANGE_REQUEST_EXAMPLE.value,
        "id": 13,
        "profile": "",
        "environment": None,
        "title": "Release notes, kept out of production",
        "baseVersion": None,
        "currentVersion": None,
        "changes": CHANGE_SET_CHANGES,
        "affectedProfiles": ["support-answer", "support-staging"],
        "entities": ["layer:release-notes", "profile:support-answer", "profile:support-staging"],
        "counts": counts_example(layer={"create": 1}, profile={"update": 2}),
        "entityChanges": [
            {
                "kind": "layer",
                "op": "create",
                "key": "release-notes",
                "fields": [
                    {"path": "key", "from": None, "to": "release-notes"},
                    {"path": "name", "from": None, "to": "Release notes"},
                ],
            },
            {
                "kind": "profile",
                "op": "update",
                "key": "support-answer",
                "fields": [
                    {
                        "path": "rules.release-notes",
                        "from": None,
                        "to": {"participation": "exclude"},
                    }
                ],
            },
            {
                "kind": "profile",
                "op": "update",
                "key": "support-staging",
                "fields": [{"path": "rules.tickets.maxItems", "from": 5, "to": 3}],
            },
        ],
        "diff": [],
        "impact": [{"profile": "support-staging", **IMPACT_ENTRY}],
        "summary": {"scenarios": 4, "changed": 1, "skipped": 0},
        "approvalsRequired": 2,
    },
)

STALE_CHANGE_SET_EXAMPLE = error_example(
    "Stale change set",
    409,
    "STALE_CHANGE_REQUEST",
    "layer:tickets changed since change request #13 was written: rebase it to recompute "
    "its impact, then apply it",
    "entities",
    entities=["layer:tickets"],
)

"""The workspace document as the import and export carry it, and the import job."""

from rest_framework import serializers

from profiles.api.serializers.authoring import ProfileSerializer
from profiles.api.serializers.entries import IssueSerializer, strings_field
from profiles.api.serializers.examples import counts_example
from profiles.api.serializers.material import (
    BulkIngestSummarySerializer,
    ConsumerSerializer,
    ItemSerializer,
    LayerSerializer,
)
from profiles.api.serializers.safechange import (
    EntityChangeSerializer,
    ImpactEntrySerializer,
    ImpactSummarySerializer,
    entity_counts_serializer,
)
from profiles.import_export.import_summary import NAMES_LISTED
from profiles.import_export.imports import IMPORT_MODES
from profiles.models import ImportJob


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


class ImportIssueSerializer(IssueSerializer):
    """One error of a failed import: its path in the file and where it is written."""

    path = serializers.CharField(help_text='Document path, e.g. "profiles[0].rules.tickets".')
    entry = serializers.CharField(
        required=False,
        help_text='The entry it concerns: "consumer K", "layer K", "item LAYER/PATH", '
        '"profile K" or "rule PROFILE/LAYER".',
    )
    line = serializers.IntegerField(
        required=False, min_value=1, help_text="Line of the value in the file (1-based)."
    )
    aliasLine = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text="When the value is reached through a YAML alias: the alias's line.",
    )
    aliasColumn = serializers.IntegerField(required=False, min_value=1)


class ImportErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    path = serializers.CharField()
    issues = ImportIssueSerializer(many=True, required=False)


class ImportCountsSerializer(serializers.Serializer):
    created = serializers.IntegerField(min_value=0)
    updated = serializers.IntegerField(min_value=0)
    deleted = serializers.IntegerField(min_value=0)
    unchanged = serializers.IntegerField(min_value=0)


def _names_field(action: str):
    return strings_field(
        max_length=NAMES_LISTED,
        help_text=f"The first {NAMES_LISTED} {action}; the count minus these is how many more.",
    )


class ImportNamesSerializer(serializers.Serializer):
    created = _names_field("created")
    updated = _names_field("updated")
    deleted = _names_field("deleted")


class ImportNamesByKindSerializer(serializers.Serializer):
    consumers = ImportNamesSerializer(help_text="By key.")
    layers = ImportNamesSerializer(help_text="By key.")
    items = ImportNamesSerializer(help_text="As LAYER/PATH.")
    profiles = ImportNamesSerializer(help_text="By key.")
    rules = ImportNamesSerializer(help_text="As PROFILE/LAYER.")


# The kinds of rows an import counts, in the summary's order (``ImportSummary.counts``).
IMPORT_KINDS = ("consumers", "layers", "items", "profiles", "rules")

# An import's summary: its mode, whether it changed anything, the counts of each kind, the
# names (the fields in this order, the counts one per kind).
ImportSummarySerializer = type(
    "ImportSummarySerializer",
    (serializers.Serializer,),
    {
        "mode": serializers.ChoiceField(choices=IMPORT_MODES),
        "changed": serializers.BooleanField(),
        **{kind: ImportCountsSerializer() for kind in IMPORT_KINDS},
        "names": ImportNamesByKindSerializer(
            required=False,
            help_text="What was created, updated and deleted, per kind (jobs finished before "
            "names were recorded have none).",
        ),
    },
)


class JobFieldsSerializer(serializers.Serializer):
    """The fields of every background job."""

    id = serializers.UUIDField()
    url = serializers.URLField()
    status = serializers.ChoiceField(choices=ImportJob.Status.values)
    phase = serializers.CharField(help_text="What the job is doing, in words.")
    progress = serializers.IntegerField(min_value=0, max_value=100, help_text="Percent done.")
    createdAt = serializers.DateTimeField()
    startedAt = serializers.DateTimeField(allow_null=True)
    finishedAt = serializers.DateTimeField(allow_null=True)


class ImportJobSerializer(JobFieldsSerializer):
    """An import job: poll ``url`` until ``status`` is succeeded or failed."""

    mode = serializers.ChoiceField(choices=["merge", "replace"])
    layer = serializers.CharField(allow_null=True, help_text="The one layer imported, if any.")
    bytes = serializers.IntegerField(help_text="Size of the uploaded document.")
    summary = ImportSummarySerializer(
        allow_null=True, help_text="When succeeded: what changed, counted and named per kind."
    )
    error = ImportErrorSerializer(allow_null=True, help_text="When failed; nothing was written.")


# --- dry run (issue 21) --------------------------------------------------------------------


DryRunCountsSerializer = entity_counts_serializer("DryRunCounts", "CountsByOp")


class ImportDryRunSerializer(serializers.Serializer):
    mode = serializers.ChoiceField(IMPORT_MODES)
    counts = DryRunCountsSerializer(help_text="Entity changes per kind and op (exact).")
    changes = EntityChangeSerializer(
        many=True,
        help_text="The entity changes from `offset` on (at most 500 an answer), each with its "
        "field diff; long texts are cut.",
    )
    offset = serializers.IntegerField()
    moreChanges = serializers.IntegerField(
        help_text="Changes after these (ask again with `offset`)."
    )
    affectedProfiles = strings_field(
        help_text="Profiles whose answer the import may change (the impact covers them).",
    )
    protectedProfiles = strings_field(
        help_text="Protected profiles it touches: a plain import is refused (409 "
        "CHANGE_REQUEST_REQUIRED); `propose=true` opens it as a change set.",
    )
    summary = ImpactSummarySerializer()
    impact = ImpactEntrySerializer(many=True)


DRY_RUN_EXAMPLE = {
    "mode": "merge",
    "counts": counts_example(layer={"create": 1, "update": 1}, item={"create": 12}),
    "changes": [
        {
            "kind": "layer",
            "op": "update",
            "key": "tickets",
            "fields": [{"path": "itemFilter.customer_id", "from": "customer_id", "to": None}],
        },
        {
            "kind": "item",
            "op": "create",
            "layer": "release-notes",
            "path": "2026-12.md",
            "fields": [{"path": "title", "from": None, "to": "December"}],
        },
    ],
    "offset": 0,
    "moreChanges": 12,
    "affectedProfiles": ["support-answer", "support-staging"],
    "protectedProfiles": ["support-answer"],
    "summary": {"scenarios": 4, "changed": 2, "skipped": 0},
    "impact": [
        {
            "profile": "support-answer",
            "scenario": "Dana asks about a late refund",
            "before": {"status": "RESOLVED", "estimatedTokens": 980, "admitted": ["tickets/T-1"]},
            "after": {
                "status": "RESOLVED",
                "estimatedTokens": 2410,
                "admitted": ["tickets/T-1", "tickets/T-9"],
            },
            "changed": True,
        }
    ],
}


# --- bulk ingest jobs (issue 20) ---------------------------------------------------------


class BulkJobSerializer(JobFieldsSerializer):
    """A bulk ingest job: poll ``url`` until ``status`` is succeeded or failed."""

    layer = serializers.CharField(help_text="The layer whose items the batch writes.")
    bytes = serializers.IntegerField(help_text="Size of the batch.")
    summary = BulkIngestSummarySerializer(
        allow_null=True,
        help_text="The operations applied so far, counted (when the job failed half way too); "
        "null before the first part is written.",
    )
    error = ImportErrorSerializer(
        allow_null=True,
        help_text="When failed: why, and how many operations were applied before it stopped "
        "(the batch is idempotent: send it again to finish).",
    )

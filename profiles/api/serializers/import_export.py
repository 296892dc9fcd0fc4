"""The workspace document as the import and export carry it, and the import job."""

from rest_framework import serializers

from profiles.api.serializers.authoring import ProfileSerializer
from profiles.api.serializers.material import ConsumerSerializer, ItemSerializer, LayerSerializer
from profiles.import_export.workspace import IMPORT_MODES, NAMES_LISTED
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


class ImportIssueSerializer(serializers.Serializer):
    """One error of a failed import: its path in the file and where it is written."""

    path = serializers.CharField(help_text='Document path, e.g. "profiles[0].rules.tickets".')
    message = serializers.CharField()
    entry = serializers.CharField(
        required=False,
        help_text='The entry it concerns: "consumer K", "layer K", "item LAYER/PATH", '
        '"profile K" or "rule PROFILE/LAYER".',
    )
    line = serializers.IntegerField(
        required=False, min_value=1, help_text="Line of the value in the file (1-based)."
    )
    column = serializers.IntegerField(
        required=False, min_value=1, help_text="Column of the value (1-based)."
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
    return serializers.ListField(
        child=serializers.CharField(),
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


class ImportSummarySerializer(serializers.Serializer):
    mode = serializers.ChoiceField(choices=IMPORT_MODES)
    changed = serializers.BooleanField()
    consumers = ImportCountsSerializer()
    layers = ImportCountsSerializer()
    items = ImportCountsSerializer()
    profiles = ImportCountsSerializer()
    rules = ImportCountsSerializer()
    names = ImportNamesByKindSerializer(
        required=False,
        help_text="What was created, updated and deleted, per kind (jobs finished before "
        "names were recorded have none).",
    )


class ImportJobSerializer(serializers.Serializer):
    """An import job: poll ``url`` until ``status`` is succeeded or failed."""

    id = serializers.UUIDField()
    url = serializers.URLField()
    status = serializers.ChoiceField(choices=ImportJob.Status.values)
    phase = serializers.CharField(help_text="What the job is doing, in words.")
    progress = serializers.IntegerField(min_value=0, max_value=100, help_text="Percent done.")
    mode = serializers.ChoiceField(choices=["merge", "replace"])
    layer = serializers.CharField(allow_null=True, help_text="The one layer imported, if any.")
    bytes = serializers.IntegerField(help_text="Size of the uploaded document.")
    createdAt = serializers.DateTimeField()
    startedAt = serializers.DateTimeField(allow_null=True)
    finishedAt = serializers.DateTimeField(allow_null=True)
    summary = ImportSummarySerializer(
        allow_null=True, help_text="When succeeded: what changed, counted and named per kind."
    )
    error = ImportErrorSerializer(allow_null=True, help_text="When failed; nothing was written.")

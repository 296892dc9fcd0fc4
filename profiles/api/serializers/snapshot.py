"""The snapshot of ``GET /api/v1/snapshot`` as the schema documents it
(``profiles.resolution.snapshot``)."""

from rest_framework import serializers

from profiles.api.serializers.import_export import WorkspaceSerializer


class SnapshotSerializer(serializers.Serializer):
    snapshot = serializers.IntegerField(help_text="The snapshot format: 1.")
    engine = serializers.CharField(
        help_text="The engine version that must read it (`ctxstudio/1+<digest of its code>`); "
        "a client with another engine does not evaluate it."
    )
    version = serializers.CharField(help_text="The workspace content version it was made from.")
    served = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Served layers (an `itemFilter`: customer material) by key: their item "
        "total. They are in `workspace` without items; a request that reads one is resolved "
        "by the server.",
    )
    workspace = WorkspaceSerializer(
        help_text="The consumers, layers and profiles the key may resolve (SPEC §2)."
    )

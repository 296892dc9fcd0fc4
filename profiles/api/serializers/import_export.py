"""The workspace document as the import and export carry it."""

from rest_framework import serializers

from profiles.api.serializers.authoring import ProfileSerializer
from profiles.api.serializers.material import ConsumerSerializer, ItemSerializer, LayerSerializer


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

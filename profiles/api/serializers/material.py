"""Serializers of consumers, layers and items (SPEC §2 entries)."""

from rest_framework import serializers

from profiles.api.serializers.entries import (
    ITEM_PATH_MAX_LENGTH,
    ITEM_PATH_PATTERN,
    EntrySerializer,
    choice_field,
    key_field,
    text_field,
    update_serializer,
)
from profiles.material.selectors import layer_item_count
from profiles.workspace.mappers import (
    json_safe,
    map_consumer_to_resolver,
    map_item_to_resolver,
    map_layer_to_resolver,
)
from resolver.limits import MAX_BODY_CHARS, MAX_NAME_CHARS, MAX_TITLE_CHARS
from resolver.model import AVAILABILITIES, FORMATS


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
    path = serializers.RegexField(
        ITEM_PATH_PATTERN,
        max_length=ITEM_PATH_MAX_LENGTH,
        help_text="1 to 255 characters, no whitespace at either end.",
    )
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
    governed = serializers.BooleanField(
        required=False,
        help_text="Item writes need a change request while a profile of a protected environment "
        "reads the layer. Only staff may change it; not part of the workspace document.",
    )

    def to_internal_value(self, data):
        body = super().to_internal_value(data)
        # The engine validates the entry; ``governed`` is not in it, so it is checked here.
        if "governed" in body and not isinstance(body["governed"], bool):
            raise serializers.ValidationError({"governed": ["must be true or false"]})
        return body

    def represent(self, layer):
        document = map_layer_to_resolver(layer, [])
        document.pop("items")
        document["governed"] = layer.governed
        count = getattr(layer, "item_count", None)
        document["itemCount"] = layer_item_count(layer=layer) if count is None else count
        return document


class LayerUpdateSerializer(update_serializer(LayerSerializer)):
    items = None  # edited through layers/<key>/items/

    def to_internal_value(self, data):
        body = super().to_internal_value(data)
        if "items" in body:
            raise serializers.ValidationError({"items": ["edit items through layers/<key>/items/"]})
        return body


LayerUpdateSerializer.__name__ = "LayerUpdateSerializer"


# --- bulk ingest (profiles.material.bulk_ingest) -------------------------------------------


class BulkUpsertSerializer(serializers.Serializer):
    op = serializers.ChoiceField(choices=["upsert"])
    item = ItemSerializer(help_text="The whole item at its path (created, or replaced).")


class BulkDeleteSerializer(serializers.Serializer):
    op = serializers.ChoiceField(choices=["delete"])
    path = serializers.RegexField(
        ITEM_PATH_PATTERN,
        max_length=ITEM_PATH_MAX_LENGTH,
        help_text="The item to delete (a path not stored: nothing to do).",
    )


class BulkIngestSummarySerializer(serializers.Serializer):
    layer = serializers.CharField()
    operations = serializers.IntegerField(help_text="Operations in the batch.")
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    deleted = serializers.IntegerField()
    unchanged = serializers.IntegerField(
        help_text="Upserts equal to the stored item, deletes of paths not stored: not written."
    )

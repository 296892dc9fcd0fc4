"""Consumers, layers and items in the admin, saved through the material services."""

from django import forms
from django.contrib import admin
from django.db.models import Count
from django.urls import reverse
from django.utils.html import format_html

from profiles.admin.workspace import TEXT_INPUT, WorkspaceAdmin, WorkspaceModelForm
from profiles.material.consumers import consumer_create, consumer_delete, consumer_update
from profiles.material.items import item_create, item_delete, item_update
from profiles.material.layers import layer_create, layer_delete, layer_update
from profiles.material.selectors import layer_item_count
from profiles.models import Consumer, Item, Layer
from profiles.workspace.mappers import (
    map_consumer_to_resolver,
    map_item_to_resolver,
    map_layer_to_resolver,
)
from profiles.workspace.origin import ADMIN as ADMIN_ORIGIN
from profiles.workspace.selectors import item_with_layer_get


class ConsumerForm(WorkspaceModelForm):
    class Meta:
        model = Consumer
        fields = ["key", "name", "render_format", "include_currentness"]
        widgets = {"name": TEXT_INPUT}


class LayerForm(WorkspaceModelForm):
    class Meta:
        model = Layer
        fields = [
            "key",
            "name",
            "description",
            "availability",
            "governed",
            "applies_to_objectives",
            "applies_to_consumers",
            "requires_input",
            "item_filter",
        ]
        widgets = {"name": TEXT_INPUT, "description": forms.Textarea(attrs={"rows": 3})}


class ItemForm(WorkspaceModelForm):
    class Meta:
        model = Item
        fields = ["layer", "path", "title", "body", "metadata"]
        widgets = {"title": TEXT_INPUT, "path": TEXT_INPUT}


@admin.register(Consumer)
class ConsumerAdmin(WorkspaceAdmin):
    form = ConsumerForm
    list_display = ["key", "name", "render_format", "include_currentness", "profile_count"]
    list_filter = ["render_format", "include_currentness"]
    search_fields = ["key", "name"]
    history_list_display = ["key", "render_format", "include_currentness"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(profile_total=Count("profiles"))

    @admin.display(description="profiles", ordering="profile_total")
    def profile_count(self, obj):
        return obj.profile_total

    def service_save(self, request, obj, change):
        document = map_consumer_to_resolver(obj)
        if not change:
            return consumer_create(document=document, user=request.user, origin=ADMIN_ORIGIN)
        return consumer_update(
            key=self.stored(obj).key,
            changes=document,
            replace=True,
            user=request.user,
            origin=ADMIN_ORIGIN,
        )

    def service_delete(self, request, obj):
        consumer_delete(key=obj.key, user=request.user, origin=ADMIN_ORIGIN)


@admin.register(Layer)
class LayerAdmin(WorkspaceAdmin):
    form = LayerForm
    list_display = [
        "key",
        "name",
        "availability",
        "items_link",
        "requires_input",
        "item_filter",
        "updated_at",
        "updated_by",
    ]
    list_filter = ["availability"]
    search_fields = ["key", "name", "description"]
    readonly_fields = ["items_link", *WorkspaceAdmin.readonly_fields]
    history_list_display = ["key", "availability"]
    fieldsets = [
        (
            None,
            {"fields": ["key", "name", "description", "availability", "governed", "items_link"]},
        ),
        (
            "Conditions",
            {
                "fields": [
                    "applies_to_objectives",
                    "applies_to_consumers",
                    "requires_input",
                    "item_filter",
                ],
                "description": "JSON lists of keys; itemFilter maps a metadata field to an "
                "input key. Empty = no condition.",
            },
        ),
        ("Changes", {"fields": WorkspaceAdmin.readonly_fields, "classes": ["collapse"]}),
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(item_total=Count("items"))

    @admin.display(description="items", ordering="item_total")
    def items_link(self, obj):
        if obj.pk is None:
            return "—"
        total = getattr(obj, "item_total", None)
        if total is None:
            total = layer_item_count(layer=obj)
        url = reverse("admin:profiles_item_changelist") + f"?layer__id__exact={obj.pk}"
        return format_html('<a href="{}">{} item{}</a>', url, total, "" if total == 1 else "s")

    def service_save(self, request, obj, change):
        document = map_layer_to_resolver(obj, [])
        document.pop("items")
        if not change:
            return layer_create(
                document=document, governed=obj.governed, user=request.user, origin=ADMIN_ORIGIN
            )
        return layer_update(
            key=self.stored(obj).key,
            changes=document,
            replace=True,
            governed=obj.governed,
            user=request.user,
            origin=ADMIN_ORIGIN,
        )

    def service_delete(self, request, obj):
        layer_delete(key=obj.key, user=request.user, origin=ADMIN_ORIGIN)


@admin.register(Item)
class ItemAdmin(WorkspaceAdmin):
    form = ItemForm
    list_display = ["path", "layer", "title", "updated_at"]
    list_filter = ["layer"]
    list_select_related = ["layer"]
    search_fields = ["path", "title", "body"]
    list_per_page = 50
    readonly_fields = ["created_at", "updated_at"]
    history_list_display = ["path", "title"]

    def service_save(self, request, obj, change):
        document = map_item_to_resolver(obj)
        if change:
            stored = item_with_layer_get(pk=obj.pk)
            if stored.layer_id == obj.layer_id:
                return item_update(
                    layer=stored.layer.key,
                    path=stored.path,
                    changes=document,
                    replace=True,
                    user=request.user,
                    origin=ADMIN_ORIGIN,
                )
            # Moved to another layer: the item leaves one layer and joins the other.
            item_delete(
                layer=stored.layer.key, path=stored.path, user=request.user, origin=ADMIN_ORIGIN
            )
        return item_create(
            layer=obj.layer.key, document=document, user=request.user, origin=ADMIN_ORIGIN
        )

    def service_delete(self, request, obj):
        item_delete(layer=obj.layer.key, path=obj.path, user=request.user, origin=ADMIN_ORIGIN)

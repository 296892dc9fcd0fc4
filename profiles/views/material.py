"""Layers and their items: lists, conditions, item pages."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Q
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from profiles import services
from profiles.forms import ItemForm, LayerConditionsForm
from profiles.mappers import map_layer_to_resolver
from profiles.models import Item, Layer
from profiles.permissions import (
    READ_CONFIG,
    READ_MATERIAL,
    WRITE_MATERIAL,
    capability_required,
    user_can,
)
from profiles.services import WorkspaceValidationError


@capability_required(READ_CONFIG)
@require_GET
def layer_list(request):
    layers = list(Layer.objects.order_by("position", "id"))
    return render(request, "profiles/layer_list.html", {"layers": layers})


@capability_required(READ_CONFIG, unsafe=WRITE_MATERIAL)
@require_http_methods(["GET", "POST"])
def layer_edit(request, key):
    """Edit a layer's conditions: availability, scope, required input, item filter."""
    layer = get_object_or_404(Layer, key=key)
    form = LayerConditionsForm(request.POST or None, instance=layer)
    if not user_can(request.user, WRITE_MATERIAL):
        for field in form.fields.values():
            field.disabled = True
    if request.method == "POST" and form.is_valid():
        document = map_layer_to_resolver(form.instance, [])
        document.pop("items")
        try:
            services.layer_update(key=key, changes=document, replace=True, user=request.user)
        except WorkspaceValidationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Layer {layer.key} saved.")
            return redirect("layer-list")
    return render(request, "profiles/layer_form.html", {"form": form, "layer": layer})


ITEMS_PER_PAGE = 25


@capability_required(READ_MATERIAL)
@require_GET
def item_list(request, key):
    """List a layer's items, searchable by path, title and body, a page at a time."""
    layer = get_object_or_404(Layer, key=key)
    query = request.GET.get("q", "").strip()
    items = Item.objects.filter(layer=layer).order_by("position", "id")
    if query:
        items = items.filter(
            Q(path__icontains=query) | Q(title__icontains=query) | Q(body__icontains=query)
        )
    page = Paginator(items, ITEMS_PER_PAGE).get_page(request.GET.get("page"))
    context = {"layer": layer, "page": page, "query": query}
    if request.htmx and request.htmx.target == "item-results":
        return render(request, "profiles/item_list.html#item-results", context)
    return render(request, "profiles/item_list.html", context)


@capability_required(READ_MATERIAL, unsafe=WRITE_MATERIAL)
@require_http_methods(["GET", "POST"])
def item_edit(request, key, item_id):
    layer = get_object_or_404(Layer, key=key)
    item = get_object_or_404(Item, pk=item_id, layer=layer)
    form = ItemForm(request.POST or None, instance=item)
    if request.method == "POST" and form.is_valid():
        changes = {name: getattr(form.instance, name) for name in ("title", "body", "metadata")}
        try:
            services.item_update(
                layer=layer.key, path=item.path, changes=changes, user=request.user
            )
        except WorkspaceValidationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Item {item.path} saved.")
            return redirect(reverse("item-list", kwargs={"key": layer.key}))
    return render(request, "profiles/item_form.html", {"form": form, "layer": layer, "item": item})

"""Consumers, layers and their items: lists, create, edit, delete."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from profiles.material import consumers as material_consumers
from profiles.material import items as material_items
from profiles.material import layers as material_layers
from profiles.material.selectors import (
    consumer_profile_keys_get,
    item_list_matching,
    item_of_layer_get,
    layer_item_count,
)
from profiles.models import Consumer, Item, Layer
from profiles.safechange.layer_removal import (
    layer_delete_removing_rules,
    layer_removal_title,
    layer_rule_users_list,
)
from profiles.studio import proposals
from profiles.studio.entries import confirm_delete, entry_page, writable_by
from profiles.studio.forms.entries import lock_key
from profiles.studio.forms.material import ConsumerForm, ItemForm, LayerForm
from profiles.studio.lookups import layer_or_404, or_404
from profiles.studio.proposals import (
    DESCRIPTION_FIELD,
    REVIEWERS_FIELD,
    TITLE_FIELD,
    proposal_context,
)
from profiles.studio.views.activity import activity_url
from profiles.versioning.environments import SafeChangeError
from profiles.versioning.protection import (
    NewLayerJoiners,
    new_layer_joiners,
)
from profiles.workspace import selectors
from profiles.workspace.concurrency import (
    PreconditionFailed,
    consumer_etag,
    item_etag,
    layer_etag,
)
from profiles.workspace.mappers import (
    map_consumer_to_resolver,
    map_item_to_resolver,
    map_layer_to_resolver,
)
from profiles.workspace.origin import STUDIO as STUDIO_ORIGIN
from profiles.workspace.permissions import (
    READ_CONFIG,
    READ_MATERIAL,
    WRITE_MATERIAL,
    WRITE_RULES,
    capability_required,
    governance_refusal,
    user_can,
)
from profiles.workspace.writing import Conflict, EntryInvalid

PER_PAGE = 25


def _consumer(key: str) -> Consumer:
    return or_404(f'no consumer "{key}"', selectors.consumer_get, key=key)


@capability_required(READ_CONFIG)
@require_GET
def consumer_list(request):
    """List the consumers with the profiles that use each, a page at a time."""
    page = Paginator(selectors.consumer_list(), PER_PAGE).get_page(request.GET.get("page"))
    users = consumer_profile_keys_get(consumers=page)
    rows = [{"consumer": c, "profiles": users.get(c.pk, [])} for c in page]
    return render(request, "profiles/consumer_list.html", {"page": page, "rows": rows})


@capability_required(WRITE_MATERIAL)
@require_http_methods(["GET", "POST"])
def consumer_create(request):
    form = ConsumerForm(request.POST if request.method == "POST" else None)
    return entry_page(
        request,
        form,
        lambda: material_consumers.consumer_create(
            document=form.document(), user=request.user, origin=STUDIO_ORIGIN
        ),
        success="Consumer created.",
        next_url=reverse("consumer-list"),
        context={
            "title": "New consumer",
            "submit": "Create consumer",
            "crumbs": [("Consumers", reverse("consumer-list"))],
            "cancel_url": reverse("consumer-list"),
        },
    )


@capability_required(READ_CONFIG, unsafe=WRITE_MATERIAL)
@require_http_methods(["GET", "POST"])
def consumer_edit(request, key):
    consumer = _consumer(key)
    initial = ConsumerForm.initial_of(map_consumer_to_resolver(consumer))
    initial["etag"] = consumer_etag(consumer)
    form = ConsumerForm(request.POST if request.method == "POST" else None, initial=initial)
    lock_key(form)
    writer = writable_by(form, request.user, WRITE_MATERIAL)
    return entry_page(
        request,
        form,
        lambda: material_consumers.consumer_update(
            key=key,
            changes=form.document(),
            user=request.user,
            origin=STUDIO_ORIGIN,
            if_match=form.cleaned_data["etag"] or None,
        ),
        proposal=proposals.consumer_update_proposal(key),
        success=f"Consumer {key} saved.",
        next_url=reverse("consumer-list"),
        context={
            "title": f"Consumer {key}",
            "submit": "Save consumer",
            "read_only": not writer,
            "delete_url": reverse("consumer-delete", args=[key]) if writer else None,
            "crumbs": [("Consumers", reverse("consumer-list"))],
            "cancel_url": reverse("consumer-list"),
            "activity_url": activity_url("consumer", key),
        },
    )


@capability_required(WRITE_MATERIAL)
@require_http_methods(["GET", "POST"])
def consumer_delete(request, key):
    consumer = _consumer(key)
    users = consumer_profile_keys_get(consumers=[consumer]).get(consumer.pk, [])
    context = {
        "kind": "consumer",
        "key": key,
        "consequences": ["Profiles and layers are not changed."],
        "blockers": [
            {"text": f"profile {user}", "url": reverse("profile-edit", args=[user])}
            for user in users
        ],
        "blocker_intro": "Profiles still use this consumer. Give them another consumer "
        "(or delete them) first:",
        "cancel_url": reverse("consumer-edit", args=[key]),
    }
    return confirm_delete(
        request,
        context,
        lambda: material_consumers.consumer_delete(
            key=key, user=request.user, origin=STUDIO_ORIGIN
        ),
        success=f"Consumer {key} deleted.",
        next_url=reverse("consumer-list"),
    )


LAYERS_PER_PAGE = 25


ITEMS_PER_PAGE = 25


@capability_required(READ_CONFIG)
@require_GET
def layer_list(request):
    """List the layers with their conditions and item counts, a page at a time."""
    page = Paginator(selectors.layer_list(), LAYERS_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "profiles/layer_list.html", {"page": page, "layers": page})


def _new_layer_intro(joiners: list[NewLayerJoiners]) -> str:
    """Say, before anyone types, that protected profiles would read a new layer."""
    readers = sorted(key for group in joiners if group.protected for key in group.profiles)
    if not readers:
        return ""
    names = ", ".join(readers[:5]) + (f" and {len(readers) - 5} more" if len(readers) > 5 else "")
    return (
        f"Protected profiles ({names}) read a new layer on their default rule unless its "
        "“applies to” leaves them out: creating it then needs a change request, and you will be "
        "offered to propose it, excluding it from each of them or including it."
    )


@capability_required(WRITE_MATERIAL)
@require_http_methods(["GET", "POST"])
def layer_create(request):
    joiners = new_layer_joiners()
    form = LayerForm(
        request.POST if request.method == "POST" else None,
        staff=governance_refusal(request.user) is None,
    )
    return entry_page(
        request,
        form,
        lambda: material_layers.layer_create(
            document=form.document(),
            governed=bool(form.governed_value()),
            user=request.user,
            origin=STUDIO_ORIGIN,
        ),
        proposal=proposals.layer_create_proposal(),
        success="Layer created. Add its items next.",
        next_url=lambda layer: reverse("item-list", args=[layer.key]),
        context={
            "title": "New layer",
            "intro": _new_layer_intro(joiners),
            "joiners": joiners,
            "submit": "Create layer",
            "crumbs": [("Layers", reverse("layer-list"))],
            "cancel_url": reverse("layer-list"),
        },
    )


@capability_required(READ_CONFIG, unsafe=WRITE_MATERIAL)
@require_http_methods(["GET", "POST"])
def layer_edit(request, key):
    """Edit a layer's fields and conditions: availability, scope, required input, filter."""
    layer = layer_or_404(key)
    entry = map_layer_to_resolver(layer, [])
    initial = LayerForm.initial_of(entry) | {"etag": layer_etag(layer), "governed": layer.governed}
    form = LayerForm(
        request.POST if request.method == "POST" else None,
        initial=initial,
        staff=governance_refusal(request.user) is None,
    )
    lock_key(form)
    writer = writable_by(form, request.user, WRITE_MATERIAL)
    return entry_page(
        request,
        form,
        lambda: material_layers.layer_update(
            key=key,
            changes={name: value for name, value in form.document().items() if name != "key"},
            replace=True,
            governed=form.governed_value(),
            user=request.user,
            origin=STUDIO_ORIGIN,
            if_match=form.cleaned_data["etag"] or None,
        ),
        proposal=proposals.layer_update_proposal(key),
        success=f"Layer {key} saved.",
        next_url=reverse("layer-list"),
        context={
            "layer": layer,
            "title": f"Layer {key}",
            "submit": "Save",
            "read_only": not writer,
            "delete_url": reverse("layer-delete", args=[key]) if writer else None,
            "crumbs": [("Layers", reverse("layer-list"))],
            "cancel_url": reverse("layer-list"),
            "links": [("Items", reverse("item-list", args=[key]))]
            if user_can(request.user, READ_MATERIAL)
            else [],
            "activity_url": activity_url("layer", key),
        },
    )


REMOVE_RULES_FIELD = "remove_rules"


def _rule_users(key: str, request) -> dict:
    """Return what the delete page shows of the profiles with a rule for the layer and, for
    a user who may write both rules and material, the "Remove its rules and delete" offer."""
    users = layer_rule_users_list(key=key)
    if not users or not (
        user_can(request.user, WRITE_RULES) and user_can(request.user, WRITE_MATERIAL)
    ):
        return {"rule_users": users}
    protected = [user.key for user in users if user.protected]
    return {
        "rule_users": users,
        "remove_rules": {
            "field": REMOVE_RULES_FIELD,
            "protected": protected,
            "proposal": proposal_context(
                request, title=layer_removal_title(key, [user.key for user in users])
            )
            if protected
            else None,
        },
    }


def _layer_delete_removing_rules(request, key: str, context: dict):
    """Remove the layer's rules and delete it (or propose it, where protection asks): the
    posted ETag and profiles are those the page showed; a refusal changes nothing."""
    proposal = {
        "title": request.POST.get(TITLE_FIELD, ""),
        "description": request.POST.get(DESCRIPTION_FIELD, ""),
        "reviewers": request.POST.getlist(REVIEWERS_FIELD),
    }
    try:
        removal = layer_delete_removing_rules(
            key=key,
            user=request.user,
            origin=STUDIO_ORIGIN,
            if_match=request.POST.get("etag") or None,
            profiles=request.POST.getlist("profile"),
            proposal=proposal,
        )
    except PreconditionFailed:
        context["conflict"] = (
            "The layer or the profiles with a rule for it changed after you opened this page, "
            "so nothing was changed. Review the list below and try again."
        )
    except (Conflict, SafeChangeError, EntryInvalid) as exc:
        context["conflict"] = f"Nothing was changed: {getattr(exc, 'message', None) or exc}"
    else:
        if removal.applied:
            count = len(removal.profiles)
            messages.success(
                request,
                f"Layer {key} deleted; its rule was removed from {count} "
                f"profile{'' if count == 1 else 's'}: {', '.join(removal.profiles)}.",
            )
            return HttpResponseRedirect(reverse("layer-list"))
        messages.success(
            request,
            f"Change request #{removal.change_request.pk} opened: protected profiles are "
            f"affected, so the rule removals and the deletion of {key} apply once approved. "
            "Nothing has changed yet.",
        )
        return HttpResponseRedirect(reverse("change-request", args=[removal.change_request.pk]))
    context.update(_rule_users(key, request), etag=layer_etag(layer_or_404(key)))
    return render(request, "profiles/confirm_delete.html", context, status=409)


@capability_required(WRITE_MATERIAL)
@require_http_methods(["GET", "POST"])
def layer_delete(request, key):
    layer = layer_or_404(key)
    items = layer_item_count(layer=layer)
    context = {
        "kind": "layer",
        "key": key,
        "consequences": [f"Its {items:,} item{'' if items == 1 else 's'} go with it."],
        "blocker_intro": "Profiles still have a rule for this layer. Put the layer back on the "
        "default rule in each of them (empty its row in the editor) first:",
        "cancel_url": reverse("layer-edit", args=[key]),
        "etag": layer_etag(layer),
        **_rule_users(key, request),
    }
    context["blockers"] = [
        {
            "text": f"the {key} rule of profile {user.key}",
            "url": reverse("profile-editor", args=[user.key]),
        }
        for user in context["rule_users"]
    ]
    if request.method == "POST" and request.POST.get(REMOVE_RULES_FIELD):
        if "remove_rules" not in context and context["rule_users"]:
            raise PermissionDenied("removing a layer's rules needs rule and material writes")
        return _layer_delete_removing_rules(request, key, context)
    return confirm_delete(
        request,
        context,
        lambda: material_layers.layer_delete(key=key, user=request.user, origin=STUDIO_ORIGIN),
        proposal=proposals.delete_change("layer", key),
        success=f"Layer {key} deleted.",
        next_url=reverse("layer-list"),
    )


def _item(layer: Layer, item_id: int) -> Item:
    return or_404("no such item in this layer", item_of_layer_get, layer=layer, item_id=item_id)


@capability_required(READ_MATERIAL)
@require_GET
def item_list(request, key):
    """List a layer's items, searchable by path, title and body, a page at a time."""
    layer = layer_or_404(key)
    query = request.GET.get("q", "").strip()
    items = item_list_matching(layer=layer, query=query)
    page = Paginator(items, ITEMS_PER_PAGE).get_page(request.GET.get("page"))
    context = {"layer": layer, "page": page, "query": query}
    if request.htmx and request.htmx.target == "item-results":
        return render(request, "profiles/item_list.html#item-results", context)
    return render(request, "profiles/item_list.html", context)


@capability_required(WRITE_MATERIAL)
@require_http_methods(["GET", "POST"])
def item_create(request, key):
    layer = layer_or_404(key)
    form = ItemForm(
        request.POST if request.method == "POST" else None, initial={"metadata_text": "{}"}
    )
    return entry_page(
        request,
        form,
        lambda: material_items.item_create(
            layer=key, document=form.document(), user=request.user, origin=STUDIO_ORIGIN
        ),
        proposal=proposals.item_create_proposal(key),
        success="Item created.",
        next_url=reverse("item-list", args=[key]),
        context={
            "layer": layer,
            "title": f"New item in {key}",
            "submit": "Create item",
            "crumbs": [("Layers", reverse("layer-list")), (key, reverse("item-list", args=[key]))],
            "cancel_url": reverse("item-list", args=[key]),
        },
    )


@capability_required(READ_MATERIAL, unsafe=WRITE_MATERIAL)
@require_http_methods(["GET", "POST"])
def item_edit(request, key, item_id):
    layer = layer_or_404(key)
    item = _item(layer, item_id)
    initial = ItemForm.initial_of(map_item_to_resolver(item)) | {"etag": item_etag(item)}
    form = ItemForm(request.POST if request.method == "POST" else None, initial=initial)
    form.fields["path"].disabled = True
    writer = writable_by(form, request.user, WRITE_MATERIAL)
    return entry_page(
        request,
        form,
        lambda: material_items.item_update(
            layer=key,
            path=item.path,
            changes={name: v for name, v in form.document().items() if name != "path"},
            user=request.user,
            origin=STUDIO_ORIGIN,
            if_match=form.cleaned_data["etag"] or None,
        ),
        proposal=proposals.item_update_proposal(key, item.path),
        success=f"Item {item.path} saved.",
        next_url=reverse("item-list", args=[key]),
        context={
            "layer": layer,
            "item": item,
            "title": f"{key}/{item.path}",
            "submit": "Save",
            "read_only": not writer,
            "delete_url": reverse("item-delete", args=[key, item.pk]) if writer else None,
            "activity_url": activity_url("item", key, item.path),
            "crumbs": [("Layers", reverse("layer-list")), (key, reverse("item-list", args=[key]))],
            "cancel_url": reverse("item-list", args=[key]),
        },
    )


@capability_required(WRITE_MATERIAL)
@require_http_methods(["GET", "POST"])
def item_delete(request, key, item_id):
    layer = layer_or_404(key)
    item = _item(layer, item_id)
    context = {
        "kind": "item",
        "key": f"{key}/{item.path}",
        "consequences": ["Resolutions stop offering it at once."],
        "cancel_url": reverse("item-edit", args=[key, item.pk]),
    }
    return confirm_delete(
        request,
        context,
        lambda: material_items.item_delete(
            layer=key, path=item.path, user=request.user, origin=STUDIO_ORIGIN
        ),
        proposal=proposals.delete_change("item", key, item.path),
        success=f"Item {item.path} deleted.",
        next_url=reverse("item-list", args=[key]),
    )

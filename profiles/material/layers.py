"""Writes of layers (SPEC §2 ``layers[]``, a layer's own fields): create, update, delete.

A layer's items are written through ``profiles.material.items``; a layer created with items
gets them in the same transaction. Every write bumps the layer's content token.
"""

from django.db import IntegrityError
from django.utils import timezone

from profiles.models import Item, Layer, Rule, new_token
from profiles.workspace.bulk_writes import BulkWriter
from profiles.workspace.concurrency import check_if_match, layer_etag, workspace_write
from profiles.workspace.mappers import map_item_values, map_layer_to_resolver, map_layer_values
from profiles.workspace.selectors import layer_get
from profiles.workspace.validation import validate_layer
from profiles.workspace.writing import (
    Conflict,
    assign,
    author,
    conflict_for,
    delete_row,
    raise_if_invalid,
    save_row,
    workspace_changed,
)


def layer_create(*, document: dict, user=None) -> Layer:
    """Create a layer (with the items its entry gives); raise ``EntryInvalid`` or ``Conflict``."""
    layer = Layer()
    try:
        with workspace_write():
            raise_if_invalid(validate_layer(document), layer)
            assign(layer, map_layer_values(document))
            save_row(layer, user=user)
            # The items as an import writes them: rows and history records in bulk.
            rows = [
                {**map_item_values(item), "layer_id": layer.pk, "position": position}
                for position, item in enumerate(document.get("items") or [])
            ]
            BulkWriter(user=author(user), now=timezone.now()).create(Item, rows)
            workspace_changed()
    except IntegrityError as exc:
        raise conflict_for(layer) from exc
    return layer


def layer_update(
    *, key: str, changes: dict, replace: bool = False, user=None, if_match: str | None = None
) -> Layer:
    """Change a layer's own fields: ``changes`` replace the entry's (None: back to the
    default); with ``replace`` they are the whole entry. Items are not touched."""
    if "items" in changes:
        raise ValueError("a layer update does not change items (use the item services)")
    layer = None
    try:
        with workspace_write():
            layer = layer_get(key=key, lock=True)
            check_if_match(if_match, layer_etag(layer))
            entry = {"key": key} if replace else map_layer_to_resolver(layer, [])
            entry.pop("items", None)
            document = {**entry, **changes}
            raise_if_invalid(validate_layer(document), layer)
            changed = assign(layer, map_layer_values(document))
            if changed:
                layer.content_token = new_token()
                save_row(layer, user=user)
                # A new key changes the documents of the profiles with a rule for it.
                workspace_changed(profiles="key" in changed)
    except IntegrityError as exc:
        raise conflict_for(layer) from exc
    return layer


def layer_delete(*, key: str, user=None, if_match: str | None = None) -> None:
    """Delete a layer and its items; raise ``Conflict`` while a profile has a rule for it."""
    with workspace_write():
        layer = layer_get(key=key, lock=True)
        check_if_match(if_match, layer_etag(layer))
        users = sorted(Rule.objects.filter(layer=layer).values_list("profile__key", flat=True))
        if users:
            raise Conflict(f'layer "{key}" has rules in profiles: ' + ", ".join(users))
        # The items first, in bulk with their history: the cascade would record each alone.
        items = layer.items.order_by("pk").values_list("pk", flat=True)
        BulkWriter(user=author(user), now=timezone.now()).delete(Item, list(items))
        delete_row(layer, user=user)
        workspace_changed()

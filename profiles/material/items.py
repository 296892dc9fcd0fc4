"""Writes of items (SPEC §2 ``layers[].items[]``): create, update, delete — one item each.

An item write reads, validates and writes that item only, whatever the size of its layer:
a constant number of queries. It bumps its layer's content token.
"""

from django.db import IntegrityError

from profiles.models import Item, ItemChange
from profiles.workspace.concurrency import check_if_match, item_etag, workspace_write
from profiles.workspace.mappers import map_item_to_resolver, map_item_values
from profiles.workspace.selectors import item_get, layer_get
from profiles.workspace.validation import validate_item
from profiles.workspace.writing import (
    assign,
    conflict_for,
    delete_row,
    raise_if_invalid,
    save_row,
    workspace_changed,
)

Op = ItemChange.Op


def item_create(*, layer: str, document: dict, user=None) -> Item:
    """Add an item at the end of the layer ``layer`` (a key); raise ``Layer.DoesNotExist``,
    ``EntryInvalid`` or ``Conflict`` (the path is taken)."""
    item = None
    try:
        with workspace_write():
            stored_layer = layer_get(key=layer)
            item = Item(layer=stored_layer)
            raise_if_invalid(validate_item(document), item)
            assign(item, map_item_values(document))
            save_row(item, user=user)
            workspace_changed(items=[(stored_layer.pk, item.path, Op.CREATE)])
    except IntegrityError as exc:
        raise conflict_for(item) from exc
    return item


def item_update(
    *,
    layer: str,
    path: str,
    changes: dict,
    replace: bool = False,
    user=None,
    if_match: str | None = None,
) -> Item:
    """Change one item: ``changes`` replace the entry's fields (None: back to the default);
    with ``replace`` they are the whole entry. Raise ``Layer.DoesNotExist``,
    ``Item.DoesNotExist``, ``PreconditionFailed``, ``EntryInvalid`` or ``Conflict``."""
    item = None
    try:
        with workspace_write():
            item = item_get(layer=layer_get(key=layer), path=path, lock=True)
            check_if_match(if_match, item_etag(item))
            entry = {"path": path} if replace else map_item_to_resolver(item)
            document = {**entry, **changes}
            raise_if_invalid(validate_item(document), item)
            changed = assign(item, map_item_values(document))
            if changed:
                save_row(item, user=user)
                if "path" in changed:  # moved in place: its layer is read again
                    workspace_changed(layers=[item.layer_id])
                else:
                    workspace_changed(items=[(item.layer_id, item.path, Op.UPDATE)])
    except IntegrityError as exc:
        raise conflict_for(item) from exc
    return item


def item_delete(*, layer: str, path: str, user=None, if_match: str | None = None) -> None:
    """Delete one item; raise ``Item.DoesNotExist`` or ``PreconditionFailed``."""
    with workspace_write():
        item = item_get(layer=layer_get(key=layer), path=path, lock=True)
        check_if_match(if_match, item_etag(item))
        delete_row(item, user=user)
        workspace_changed(items=[(item.layer_id, path, Op.DELETE)])

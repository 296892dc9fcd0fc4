"""Writes of items (SPEC §2 ``layers[].items[]``): create, update, delete — one item each.

An item write reads, validates and writes that item only, whatever the size of its layer:
a constant number of queries. It bumps its layer's content token.
"""

from django.db import IntegrityError, connection
from django.utils import timezone

from profiles.activity.records import activity_record
from profiles.models import Item, ItemChange, Layer
from profiles.versioning.protection import protection_check
from profiles.workspace.bulk_writes import BulkWriter
from profiles.workspace.concurrency import check_if_match, item_etag, workspace_write
from profiles.workspace.derived import Written
from profiles.workspace.entity_changes import EntityChange
from profiles.workspace.mappers import map_item_to_resolver, map_item_values
from profiles.workspace.origin import WriteOrigin, origin_of
from profiles.workspace.selectors import item_get, layer_get
from profiles.workspace.validation import validate_item
from profiles.workspace.writing import (
    assign,
    author,
    conflict_for,
    raise_if_invalid,
    workspace_changed,
)

Op = ItemChange.Op
# The columns a new item is written with (the others are its dates).
NEW_ITEM_FIELDS = ("position", "layer_id", "path", "title", "body", "metadata")


def _as_written(item: Item) -> dict[tuple[int, str], Written]:
    """The item as its write just stored it, so deriving its terms and keys reads it not back."""
    return {
        (item.layer_id, item.path): Written(
            id=item.pk,
            title=item.title,
            body=item.body,
            metadata=item.metadata,
            updated_at=item.updated_at,
        )
    }


def _insert_row(item: Item, *, user) -> None:
    """Store a new item and its history record as a bulk write does (``BulkWriter``): on
    PostgreSQL one ``INSERT`` each, with none of the model layer's per-save work; the item
    takes the next position of its layer and its id, dates and stored state in place."""
    now = timezone.now()
    item.position = item._next_position(Item.objects.filter(layer_id=item.layer_id))
    (item.pk,) = BulkWriter(user=author(user), now=now).create(
        Item, [{name: getattr(item, name) for name in NEW_ITEM_FIELDS}]
    )
    item.created_at = item.updated_at = now
    item._state.adding, item._state.db = False, connection.alias


def _update_row(item: Item, changed: list[str], *, user) -> None:
    """Store an item's ``changed`` fields and its history record as a bulk write does
    (``BulkWriter``): one ``UPDATE`` and one ``INSERT``; the item's date in place."""
    now = timezone.now()
    tracked = [field.attname for field in Item.history.model.tracked_fields]
    BulkWriter(user=author(user), now=now).update(
        Item, [{name: getattr(item, name) for name in tracked}], changed
    )
    item.updated_at = now


def _guarded(layer: Layer, change: EntityChange, *, user, origin: WriteOrigin) -> None:
    """Refuse an item write of a governed layer that protected profiles read (no query for
    an ungoverned layer: tickets and other fast-moving material write directly)."""
    if layer.governed:
        protection_check([change], user=user, origin=origin)


def item_create(
    *, layer: str, document: dict, user=None, origin: WriteOrigin | None = None
) -> Item:
    """Add an item at the end of the layer ``layer`` (a key); raise ``Layer.DoesNotExist``,
    ``EntryInvalid``, ``Conflict`` (the path is taken) or ``ChangeRequestRequired`` (a
    governed layer that protected profiles read)."""
    origin = origin_of(origin)
    item = None
    try:
        with workspace_write():
            stored_layer = layer_get(key=layer)
            item = Item(layer=stored_layer)
            raise_if_invalid(validate_item(document), item)
            assign(item, map_item_values(document))
            change = EntityChange(
                "item", stored_layer.key, None, map_item_to_resolver(item), path=item.path
            )
            _guarded(stored_layer, change, user=user, origin=origin)
            _insert_row(item, user=origin.author or user)
            workspace_changed(
                items=[(stored_layer.pk, item.path, Op.CREATE)], written=_as_written(item)
            )
            activity_record(
                kind="item",
                key=layer,
                path=item.path,
                before=None,
                after=change.after,
                user=user,
                origin=origin,
            )
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
    origin: WriteOrigin | None = None,
) -> Item:
    """Change one item: ``changes`` replace the entry's fields (None: back to the default);
    with ``replace`` they are the whole entry. Raise ``Layer.DoesNotExist``,
    ``Item.DoesNotExist``, ``PreconditionFailed``, ``EntryInvalid``, ``Conflict`` or
    ``ChangeRequestRequired`` (a governed layer that protected profiles read)."""
    origin = origin_of(origin)
    item = None
    try:
        with workspace_write():
            stored_layer = layer_get(key=layer)
            item = item_get(layer=stored_layer, path=path, lock=True)
            before = map_item_to_resolver(item)
            entry = {"path": path} if replace else dict(before)
            document = {**entry, **changes}
            raise_if_invalid(validate_item(document), item)
            # A malformed body is refused as such, whatever its If-Match.
            check_if_match(if_match, item_etag(item))
            changed = assign(item, map_item_values(document))
            if changed:
                after = map_item_to_resolver(item)
                _guarded(
                    stored_layer,
                    EntityChange("item", layer, before, after, path=path),
                    user=user,
                    origin=origin,
                )
                _update_row(item, changed, user=origin.author or user)
                activity_record(
                    kind="item",
                    key=layer,
                    path=path,
                    before=before,
                    after=after,
                    user=user,
                    origin=origin,
                )
                if "path" in changed:  # moved in place: workers holding the layer re-read it
                    workspace_changed(moved=[(item.layer_id, path, item.path)])
                else:
                    workspace_changed(
                        items=[(item.layer_id, item.path, Op.UPDATE)], written=_as_written(item)
                    )
    except IntegrityError as exc:
        raise conflict_for(item) from exc
    return item


def item_delete(
    *,
    layer: str,
    path: str,
    user=None,
    if_match: str | None = None,
    origin: WriteOrigin | None = None,
) -> None:
    """Delete one item; raise ``Item.DoesNotExist``, ``PreconditionFailed`` or
    ``ChangeRequestRequired`` (a governed layer that protected profiles read)."""
    origin = origin_of(origin)
    with workspace_write():
        stored_layer = layer_get(key=layer)
        item = item_get(layer=stored_layer, path=path, lock=True)
        check_if_match(if_match, item_etag(item))
        before = map_item_to_resolver(item)
        _guarded(
            stored_layer,
            EntityChange("item", layer, before, None, path=path),
            user=user,
            origin=origin,
        )
        BulkWriter(user=author(origin.author or user), now=timezone.now()).delete(Item, [item.pk])
        workspace_changed(items=[(item.layer_id, path, Op.DELETE)])
        activity_record(
            kind="item", key=layer, path=path, before=before, after=None, user=user, origin=origin
        )

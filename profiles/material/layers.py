"""Writes of layers (SPEC §2 ``layers[]``, a layer's own fields): create, update, delete.

A layer's items are written through ``profiles.material.items``; a layer created with items
gets them in the same transaction. Every write bumps the layer's content token.
"""

from django.db import IntegrityError
from django.utils import timezone

from profiles.activity.records import activity_record, activity_record_many
from profiles.models import Item, Layer, Rule, new_token
from profiles.versioning.protection import governed_change_check, protection_check
from profiles.workspace.bulk_writes import BulkWriter
from profiles.workspace.concurrency import check_if_match, layer_etag, workspace_write
from profiles.workspace.entity_changes import EntityChange
from profiles.workspace.mappers import (
    map_item_to_resolver,
    map_item_values,
    map_layer_to_resolver,
    map_layer_values,
)
from profiles.workspace.origin import WriteOrigin, origin_of
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


def _entry(layer: Layer) -> dict:
    """Return the layer's own SPEC §2 entry (without items)."""
    entry = map_layer_to_resolver(layer, [])
    entry.pop("items", None)
    return entry


def layer_create(
    *,
    document: dict,
    user=None,
    governed: bool = False,
    origin: WriteOrigin | None = None,
    api_key=None,
) -> Layer:
    """Create a layer (with the items its entry gives); raise ``EntryInvalid``, ``Conflict``
    or ``ChangeRequestRequired`` (protected profiles would read it). ``governed`` is staff's
    to set, never a scoped API key's (``api_key``: the API request's, None elsewhere);
    ``GovernedByStaff`` otherwise."""
    origin = origin_of(origin)
    layer = Layer()
    try:
        with workspace_write():
            raise_if_invalid(validate_layer(document), layer)
            assign(layer, map_layer_values(document))
            if governed:
                governed_change_check(user=user, key=api_key)
            layer.governed = governed
            entry = _entry(layer)
            protection_check(
                [EntityChange("layer", layer.key, None, entry)], user=user, origin=origin
            )
            save_row(layer, user=origin.author or user)
            # The items as an import writes them: rows and history records in bulk.
            rows = [
                {**map_item_values(item), "layer_id": layer.pk, "position": position}
                for position, item in enumerate(document.get("items") or [])
            ]
            BulkWriter(user=author(origin.author or user), now=timezone.now()).create(Item, rows)
            workspace_changed()
            activity_record_many(
                [
                    EntityChange(
                        "layer",
                        layer.key,
                        None,
                        {**entry, **({"governed": True} if governed else {})},
                    ),
                    *(
                        EntityChange(
                            "item",
                            layer.key,
                            None,
                            map_item_to_resolver(Item(**values)),
                            path=values["path"],
                        )
                        for values in (
                            map_item_values(item) for item in document.get("items") or []
                        )
                    ),
                ],
                user=user,
                origin=origin,
            )
    except IntegrityError as exc:
        raise conflict_for(layer) from exc
    return layer


def layer_update(
    *,
    key: str,
    changes: dict,
    replace: bool = False,
    user=None,
    if_match: str | None = None,
    governed: bool | None = None,
    origin: WriteOrigin | None = None,
    api_key=None,
) -> Layer:
    """Change a layer's own fields: ``changes`` replace the entry's (None: back to the
    default); with ``replace`` they are the whole entry. Items are not touched. ``governed``
    (None: unchanged) is staff's to set, never a scoped API key's (``api_key``: the API
    request's, None elsewhere; ``GovernedByStaff`` otherwise). Raises
    ``ChangeRequestRequired`` when a field the answer depends on changes while protected
    profiles read the layer."""
    if "items" in changes:
        raise ValueError("a layer update does not change items (use the item services)")
    origin = origin_of(origin)
    layer = None
    try:
        with workspace_write():
            layer = layer_get(key=key, lock=True)
            before = _entry(layer)
            was_governed = layer.governed
            entry = {"key": key} if replace else dict(before)
            document = {**entry, **changes}
            raise_if_invalid(validate_layer(document), layer)
            # A malformed body is refused as such, whatever its If-Match.
            check_if_match(if_match, layer_etag(layer))
            changed = assign(layer, map_layer_values(document))
            if governed is not None and governed != layer.governed:
                governed_change_check(user=user, key=api_key)
                layer.governed = governed
                changed.append("governed")
            if changed:
                after = _entry(layer)
                change = EntityChange("layer", key, before, after)
                protection_check([change], user=user, origin=origin)
                layer.content_token = new_token()
                save_row(layer, user=origin.author or user)
                # A new key changes the documents of the profiles with a rule for it.
                workspace_changed(profiles="key" in changed)
                # ``governed`` is not a field of the entry: the log shows it beside them.
                flag = (
                    ({"governed": was_governed}, {"governed": layer.governed})
                    if "governed" in changed
                    else ({}, {})
                )
                activity_record(
                    kind="layer",
                    key=layer.key,
                    before={**before, **flag[0]},
                    after={**after, **flag[1]},
                    user=user,
                    origin=origin,
                )
    except IntegrityError as exc:
        raise conflict_for(layer) from exc
    return layer


def layer_delete(
    *, key: str, user=None, if_match: str | None = None, origin: WriteOrigin | None = None
) -> None:
    """Delete a layer and its items; raise ``Conflict`` while a profile has a rule for it and
    ``ChangeRequestRequired`` while protected profiles read it."""
    origin = origin_of(origin)
    with workspace_write():
        layer = layer_get(key=key, lock=True)
        check_if_match(if_match, layer_etag(layer))
        users = sorted(Rule.objects.filter(layer=layer).values_list("profile__key", flat=True))
        if users:
            raise Conflict(f'layer "{key}" has rules in profiles: ' + ", ".join(users))
        before = _entry(layer)
        protection_check([EntityChange("layer", key, before, None)], user=user, origin=origin)
        # The items first, in bulk with their history: the cascade would record each alone.
        items = list(layer.items.order_by("pk"))
        BulkWriter(user=author(origin.author or user), now=timezone.now()).delete(
            Item, [item.pk for item in items]
        )
        delete_row(layer, user=origin.author or user)
        workspace_changed()
        activity_record_many(
            [
                EntityChange("layer", key, before, None),
                *(
                    EntityChange("item", key, map_item_to_resolver(item), None, path=item.path)
                    for item in items
                ),
            ],
            user=user,
            origin=origin,
        )

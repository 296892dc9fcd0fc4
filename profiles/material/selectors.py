"""ORM reads of the material pages: who uses a consumer or a layer, a layer's items."""

from django.db.models import Q, QuerySet

from profiles.models import Item, Layer, Profile, Rule


def consumer_profile_keys_get(*, consumers) -> dict[int, list[str]]:
    """Return, by consumer id, the keys of the profiles that use each consumer, sorted."""
    keys: dict[int, list[str]] = {}
    for consumer_id, key in (
        Profile.objects.filter(consumer__in=list(consumers))
        .order_by("key")
        .values_list("consumer_id", "key")
    ):
        keys.setdefault(consumer_id, []).append(key)
    return keys


def layer_item_count(*, layer: Layer) -> int:
    """Return how many items the layer has."""
    return Item.objects.filter(layer=layer).count()


def layer_rule_profiles_list(*, key: str) -> list[tuple[str, str | None]]:
    """Return the (key, environment) of the profiles that have a rule for the layer ``key``,
    sorted by key (one query)."""
    return list(
        Rule.objects.filter(layer__key=key)
        .order_by("profile__key")
        .values_list("profile__key", "profile__environment")
    )


def item_list_matching(*, layer: Layer, query: str = "") -> QuerySet[Item]:
    """Return the layer's items in document order; with ``query``, those whose path, title or
    body contains it (any case)."""
    items = Item.objects.filter(layer=layer).order_by("position", "id")
    if query:
        items = items.filter(
            Q(path__icontains=query) | Q(title__icontains=query) | Q(body__icontains=query)
        )
    return items


def item_of_layer_get(*, layer: Layer, item_id: int) -> Item:
    """Return the layer's item with this id (its layer attached); raise Item.DoesNotExist."""
    item = Item.objects.get(pk=item_id, layer=layer)
    item.layer = layer
    return item

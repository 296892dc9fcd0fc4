"""What the studio suggests where it would otherwise ask for free text: the objectives,
consumers and input keys the workspace already uses, and the metadata fields a layer's
items actually have (with counts), so a currentness field or an item filter can be picked
instead of guessed ("updated" when the items say "date" makes every item undated)."""

from collections import Counter


def metadata_field_counts(items: list[dict]) -> list[tuple[str, int]]:
    """Return ``(field, number of items that have it)``, the most common first."""
    counts: Counter[str] = Counter()
    for item in items:
        counts.update((item.get("metadata") or {}).keys())
    return sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))


def layer_entry(document: dict, key: str | None) -> dict | None:
    return next((layer for layer in document["layers"] if layer["key"] == key), None)


def objectives_used(document: dict) -> list[tuple[str, int]]:
    """Return the objectives of the profiles and the layers' conditions, with how many
    profiles and layers name each."""
    counts: Counter[str] = Counter(profile["objective"] for profile in document["profiles"])
    for layer in document["layers"]:
        counts.update((layer.get("appliesTo") or {}).get("objectives") or [])
    return sorted(counts.items())


def input_keys_used(document: dict) -> list[tuple[str, int]]:
    """Return the input keys the layers require or filter their items by, with counts."""
    counts: Counter[str] = Counter()
    for layer in document["layers"]:
        keys = set(layer.get("requiresInput") or []) | set((layer.get("itemFilter") or {}).values())
        counts.update(keys)
    return sorted(counts.items())


def fields_on_no_item(fields, counts: list[tuple[str, int]]) -> list[str]:
    """Return the ``fields`` no item has (in the order given)."""
    present = {field for field, _count in counts}
    return [field for field in fields if field not in present]


def _times(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def layer_field_suggestions(
    document: dict, *, item_fields: list[tuple[str, int]], items_count: int
) -> dict[str, list[tuple[str, str]]]:
    """Return the layer form's suggestions: field name -> ``(value, label)``."""
    return {
        "objectives": [
            (value, f"named {_times(count, 'time')}") for value, count in objectives_used(document)
        ],
        "consumers": [
            (consumer["key"], consumer.get("name") or consumer["key"])
            for consumer in document["consumers"]
        ],
        "requires_input_text": [
            (value, f"used by {_times(count, 'layer')}")
            for value, count in input_keys_used(document)
        ],
        "item_filter_text": [
            (field, f"on {count} of {items_count} items") for field, count in item_fields
        ],
    }

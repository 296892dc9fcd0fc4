"""What a write changes, entity by entity: consumers, layers, items and profiles (with rules).

An ``EntityChange`` is one entity's SPEC §2 entry before and after a write (``None``: it did
not exist / no longer exists); a layer's entry leaves its items out (each item is an entity of
its own). The same list serves the protection check (``profiles.versioning.protection``), the
activity log (``profiles.activity.records``), an import's dry run and a change set.

Entries are compared in their canonical form, the one the mappers give for stored rows
(``canonical_entry``), so a file that spells a default out (``availability: auto``) changes
nothing.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from profiles.workspace.mappers import (
    canonical_string,
    json_safe,
    map_consumer_to_resolver,
    map_consumer_values,
    map_item_to_resolver,
    map_item_values,
    map_layer_to_resolver,
    map_layer_values,
    map_profile_to_resolver,
    map_profile_values,
    map_rule_values,
)

KINDS = ("consumer", "layer", "item", "profile")
OPS = ("create", "update", "delete")
# Values longer than this are cut in what a diff shows (``entry_changes``).
TEXT_KEPT = 2_000
# Objects whose keys are compared one by one (others are compared as one value).
_NESTED = {"itemFilter", "metadata", "rules", "currentness", "appliesTo", "render"}


@dataclass(frozen=True)
class EntityChange:
    """One entity's entry before and after (``key``: an item's layer key, with ``path``)."""

    kind: str
    key: str
    before: dict | None
    after: dict | None
    path: str | None = None

    @property
    def op(self) -> str:
        if self.before is None:
            return "create"
        if self.after is None:
            return "delete"
        return "update"

    @property
    def ref(self) -> str:
        """Return the entity's name in messages and bases: ``layer:tickets``, ``item:kb/a``."""
        return f"{self.kind}:{self.key}/{self.path}" if self.path else f"{self.kind}:{self.key}"

    def as_dict(self, *, full_text: bool = False) -> dict:
        """Return it as a dry run lists it: ``{kind, op, key | layer+path, fields}``."""
        where = {"layer": self.key, "path": self.path} if self.kind == "item" else {"key": self.key}
        return {
            "kind": self.kind,
            "op": self.op,
            **where,
            "fields": entry_changes(self.before, self.after, full_text=full_text),
        }


# --- canonical entries ---------------------------------------------------------------------


def canonical_entry(kind: str, entry: dict) -> dict:
    """Return a (valid) entry as the mappers give it for the stored row it would become.

    The mappers read attributes only, so the row is a namespace of the values the row would
    hold, not a model instance (an import's 50,000 items are canonicalised here).
    """
    if kind == "consumer":
        return map_consumer_to_resolver(_Row(**map_consumer_values(entry)))
    if kind == "layer":
        document = map_layer_to_resolver(_Row(**map_layer_values(entry)), [])
        document.pop("items", None)
        return document
    if kind == "item":
        return map_item_to_resolver(_Row(**map_item_values(entry)))
    if kind == "profile":
        values = map_profile_values(entry)
        consumer = values.pop("consumer")
        layer_keys, rules = {}, []
        for index, (layer_key, rule) in enumerate((entry.get("rules") or {}).items()):
            layer_keys[index + 1] = canonical_string(layer_key)
            rules.append(_Row(layer_id=index + 1, **map_rule_values(rule)))
        return map_profile_to_resolver(
            _Row(**values), rules, consumer_key=consumer, layer_keys=layer_keys
        )
    raise ValueError(f"unknown kind {kind!r}")


class _Row(SimpleNamespace):
    """The values of a row as the mappers read them (attributes)."""


def _layer_entry(layer: dict) -> dict:
    return {name: value for name, value in layer.items() if name != "items"}


# --- workspace differences -----------------------------------------------------------------


def _by_key(entries, field: str = "key") -> dict:
    return {canonical_string(entry[field]): entry for entry in entries or []}


def _compare(kind: str, before: dict, after: dict, *, canonical: bool, key=None):
    """Yield the changes between two keyed maps of entries (after's order, then deletions)."""
    for name, entry in after.items():
        new = canonical_entry(kind, entry) if canonical else entry
        old = before.get(name)
        if old is None:
            yield new, None, name
        elif old != new:
            yield new, old, name
    for name, entry in before.items():
        if name not in after:
            yield None, entry, name


def workspace_entity_changes(before: dict, after: dict, *, canonical: bool = True) -> list:
    """Return the ``EntityChange``s that turn workspace document ``before`` into ``after``.

    ``before`` is in canonical form (the stored workspace, ``map_rows_to_document``); ``after``
    is any valid document (an import's target), made canonical here unless ``canonical`` is
    False. Order: consumers, layers, items (per layer), profiles; within a kind the order of
    ``after``, then what it no longer has.
    """
    return list(_changes(before, after, canonical=canonical))


def _changes(before: dict, after: dict, *, canonical: bool) -> Iterator[EntityChange]:
    for new, old, key in _compare(
        "consumer",
        _by_key(before.get("consumers")),
        _by_key(after.get("consumers")),
        canonical=canonical,
    ):
        yield EntityChange("consumer", key, old, new)
    old_layers = _by_key(before.get("layers"))
    new_layers = _by_key(after.get("layers"))
    for new, old, key in _compare(
        "layer",
        {key: _layer_entry(layer) for key, layer in old_layers.items()},
        {key: _layer_entry(layer) for key, layer in new_layers.items()},
        canonical=canonical,
    ):
        yield EntityChange("layer", key, old, new)
    for layer_key in [*new_layers, *(key for key in old_layers if key not in new_layers)]:
        old_items = _by_key((old_layers.get(layer_key) or {}).get("items"), "path")
        new_items = _by_key((new_layers.get(layer_key) or {}).get("items"), "path")
        for new, old, path in _compare("item", old_items, new_items, canonical=canonical):
            yield EntityChange("item", layer_key, old, new, path=path)
    for new, old, key in _compare(
        "profile",
        _by_key(before.get("profiles")),
        _by_key(after.get("profiles")),
        canonical=canonical,
    ):
        yield EntityChange("profile", key, old, new)


# --- field differences ---------------------------------------------------------------------


def _kept(value, full_text: bool):
    if not full_text and isinstance(value, str) and len(value) > TEXT_KEPT:
        return f"{value[:TEXT_KEPT]} … ({len(value) - TEXT_KEPT:,} more characters)"
    return value


def _walk(path: str, before, after, out: list, *, nested: bool, full_text: bool) -> None:
    if nested and isinstance(before, dict) and isinstance(after, dict):
        for key in sorted({*before, *after}, key=str):
            _walk(
                f"{path}.{key}",
                before.get(key),
                after.get(key),
                out,
                nested=True,
                full_text=full_text,
            )
    elif before != after:
        out.append({"path": path, "from": _kept(before, full_text), "to": _kept(after, full_text)})


def entry_changes(before: Any, after: Any, *, full_text: bool = False) -> list[dict]:
    """Return what differs between two SPEC §2 entries as ``[{path, from, to}]``.

    Paths are relative to the entry (``itemFilter.customer_id``, ``rules.kb.maxItems``,
    ``metadata.updated``); ``None`` on a side is "not given", so a created entry lists every
    field it gives and a deleted one every field it had. A layer's ``items`` are left out
    (each item is an entity of its own). Texts longer than ``TEXT_KEPT`` characters are cut
    unless ``full_text``.
    """
    before = json_safe(before or {})
    after = json_safe(after or {})
    out: list[dict] = []
    for name in sorted({*before, *after}, key=str):
        if name == "items":
            continue
        _walk(
            str(name),
            before.get(name),
            after.get(name),
            out,
            nested=name in _NESTED,
            full_text=full_text,
        )
    return out

"""The change-set document algebra: a set's entries applied to a SPEC §2 workspace document.

Pure: documents in, documents out (neither is modified), no query and no model.
``document_with_changes`` applies a set and validates the result as a whole (the engine's
validator, each issue named ``changes[i]…`` when it is in an entity the set writes);
``set_entity_changes`` and ``set_affected_profiles`` say what it changes and whose answers it
may change.
"""

import re

from profiles.safechange.change_set_entries import (
    SECTIONS,
    ChangeSetInvalid,
    SetEntry,
    applied_order,
    change_set_entries,
    entry_at,
)
from profiles.versioning.protection import profiles_affected
from profiles.workspace.entity_changes import EntityChange, canonical_entry
from profiles.workspace.validation import (
    document_issues,
    rules_merged,
    validate_consumer,
    validate_item,
    validate_layer,
    validate_profile,
)
from resolver import ValidationIssue

# --- the document with the changes ---------------------------------------------------------


def _without_nulls(entry: dict, value: dict) -> dict:
    merged = {**entry, **value}
    return {name: field for name, field in merged.items() if field is not None}


def _profile_updated(entry: dict, value: dict) -> dict:
    result = _without_nulls(entry, {name: v for name, v in value.items() if name != "rules"})
    if "rules" in value and value["rules"] is None:
        result.pop("rules", None)  # every layer back on the default rule
    elif isinstance(value.get("rules"), dict):
        rules = rules_merged(entry.get("rules"), value["rules"])
        if rules:
            result["rules"] = rules
        else:
            result.pop("rules", None)
    return result


def _position(entries: list, field: str, name: str) -> int | None:
    for position, entry in enumerate(entries):
        if isinstance(entry, dict) and entry.get(field) == name:
            return position
    return None


def _applied(document: dict, entries: list[SetEntry]) -> tuple[dict, list[ValidationIssue]]:
    """Return the document with the entries applied (in ``applied_order``) and the issues of
    entries naming entities that do not exist (or creating ones that do)."""
    result = dict(document)
    sections = {
        section: list(document.get(section) or [])
        for section in ("consumers", "layers", "profiles")
    }
    result.update(sections)
    layers = sections["layers"]
    copied_layers: set[int] = set()  # positions of layers whose items list is this result's
    issues = []
    for entry in applied_order(entries):
        if entry.kind == "item":
            position = _position(layers, "key", entry.key)
            if position is None:
                issues.append(
                    ValidationIssue(entry_at(entry.index, "layer"), f'no layer "{entry.key}"')
                )
                continue
            if position not in copied_layers:
                layers[position] = {
                    **layers[position],
                    "items": list(layers[position].get("items") or []),
                }
                copied_layers.add(position)
            target, field = layers[position]["items"], "path"
            name = entry.path
        else:
            target, field, name = sections[SECTIONS[entry.kind]], "key", entry.key
        where = _position(target, field, name)
        noun = (
            f'{entry.kind} "{entry.key}/{entry.path}"'
            if entry.kind == "item"
            else (f'{entry.kind} "{entry.key}"')
        )
        if entry.op == "create":
            if where is not None:
                issues.append(ValidationIssue(entry_at(entry.index), f"{noun} exists already"))
                continue
            created = dict(entry.value)
            if entry.kind == "layer":
                created["items"] = list(created.get("items") or [])
            target.append(created)
            if entry.kind == "layer":
                copied_layers.add(len(target) - 1)
        elif where is None:
            issues.append(
                ValidationIssue(
                    entry_at(entry.index, "path" if entry.kind == "item" else "key"), f"no {noun}"
                )
            )
        elif entry.op == "delete":
            del target[where]
            if entry.kind == "layer":
                copied_layers = {p - 1 if p > where else p for p in copied_layers if p != where}
        elif entry.kind == "profile":
            target[where] = _profile_updated(target[where], entry.value)
        else:
            target[where] = _without_nulls(target[where], entry.value)
    return result, issues


_DOCUMENT_PATH = re.compile(r"^(consumers|layers|profiles)\[(\d+)\](?:\.items\[(\d+)\])?")


def _entity_at(document: dict, match: re.Match) -> tuple[str | None, str | None]:
    """Return the refs of the entity a document path points into (item, then its layer)."""
    section, position, item = match.group(1), int(match.group(2)), match.group(3)
    entries = document.get(section) or []
    if position >= len(entries) or not isinstance(entries[position], dict):
        return None, None
    entry = entries[position]
    kind = {"consumers": "consumer", "layers": "layer", "profiles": "profile"}[section]
    own = f"{kind}:{entry.get('key')}"
    if item is None:
        return own, None
    items = entry.get("items") or []
    if int(item) < len(items) and isinstance(items[int(item)], dict):
        return f"item:{entry.get('key')}/{items[int(item)].get('path')}", own
    return None, own


def issue_of_change(issue: ValidationIssue, document: dict, indexes: dict[str, int]):
    """Return the issue at ``changes[i].value…`` when it is in an entity the set writes."""
    match = _DOCUMENT_PATH.match(issue.path or "")
    if match is None:
        return issue
    item_ref, layer_ref = _entity_at(document, match)
    if item_ref in indexes:
        rest = issue.path[match.end() :]
        return ValidationIssue(f"changes[{indexes[item_ref]}].value{rest}", issue.message)
    ref = item_ref if layer_ref is None else layer_ref
    if ref in indexes:
        start = match.end(2) + 1
        rest = issue.path[start:]
        return ValidationIssue(f"changes[{indexes[ref]}].value{rest}", issue.message)
    return issue


def _entry_issues(entry: SetEntry, result_entry: dict, layer_keys, consumer_keys) -> list:
    """Return the entry validators' issues of the entity as the set leaves it."""
    if entry.kind == "consumer":
        issues = validate_consumer(result_entry)
    elif entry.kind == "layer":
        issues = validate_layer(
            result_entry
            if entry.op == "create"
            else {name: value for name, value in result_entry.items() if name != "items"}
        )
    elif entry.kind == "item":
        issues = validate_item(result_entry)
    else:
        issues = validate_profile(result_entry, layer_keys=layer_keys, consumer_keys=consumer_keys)
    return [
        ValidationIssue(
            entry_at(entry.index, f"value.{issue.path}" if issue.path else "value"), issue.message
        )
        for issue in issues
    ]


class EntityIndex:
    """The entities of a workspace document by ref (``layer:kb``, ``item:kb/a``)."""

    def __init__(self, document: dict):
        self.entries: dict[str, dict] = {}
        for kind, section in SECTIONS.items():
            for entry in document.get(section) or []:
                if isinstance(entry, dict):
                    self.entries[f"{kind}:{entry.get('key')}"] = entry
        for layer in document.get("layers") or []:
            if isinstance(layer, dict):
                for item in layer.get("items") or []:
                    if isinstance(item, dict):
                        self.entries[f"item:{layer.get('key')}/{item.get('path')}"] = item

    def get(self, ref: str) -> dict | None:
        return self.entries.get(ref)


def document_validated(document: dict, entries: list[SetEntry]) -> dict:
    """Return the document with the entries applied; raise ChangeSetInvalid naming each."""
    result, issues = _applied(document, entries)
    if issues:
        raise ChangeSetInvalid(issues)
    index = EntityIndex(result)
    layer_keys = {layer.get("key") for layer in result["layers"] if isinstance(layer, dict)}
    consumer_keys = {c.get("key") for c in result["consumers"] if isinstance(c, dict)}
    for entry in entries:
        if entry.op != "delete":
            issues += _entry_issues(entry, index.get(entry.ref), layer_keys, consumer_keys)
    if issues:
        raise ChangeSetInvalid(issues)
    indexes = {entry.ref: entry.index for entry in entries}
    issues = [issue_of_change(issue, result, indexes) for issue in document_issues(result)]
    if issues:
        raise ChangeSetInvalid(issues)
    return result


def document_with_changes(document: dict, changes) -> dict:
    """Return the workspace document with a set's ``changes`` made (neither is modified).

    ``document`` is a stored workspace (``cache.workspace_get().document`` or
    ``workspace_export()``); raise ChangeSetInvalid (paths ``changes[i]…``, or the document's
    path of an issue in an entity the set does not write) when the set does not apply or the
    result is not a valid workspace.
    """
    if isinstance(changes, list) and not changes:
        return document  # nothing to change (a request must hold at least one change)
    return document_validated(document, change_set_entries(changes))


# --- what a set changes ----------------------------------------------------------------------


def _own(kind: str, entry: dict | None) -> dict | None:
    if entry is None:
        return None
    if kind == "layer":
        return {name: value for name, value in entry.items() if name != "items"}
    return entry


def set_entity_changes(before: dict, after: dict, entries: list[SetEntry]) -> list[EntityChange]:
    """Return the ``EntityChange``s of the entries (the items of a created or deleted layer
    included), from the stored document ``before`` to the set's result ``after``."""
    old, new = EntityIndex(before), EntityIndex(after)
    changes = []
    for entry in entries:
        was = _own(entry.kind, old.get(entry.ref))
        will = new.get(entry.ref)
        will = None if will is None else canonical_entry(entry.kind, _own(entry.kind, will))
        changes.append(EntityChange(entry.kind, entry.key, was, will, path=entry.path))
        if entry.kind == "layer" and entry.op in ("create", "delete"):
            layer = (new if entry.op == "create" else old).get(entry.ref) or {}
            for item in layer.get("items") or []:
                entry_item = canonical_entry("item", item)
                changes.append(
                    EntityChange(
                        "item",
                        entry.key,
                        entry_item if entry.op == "delete" else None,
                        entry_item if entry.op == "create" else None,
                        path=entry_item["path"],
                    )
                )
    return changes


def _profiles_by_key(document: dict) -> dict[str, dict]:
    return {profile["key"]: profile for profile in document.get("profiles") or []}


def _layers_by_key(document: dict) -> dict[str, dict]:
    return {layer["key"]: layer for layer in document.get("layers") or []}


def set_affected_profiles(before: dict, after: dict, changes: list[EntityChange]) -> list[str]:
    """Return, sorted, every profile whose answer the changes may change: the profiles they
    change, and those that read what they change before or after (every layer's items)."""
    affected = {change.key for change in changes if change.kind == "profile"}
    for document in (before, after):
        affected |= profiles_affected(
            changes,
            profiles=_profiles_by_key(document),
            layers=_layers_by_key(document),
            governed=None,
        )
    return sorted(affected)

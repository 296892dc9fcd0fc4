"""Rows ↔ the SPEC §2 workspace document. No ORM queries past this point.

``map_rows_to_document`` builds the document the engine compiles and the export writes;
``map_document_to_values`` turns a validated document into plain field values for the rows.
Both directions keep exactly what the document gave: a rule field that was not given stays
NULL and is not exported.
"""

import datetime as dt
import math
from typing import Any

from profiles.models import Consumer, Item, Layer, Profile, Rule
from profiles.workspace.fields import CURRENTNESS_FIELDS, RULE_FIELDS
from profiles.workspace.selectors import WorkspaceRows, WorkspaceValues
from resolver.values import canonical

# --- rows -> document -------------------------------------------------------------------


def _number(value: float) -> int | float:
    """Return an integral float as an int so exported numbers read as they were written."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def map_consumer_to_resolver(consumer: Consumer) -> dict:
    document: dict[str, Any] = {"key": consumer.key}
    if consumer.name:
        document["name"] = consumer.name
    render: dict[str, Any] = {}
    if consumer.render_format is not None:
        render["format"] = consumer.render_format
    if consumer.include_currentness is not None:
        render["includeCurrentness"] = consumer.include_currentness
    if render:
        document["render"] = render
    return document


def map_item_to_resolver(item: Item) -> dict:
    return map_item_columns_to_resolver(item.path, item.title, item.body, item.metadata)


def map_item_columns_to_resolver(path: str, title: str, body: str, metadata) -> dict:
    """Return an item's SPEC §2 entry from its column values (a row read with plain SQL)."""
    document: dict[str, Any] = {"path": path}
    if title:
        document["title"] = title
    if body:
        document["body"] = body
    if metadata:
        document["metadata"] = metadata
    return document


def map_layer_to_resolver(layer: Layer, items: list[Item]) -> dict:
    document: dict[str, Any] = {"key": layer.key}
    if layer.name:
        document["name"] = layer.name
    if layer.description:
        document["description"] = layer.description
    if layer.availability and layer.availability != "auto":
        document["availability"] = layer.availability
    applies_to = {}
    if layer.applies_to_objectives:
        applies_to["objectives"] = list(layer.applies_to_objectives)
    if layer.applies_to_consumers:
        applies_to["consumers"] = list(layer.applies_to_consumers)
    if applies_to:
        document["appliesTo"] = applies_to
    if layer.requires_input:
        document["requiresInput"] = list(layer.requires_input)
    if layer.item_filter:
        # jsonb reorders keys; the engine reads itemFilter in field-name order anyway.
        document["itemFilter"] = dict(sorted(layer.item_filter.items()))
    document["items"] = [map_item_to_resolver(item) for item in items]
    return document


def map_rule_to_resolver(rule: Rule) -> dict:
    """Return the rule's given fields only (an empty dict is a rule that changes nothing)."""
    document: dict[str, Any] = {}
    for doc_field, model_field in RULE_FIELDS.items():
        value = getattr(rule, model_field)
        if value is None:
            continue
        document[doc_field] = _number(value) if doc_field == "priority" else value
    if rule.currentness_max_age_days is not None:
        currentness = {}
        for doc_field, model_field in CURRENTNESS_FIELDS.items():
            value = getattr(rule, model_field)
            if value is not None:
                currentness[doc_field] = value
        document["currentness"] = currentness
    return document


def map_profile_to_resolver(
    profile: Profile, rules: list[Rule], *, consumer_key: str, layer_keys: dict[int, str]
) -> dict:
    """Return the profile's document; keys of related rows come from the maps, not queries."""
    document: dict[str, Any] = {"key": profile.key}
    if profile.name:
        document["name"] = profile.name
    document["consumer"] = consumer_key
    document["objective"] = profile.objective
    if profile.environment is not None:
        document["environment"] = profile.environment
    document["budget"] = profile.budget
    if profile.description:
        document["description"] = profile.description
    if rules:
        document["rules"] = {
            layer_keys.get(rule.layer_id, ""): map_rule_to_resolver(rule) for rule in rules
        }
    return document


def map_rows_to_document(rows: WorkspaceRows) -> dict:
    """Return the SPEC §2 workspace document of these rows, in document order."""
    return _workspace_document(
        rows.consumers,
        [(layer, layer.workspace_items) for layer in rows.layers],
        [(profile, profile.workspace_rules) for profile in rows.profiles],
    )


def map_values_to_document(values: WorkspaceValues) -> dict:
    """Return the workspace document of value rows (``WorkspaceValues``), in document order."""
    return _workspace_document(
        values.consumers,
        [(layer, values.items.get(layer.id, [])) for layer in values.layers],
        [(profile, values.rules.get(profile.id, [])) for profile in values.profiles],
    )


def _workspace_document(consumers, layers, profiles) -> dict:
    """The document of consumer rows, (layer, its items) and (profile, its rules) pairs; the
    rows may be model instances or value rows (the mappers read the same attributes)."""
    consumer_keys = {consumer.id: consumer.key for consumer in consumers}
    layer_keys = {layer.id: layer.key for layer, _ in layers}
    return {
        "version": 1,
        "consumers": [map_consumer_to_resolver(consumer) for consumer in consumers],
        "layers": [map_layer_to_resolver(layer, items) for layer, items in layers],
        "profiles": [
            map_profile_to_resolver(
                profile,
                rules,
                consumer_key=consumer_keys.get(profile.consumer_id, ""),
                layer_keys=layer_keys,
            )
            for profile, rules in profiles
        ],
    }


# --- document -> row values -------------------------------------------------------------


def canonical_string(value: Any) -> str:
    """Return a scalar as the canonical string of SPEC §4.2 (strings as is), as the engine does."""
    if value.__class__ is str:  # the common case, first (an import maps every item)
        return value
    text = canonical(value)
    return str(value) if text is None else text


def _optional_string(value: Any) -> str | None:
    return None if value is None else canonical_string(value)


# Values json_safe returns as they are (checked by exact type first: the common case).
_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def json_safe(value: Any) -> Any:
    """Return metadata with YAML dates as ISO strings, so it fits a JSON column unchanged."""
    kind = value.__class__
    if kind in _JSON_SCALARS:
        return value
    if kind is dict:
        return {
            key if key.__class__ is str else canonical_string(key): (
                item if item.__class__ in _JSON_SCALARS else json_safe(item)
            )
            for key, item in value.items()
        }
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {canonical_string(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return value


def map_consumer_values(document: dict) -> dict:
    render = document.get("render") or {}
    return {
        "key": canonical_string(document["key"]),
        "name": _optional_string(document.get("name")) or "",
        "render_format": render.get("format"),
        "include_currentness": render.get("includeCurrentness"),
    }


def map_layer_values(document: dict) -> dict:
    applies_to = document.get("appliesTo") or {}
    return {
        "key": canonical_string(document["key"]),
        "name": _optional_string(document.get("name")) or "",
        "description": _optional_string(document.get("description")) or "",
        "availability": document.get("availability") or "auto",
        "applies_to_objectives": [
            canonical_string(value) for value in applies_to.get("objectives") or []
        ],
        "applies_to_consumers": [
            canonical_string(value) for value in applies_to.get("consumers") or []
        ],
        "requires_input": [
            canonical_string(value) for value in document.get("requiresInput") or []
        ],
        "item_filter": {
            canonical_string(field): canonical_string(key)
            for field, key in (document.get("itemFilter") or {}).items()
        },
    }


def map_item_values(document: dict) -> dict:
    return {
        "path": canonical_string(document["path"]),
        "title": _optional_string(document.get("title")) or "",
        "body": _optional_string(document.get("body")) or "",
        "metadata": json_safe(document.get("metadata") or {}),
    }


def map_profile_values(document: dict) -> dict:
    """Return the profile's own field values; ``consumer`` is the consumer's key."""
    return {
        "key": canonical_string(document["key"]),
        "name": _optional_string(document.get("name")) or "",
        "consumer": canonical_string(document["consumer"]),
        "objective": canonical_string(document["objective"]),
        "environment": _optional_string(document.get("environment")),
        "budget": document["budget"],
        "description": _optional_string(document.get("description")) or "",
    }


def map_rule_values(document: dict | None) -> dict:
    """Return every rule model field, None where the document did not give the field."""
    document = document or {}
    values: dict[str, Any] = {}
    for doc_field, model_field in RULE_FIELDS.items():
        value = document.get(doc_field)
        if doc_field == "priority" and value is not None:
            value = float(value)
        if doc_field == "facets" and value is not None:
            value = [canonical_string(facet) for facet in value]
        values[model_field] = value
    currentness = document.get("currentness") or {}
    for doc_field, model_field in CURRENTNESS_FIELDS.items():
        values[model_field] = currentness.get(doc_field)
    return values


# --- scenarios ----------------------------------------------------------------------------


def map_scenario_to_document(scenario) -> dict:
    """Return a saved scenario as the API shows it (every field, ``default`` included)."""
    return {
        "name": scenario.name,
        "profile": scenario.profile.key,
        "description": scenario.description,
        "input": json_safe(scenario.input or {}),
        "now": scenario.now,
        "format": scenario.format,
        "availability": dict(scenario.availability or {}),
        "default": scenario.is_default,
    }


def map_scenario_values(document: dict) -> dict:
    """Return a scenario's field values (``profile`` left out: the caller looks it up)."""
    now = document.get("now")
    return {
        "name": canonical_string(document["name"]),
        "input": json_safe(document.get("input") or {}),
        "now": None if now is None else canonical_string(now),
        "description": _optional_string(document.get("description")) or "",
        "format": document.get("format"),
        "availability": json_safe(document.get("availability") or {}),
        "is_default": bool(document.get("default", False)),
    }

"""One validation for every writer (admin, forms, API, import): the engine's own validator.

``document_issues`` runs ``resolver.validate_workspace`` and adds the few limits of storage
(numbers that fit the columns, JSON-representable metadata), with the same "path: message"
shape. ``instance_issues`` validates one edited row in the context of the stored workspace:
it substitutes the row in the workspace document, validates, and maps the new issues back to
model fields, so a form shows the engine's message on the field it concerns.
"""

import math
import re
from typing import Any

from profiles.mappers import CURRENTNESS_FIELDS, RULE_FIELDS, map_rows_to_document
from profiles.models import Consumer, Item, Layer, Profile, Rule
from profiles.selectors import WorkspaceRows, workspace_rows_get
from resolver import ValidationIssue, validate_workspace

# PostgreSQL's integer column (PositiveIntegerField) holds at most this.
MAX_STORED_INTEGER = 2_147_483_647


class WorkspaceValidationError(Exception):
    """The workspace (or an edit of it) is invalid; ``issues`` lists every error with its path."""

    def __init__(self, issues: list[ValidationIssue]):
        self.issues = list(issues)
        super().__init__("\n".join(str(issue) for issue in self.issues))

    @property
    def messages(self) -> list[str]:
        return [str(issue) for issue in self.issues]

    def as_dict(self) -> dict:
        """Return the first error in the wire shape, with every issue listed beside it."""
        first = self.issues[0] if self.issues else ValidationIssue("", "invalid workspace")
        return {
            "error": {
                "code": "INVALID_WORKSPACE",
                "message": str(first),
                "path": first.path,
                "issues": [{"path": issue.path, "message": issue.message} for issue in self.issues],
            }
        }


def _storage_issues(document: Any) -> list[ValidationIssue]:
    """Return what the engine accepts but the database cannot store faithfully."""
    issues: list[ValidationIssue] = []
    if not isinstance(document, dict):
        return issues

    def check_int(value: Any, path: str) -> None:
        if isinstance(value, int) and not isinstance(value, bool) and value > MAX_STORED_INTEGER:
            issues.append(ValidationIssue(path, f"must be at most {MAX_STORED_INTEGER}"))

    def check_json(value: Any, path: str) -> None:
        if isinstance(value, float) and not math.isfinite(value):
            issues.append(ValidationIssue(path, "must be a finite number"))
        elif isinstance(value, dict):
            for key, item in value.items():
                check_json(item, f"{path}.{key}")
        elif isinstance(value, list):
            for index, item in enumerate(value):
                check_json(item, f"{path}[{index}]")

    layers = document.get("layers")
    for layer_index, layer in enumerate(layers if isinstance(layers, list) else []):
        items = layer.get("items") if isinstance(layer, dict) else None
        for item_index, item in enumerate(items if isinstance(items, list) else []):
            if isinstance(item, dict) and isinstance(item.get("metadata"), dict):
                path = f"layers[{layer_index}].items[{item_index}].metadata"
                check_json(item["metadata"], path)
    profiles = document.get("profiles")
    for index, profile in enumerate(profiles if isinstance(profiles, list) else []):
        if not isinstance(profile, dict):
            continue
        check_int(profile.get("budget"), f"profiles[{index}].budget")
        rules = profile.get("rules")
        for layer_key, rule in (rules if isinstance(rules, dict) else {}).items():
            if not isinstance(rule, dict):
                continue
            base = f"profiles[{index}].rules.{layer_key}"
            check_int(rule.get("maxItems"), f"{base}.maxItems")
            check_int(rule.get("maxTokens"), f"{base}.maxTokens")
            if isinstance(rule.get("currentness"), dict):
                check_int(rule["currentness"].get("maxAgeDays"), f"{base}.currentness.maxAgeDays")
    return issues


def document_issues(document: Any) -> list[ValidationIssue]:
    """Return every error of a workspace document: the engine's, then storage limits."""
    issues = list(validate_workspace(document))
    if not issues:
        issues = _storage_issues(document)
    return issues


# --- one edited row in the context of the stored workspace -------------------------------

CONSUMER_FIELDS = {
    "key": "key",
    "name": "name",
    "render": "render_format",
    "render.format": "render_format",
    "render.includeCurrentness": "include_currentness",
}
LAYER_FIELDS = {
    "key": "key",
    "name": "name",
    "description": "description",
    "availability": "availability",
    "appliesTo": "applies_to_objectives",
    "appliesTo.objectives": "applies_to_objectives",
    "appliesTo.consumers": "applies_to_consumers",
    "requiresInput": "requires_input",
    "itemFilter": "item_filter",
}
ITEM_FIELDS = {"path": "path", "title": "title", "body": "body", "metadata": "metadata"}
PROFILE_FIELDS = {
    "key": "key",
    "name": "name",
    "consumer": "consumer",
    "objective": "objective",
    "environment": "environment",
    "budget": "budget",
    "description": "description",
}
RULE_FORM_FIELDS = {
    **RULE_FIELDS,
    **{f"currentness.{doc}": model for doc, model in CURRENTNESS_FIELDS.items()},
    "currentness": "currentness_max_age_days",
}


def field_for_path(tail: str, fields: dict[str, str]) -> str | None:
    """Return the model field of a path tail such as ``.render.format`` or ``.itemFilter.x``.

    The longest known prefix wins: ``.appliesTo.consumers[0]`` is ``applies_to_consumers``.
    """
    parts = re.split(r"\.|\[", tail.lstrip("."))
    for end in range(len(parts), 0, -1):
        field = fields.get(".".join(parts[:end]))
        if field is not None:
            return field
    return None


def _replace_or_append(rows: list, instance) -> int:
    for index, row in enumerate(rows):
        if instance.pk is not None and row.pk == instance.pk:
            rows[index] = instance
            return index
    rows.append(instance)
    return len(rows) - 1


def _substitute(rows: WorkspaceRows, instance) -> tuple[str, dict[str, str]] | None:
    """Put the edited instance in the rows; return the path prefix of its document entry."""
    if isinstance(instance, Consumer):
        return f"consumers[{_replace_or_append(rows.consumers, instance)}]", CONSUMER_FIELDS
    if isinstance(instance, Layer):
        previous = next((layer for layer in rows.layers if layer.pk == instance.pk), None)
        instance.workspace_items = previous.workspace_items if previous else []
        return f"layers[{_replace_or_append(rows.layers, instance)}]", LAYER_FIELDS
    if isinstance(instance, Item):
        for layer_index, layer in enumerate(rows.layers):
            if layer.pk == instance.layer_id:
                index = _replace_or_append(layer.workspace_items, instance)
                return f"layers[{layer_index}].items[{index}]", ITEM_FIELDS
        return None
    if isinstance(instance, Profile):
        previous = next((profile for profile in rows.profiles if profile.pk == instance.pk), None)
        instance.workspace_rules = previous.workspace_rules if previous else []
        return f"profiles[{_replace_or_append(rows.profiles, instance)}]", PROFILE_FIELDS
    if isinstance(instance, Rule):
        layer_keys = {layer.pk: layer.key for layer in rows.layers}
        for profile_index, profile in enumerate(rows.profiles):
            if profile.pk == instance.profile_id:
                _replace_or_append(profile.workspace_rules, instance)
                layer_key = layer_keys.get(instance.layer_id, "")
                return f"profiles[{profile_index}].rules.{layer_key}", RULE_FORM_FIELDS
        return None
    raise TypeError(f"not a workspace model: {type(instance).__name__}")


def _split(issues: list[ValidationIssue], prefix: str, fields: dict[str, str]):
    """Return ``[(model field or None, message)]`` for issues, field errors under ``prefix``."""
    result: list[tuple[str | None, str]] = []
    for issue in issues:
        if issue.path == prefix or issue.path.startswith((prefix + ".", prefix + "[")):
            field = field_for_path(issue.path[len(prefix) :], fields)
            result.append((field, str(issue) if field is None else issue.message))
        else:
            result.append((None, str(issue)))
    return result


def instance_issues(instance, *, rules: list[Rule] | None = None) -> list[tuple[str | None, str]]:
    """Return the errors the edit of one row would introduce, as ``(model field, message)``.

    The row is validated inside the stored workspace, so cross-row rules (unique keys, a
    profile's consumer, the profile selection) are checked with the engine's messages. Only
    issues that the stored workspace does not already have are returned. For a profile,
    ``rules`` replaces its stored rules (an admin form saving the profile and its rules).
    """
    rows = workspace_rows_get()
    before = {str(issue) for issue in document_issues(map_rows_to_document(rows))}
    located = _substitute(rows, instance)
    if located is None:
        return []
    prefix, fields = located
    if rules is not None and isinstance(instance, Profile):
        instance.workspace_rules = list(rules)
    after = [
        issue for issue in document_issues(map_rows_to_document(rows)) if str(issue) not in before
    ]
    return _split(after, prefix, fields)


def profile_rules_issues(
    profile: Profile, rules: list[Rule]
) -> tuple[list[tuple[str | None, str]], dict[str, list[tuple[str | None, str]]]]:
    """Validate a profile with a full set of rules; return (profile issues, issues by layer key).

    Used by the admin's rule inline, which saves a profile and all its rules at once.
    """
    rows = workspace_rows_get()
    before = {str(issue) for issue in document_issues(map_rows_to_document(rows))}
    layer_keys = {layer.pk: layer.key for layer in rows.layers}
    prefix, _ = _substitute(rows, profile)
    profile.workspace_rules = list(rules)
    after = [
        issue for issue in document_issues(map_rows_to_document(rows)) if str(issue) not in before
    ]
    by_layer: dict[str, list[tuple[str | None, str]]] = {}
    general: list[ValidationIssue] = []
    for issue in after:
        matched = False
        for rule in rules:
            rule_prefix = f"{prefix}.rules.{layer_keys.get(rule.layer_id, '')}"
            if issue.path == rule_prefix or issue.path.startswith(rule_prefix + "."):
                by_layer.setdefault(layer_keys.get(rule.layer_id, ""), []).extend(
                    _split([issue], rule_prefix, RULE_FORM_FIELDS)
                )
                matched = True
                break
        if not matched:
            general.append(issue)
    return _split(general, prefix, PROFILE_FIELDS), by_layer

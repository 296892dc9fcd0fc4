"""One validation for every writer (admin, forms, API, import): the engine's own validator.

Whole documents (the import): ``document_issues`` runs ``resolver.validate_workspace`` and adds
the few limits of storage (numbers that fit the columns, text PostgreSQL can hold).

One entry (every single-object write): ``validate_consumer``, ``validate_layer``,
``validate_item`` and ``validate_profile`` check that entry only — the engine's single-entry
validators, then the storage limits — with paths relative to the entry (``render.format``,
``rules.kb.mode``), at a cost in proportion to the entry, never to the workspace. Keys and
paths that must be unique are the database's to enforce; ``duplicate_issues`` words a
conflict for a form.
"""

import datetime as dt
import math
import re
from typing import Any

import resolver
from profiles.models import Consumer, Item, Layer, Profile, Rule, Scenario
from profiles.workspace.fields import CURRENTNESS_FIELDS, PROFILE_FIELDS, RULE_FIELDS
from profiles.workspace.mappers import (
    map_consumer_to_resolver,
    map_item_to_resolver,
    map_layer_to_resolver,
    map_rule_to_resolver,
)
from profiles.workspace.selectors import (
    consumer_keys_list,
    layer_keys_list,
    row_duplicate_get,
    rule_list_of_profile,
)
from resolver import RequestError, ValidationIssue, validate_workspace
from resolver.clock import system_clock
from resolver.limits import MAX_METADATA_LEVELS, TEXT_RULE_MESSAGE, violates_text_rule
from resolver.locations import locate_issues
from resolver.request import parse_request

# PostgreSQL's integer column (PositiveIntegerField) holds at most this.
MAX_STORED_INTEGER = 2_147_483_647
# Rule.currentness_field is a varchar(64); the engine bounds the pattern, not the length.
MAX_FIELD_NAME_LENGTH = 64


# An error lists at most this many issues, the first in document order, and counts the others
# (``moreIssues``): a draft naming 100,000 unknown layers answers quickly and small.
MAX_LISTED_ISSUES = 100


def issues_listed(issues: list) -> tuple[list, int]:
    """Return the issues an error lists (at most ``MAX_LISTED_ISSUES``) and how many more
    there are."""
    return issues[:MAX_LISTED_ISSUES], max(0, len(issues) - MAX_LISTED_ISSUES)


def issues_body(issues: list) -> dict:
    """Return the ``issues`` of an error body (as dicts), with ``moreIssues`` when some are
    not listed."""
    listed, more = issues_listed(issues)
    body: dict = {"issues": [issue.as_dict() for issue in listed]}
    if more:
        body["moreIssues"] = more
    return body


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
                **issues_body(self.issues),
            }
        }


def issues_in_text(issues: list[ValidationIssue], *, text: str) -> list[ValidationIssue]:
    """Return import issues with the entry each concerns and its line and column in ``text``.

    Run only when there are issues (it reads the text again). An issue about the stored
    workspace, not the file, is left as it is: its path is not one of the file's.
    """
    issues = list(issues)
    in_file = [position for position, issue in enumerate(issues) if issue.path and not issue.stored]
    if in_file:
        located = locate_issues(text, [issues[position] for position in in_file])
        for position, issue in zip(in_file, located, strict=True):
            issues[position] = issue
    return issues


# --- what the database cannot store -------------------------------------------------------


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def text_issues(value: Any, path: str, *, collapse: bool = False) -> list[ValidationIssue]:
    """Return an issue for each string under ``value`` holding NUL or a lone surrogate.

    PostgreSQL cannot store U+0000 and UTF-8 cannot encode a lone surrogate (SPEC §2.2's text
    rule, which the engine applies to workspace entries; scenarios need it here). A mapping
    key is reported at the mapping's path; ``collapse`` reports everything inside at ``path``
    itself (metadata).
    """
    issues: list[ValidationIssue] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, str):
            if violates_text_rule(node):
                issues.append(ValidationIssue(where, TEXT_RULE_MESSAGE))
        elif isinstance(node, dict):
            for key, item in node.items():
                if isinstance(key, str) and violates_text_rule(key):
                    walk(key, where)
                walk(item, where if collapse else _join(where, str(key)))
        elif isinstance(node, list | tuple):
            for index, item in enumerate(node):
                walk(item, where if collapse else f"{where}[{index}]")

    walk(value, path)
    return issues


def _integer_issue(value: Any, path: str) -> list[ValidationIssue]:
    if isinstance(value, int) and not isinstance(value, bool) and value > MAX_STORED_INTEGER:
        return [ValidationIssue(path, f"must be at most {MAX_STORED_INTEGER}")]
    return []


def _finite_issues(value: Any, path: str) -> list[ValidationIssue]:
    if isinstance(value, float) and not math.isfinite(value):
        return [ValidationIssue(path, "must be a finite number")]
    if isinstance(value, dict):
        return [i for key, item in value.items() for i in _finite_issues(item, f"{path}.{key}")]
    if isinstance(value, list):
        return [i for n, item in enumerate(value) for i in _finite_issues(item, f"{path}[{n}]")]
    return []


def _item_storage_issues(item: Any, path: str) -> list[ValidationIssue]:
    if not isinstance(item, dict) or _item_storable(item):
        return []
    return _item_storage_issues_in_full(item, path)


def _item_storage_issues_in_full(item: dict, path: str) -> list[ValidationIssue]:
    issues = []
    for name, value in item.items():
        if name == "metadata":
            issues += text_issues(value, _join(path, "metadata"), collapse=True)
            issues += _finite_issues(value, _join(path, "metadata"))
        else:
            issues += text_issues(value, _join(path, str(name)))
    return issues


# Values with no storage issue of their own (floats are checked, strings collected).
_STORABLE_SCALARS = frozenset({int, bool, type(None), dt.date, dt.datetime})


def _item_storable(item: dict) -> bool:
    """Return True when an item certainly has no storage issue, checked in one quick pass
    (an import checks every item): its texts joined pass the text rule, its metadata holds
    only finite numbers. Anything less common is left to the full check."""
    texts: list[str] = []
    for name, value in item.items():
        kind = value.__class__
        if kind is str:
            texts.append(value)
        elif name == "metadata" and kind is dict:
            if not _plain_metadata(value, texts):
                return False
        elif kind not in _STORABLE_SCALARS:
            return False
    return not violates_text_rule("".join(texts))


def _plain_metadata(metadata: dict, texts: list[str]) -> bool:
    """Collect the keys and strings of plain metadata into ``texts``. Return False for a
    non-finite number, a key that is no string, a value of another kind, or nesting deeper
    than the engine allows."""
    stack = [(metadata, 1)]
    while stack:
        node, level = stack.pop()
        if level > MAX_METADATA_LEVELS:
            return False
        if node.__class__ is dict:
            for key in node:
                if key.__class__ is not str:
                    return False
            texts.extend(node)
            children = node.values()
        else:
            children = node
        for child in children:
            kind = child.__class__
            if kind is str:
                texts.append(child)
            elif kind is dict or kind is list:
                stack.append((child, level + 1))
            elif kind is float:
                if not math.isfinite(child):
                    return False
            elif kind not in _STORABLE_SCALARS:
                return False
    return True


def _rule_storage_issues(rule: Any, path: str) -> list[ValidationIssue]:
    if not isinstance(rule, dict):
        return []
    issues = text_issues(rule, path)
    issues += _integer_issue(rule.get("maxItems"), _join(path, "maxItems"))
    issues += _integer_issue(rule.get("maxTokens"), _join(path, "maxTokens"))
    currentness = rule.get("currentness")
    if isinstance(currentness, dict):
        where = _join(path, "currentness")
        issues += _integer_issue(currentness.get("maxAgeDays"), _join(where, "maxAgeDays"))
        field = currentness.get("field")
        if isinstance(field, str) and len(field) > MAX_FIELD_NAME_LENGTH:
            issues.append(
                ValidationIssue(
                    _join(where, "field"), f"must be at most {MAX_FIELD_NAME_LENGTH} characters"
                )
            )
    return issues


def _entry_storage_issues(kind: str, entry: Any, path: str) -> list[ValidationIssue]:
    """Return the storage issues of one entry (``kind``: consumer, layer, item or profile)."""
    if not isinstance(entry, dict):
        return []
    if kind == "item":
        return _item_storage_issues(entry, path)
    issues: list[ValidationIssue] = []
    for name, value in entry.items():
        where = _join(path, str(name))
        if kind == "layer" and name == "items":
            if isinstance(value, list):
                for index, item in enumerate(value):
                    issues += _item_storage_issues(item, f"{where}[{index}]")
        elif kind == "profile" and name == "rules":
            if isinstance(value, dict):
                for layer_key, rule in value.items():
                    issues += text_issues(layer_key, where)
                    issues += _rule_storage_issues(rule, _join(where, str(layer_key)))
        elif kind == "profile" and name == "budget":
            issues += _integer_issue(value, where)
        else:
            issues += text_issues(value, where)
    return issues


def _storage_issues(document: Any) -> list[ValidationIssue]:
    """Return what the engine accepts but the database cannot store faithfully."""
    if not isinstance(document, dict):
        return []
    issues: list[ValidationIssue] = []
    for section, kind in (("consumers", "consumer"), ("layers", "layer"), ("profiles", "profile")):
        entries = document.get(section)
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            issues += _entry_storage_issues(kind, entry, f"{section}[{index}]")
    return issues


def document_issues(document: Any) -> list[ValidationIssue]:
    """Return every error of a workspace document: the engine's, then storage limits."""
    return list(validate_workspace(document)) or _storage_issues(document)


# --- one entry ----------------------------------------------------------------------------


def validate_consumer(document: Any) -> list[ValidationIssue]:
    """Return the errors of one consumer entry (paths relative to it)."""
    issues = resolver.validate_consumer(document)
    return issues or _entry_storage_issues("consumer", document, "")


def validate_layer(document: Any) -> list[ValidationIssue]:
    """Return the errors of one layer entry and the items it gives (paths relative to it)."""
    items = isinstance(document, dict) and "items" in document
    issues = resolver.validate_layer(document, items=items)
    return issues or _entry_storage_issues("layer", document, "")


def validate_item(document: Any) -> list[ValidationIssue]:
    """Return the errors of one item entry (paths relative to it)."""
    issues = resolver.validate_item(document)
    return issues or _entry_storage_issues("item", document, "")


def validate_profile(document: Any, *, layer_keys, consumer_keys) -> list[ValidationIssue]:
    """Return the errors of one profile entry with its rules (paths relative to it).

    ``layer_keys`` and ``consumer_keys`` are the keys that exist (a rule must name a layer, the
    profile's consumer must exist). Whether another profile has the same selection is the
    database's to enforce.
    """
    layer_keys = layer_keys if isinstance(layer_keys, set | frozenset) else set(layer_keys)
    rules = document.get("rules") if isinstance(document, dict) else None
    unknown = unknown_layer_issues(rules, layer_keys)
    if unknown:
        return unknown
    issues = resolver.validate_profile(document, layer_keys=layer_keys, consumer_keys=consumer_keys)
    return issues or _entry_storage_issues("profile", document, "")


def unknown_layer_issues(rules: Any, layer_keys) -> list[ValidationIssue]:
    """Return the issues of profile rules (or a draft's) naming more layers that do not exist
    than an error lists, checking nothing else: the first ones (``MAX_LISTED_ISSUES`` - 1,
    with the engine's message), then one issue at ``rules`` counting the others. Return []
    otherwise, for the engine to check the entry.

    A draft naming 100,000 unknown layers is refused at the cost of reading its keys once.
    """
    if not isinstance(rules, dict) or len(rules) <= MAX_LISTED_ISSUES:
        return []
    unknown = [key for key in rules if not (isinstance(key, str) and key in layer_keys)]
    if len(unknown) <= MAX_LISTED_ISSUES:
        return []
    listed = unknown[: MAX_LISTED_ISSUES - 1]
    issues = [
        ValidationIssue(f"rules.{key}", f'layer "{key}" does not exist')
        if isinstance(key, str) and not violates_text_rule(key)
        else ValidationIssue("rules", "a key " + TEXT_RULE_MESSAGE)
        for key in listed
    ]
    more = len(unknown) - len(listed)
    issues.append(
        ValidationIssue(
            "rules",
            f"{more:,} more rules name layers that do not exist (not listed, nor checked "
            "further: remove the rules of layers that do not exist)",
        )
    )
    return issues


merge_rule = resolver.merge_rule


def rules_merged(rules: dict | None, edits: dict) -> dict:
    """Return a profile's rules (layer key -> rule document) with a draft's edits applied.

    ``edits`` maps a layer key to a partial rule, merged into the saved one by
    ``merge_rule`` (a field given as None is removed), or to None for the default rule (the
    layer's rule is dropped). Neither argument is modified.
    """
    merged = dict(rules or {})
    for layer_key, partial in edits.items():
        rule = merge_rule(merged.get(layer_key), partial)
        if rule is None:
            merged.pop(layer_key, None)
        else:
            merged[layer_key] = rule
    return merged


# Document fields of a saved scenario (a SPEC §3 request for one profile, with a name).
SCENARIO_FIELDS = ("name", "profile", "description", "input", "now", "format", "availability")
SCENARIO_DOCUMENT_FIELDS = (*SCENARIO_FIELDS, "default")


# As SPEC §2.2 bounds the descriptions of workspace entries.
SCENARIO_DESCRIPTION_MAX_LENGTH = 1_000


def _max_length(field: str) -> int:
    return Scenario._meta.get_field(field).max_length


def validate_scenario(document: Any, *, layer_keys) -> list[ValidationIssue]:
    """Return the errors of a scenario entry (paths relative to it), the first only.

    The request part is checked as a SPEC §3 request of the scenario's profile (whether the
    profile exists is the caller's lookup); the name, ``now`` and every text must fit storage.
    """
    if not isinstance(document, dict):
        return [ValidationIssue("", "must be an object")]
    for name in document:
        if name not in SCENARIO_DOCUMENT_FIELDS:
            return [ValidationIssue(str(name), "unknown field")]
    name = document.get("name")
    if not isinstance(name, str) or not name.strip():
        return [ValidationIssue("name", "is required")]
    if len(name) > _max_length("name"):
        return [ValidationIssue("name", f"must be at most {_max_length('name')} characters")]
    profile = document.get("profile")
    if not isinstance(profile, str) or not profile:
        return [ValidationIssue("profile", "is required")]
    description = document.get("description")
    if description is not None and not isinstance(description, str):
        return [ValidationIssue("description", "must be a string")]
    default = document.get("default")
    if default is not None and not isinstance(default, bool):
        return [ValidationIssue("default", "must be true or false")]
    now = document.get("now")
    if isinstance(now, str) and len(now) > _max_length("now"):
        return [ValidationIssue("now", f"must be at most {_max_length('now')} characters")]
    issues = text_issues({key: document[key] for key in SCENARIO_FIELDS if key in document}, "")
    if issues:
        return issues[:1]
    if description is not None and len(description) > SCENARIO_DESCRIPTION_MAX_LENGTH:
        return [
            ValidationIssue(
                "description", f"must be at most {SCENARIO_DESCRIPTION_MAX_LENGTH:,} characters"
            )
        ]
    request = {
        key: document[key]
        for key in ("input", "now", "format", "availability")
        if document.get(key) is not None
    }
    try:
        parse_request({"profile": profile, **request}, layer_keys=layer_keys, clock=system_clock)
    except RequestError as exc:
        return [ValidationIssue(exc.path, exc.message)]
    return []


# --- model fields of a form ---------------------------------------------------------------

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
# A profile's fields are stored in the model fields of the same names.
PROFILE_MODEL_FIELDS = {name: name for name in PROFILE_FIELDS}
RULE_FORM_FIELDS = {
    **RULE_FIELDS,
    **{f"currentness.{doc}": model for doc, model in CURRENTNESS_FIELDS.items()},
    "currentness": "currentness_max_age_days",
}


def field_for_path(tail: str, fields: dict[str, str]) -> str | None:
    """Return the model field of a path tail such as ``render.format`` or ``itemFilter.x``.

    The longest known prefix wins: ``appliesTo.consumers[0]`` is ``applies_to_consumers``.
    """
    parts = re.split(r"\.|\[", tail.lstrip("."))
    for end in range(len(parts), 0, -1):
        field = fields.get(".".join(parts[:end]))
        if field is not None:
            return field
    return None


def _by_field(issues: list[ValidationIssue], fields: dict[str, str]):
    """Return ``[(model field or None, message)]`` of issues with entry-relative paths."""
    result: list[tuple[str | None, str]] = []
    for issue in issues:
        field = field_for_path(issue.path, fields) if issue.path else None
        result.append((field, issue.message if field else str(issue)))
    return result


def _profile_document(profile: Profile, rules: list[Rule]) -> dict:
    """Return the profile entry of a (possibly unsaved) profile row and rule rows."""
    document: dict[str, Any] = {
        "key": profile.key,
        "consumer": profile.consumer.key if profile.consumer_id else None,
        "objective": profile.objective,
        "budget": profile.budget,
    }
    if profile.name:
        document["name"] = profile.name
    if profile.environment is not None:
        document["environment"] = profile.environment
    if profile.description:
        document["description"] = profile.description
    document["rules"] = {
        rule.layer.key: map_rule_to_resolver(rule) for rule in rules if rule.layer_id
    }
    return document


def duplicate_issues(instance) -> list[tuple[str | None, str]]:
    """Return the uniqueness conflicts of a row against the stored rows, by model field.

    The messages are the engine's for the same conflict inside one document.
    """
    duplicate = row_duplicate_get(instance)
    if duplicate is None:
        return []
    field, taken = duplicate
    if field == "key":
        return [("key", f'duplicate {type(instance)._meta.model_name} key "{instance.key}"')]
    if field == "selection":
        environment = "none" if instance.environment is None else repr(instance.environment)
        return [
            (
                None,
                f'another profile ("{taken}") already has consumer "{instance.consumer.key}", '
                f'objective "{instance.objective}" and environment {environment}',
            )
        ]
    if field == "path":
        return [("path", f'duplicate path "{instance.path}" in layer "{instance.layer.key}"')]
    if field == "name":
        return [("name", f'duplicate scenario name "{instance.name}"')]
    return [("layer", f'the profile already has a rule for layer "{instance.layer.key}"')]


def instance_issues(instance, *, rules: list[Rule] | None = None) -> list[tuple[str | None, str]]:
    """Return the errors of one edited row, as ``(model field, message)``.

    The row's entry is validated by the engine (cost: the entry, not the workspace), then
    checked for keys or paths another row already has. For a profile, ``rules`` are its
    rules as edited (else the stored ones).
    """
    if isinstance(instance, Consumer):
        issues = _by_field(validate_consumer(map_consumer_to_resolver(instance)), CONSUMER_FIELDS)
    elif isinstance(instance, Layer):
        document = map_layer_to_resolver(instance, [])
        document.pop("items")
        issues = _by_field(validate_layer(document), LAYER_FIELDS)
    elif isinstance(instance, Item):
        issues = _by_field(validate_item(map_item_to_resolver(instance)), ITEM_FIELDS)
    elif isinstance(instance, Profile):
        general, _ = profile_rules_issues(instance, rules)
        return general
    elif isinstance(instance, Rule):
        _, by_layer = profile_rules_issues(instance.profile, [instance], only_rules=True)
        return [issue for issues in by_layer.values() for issue in issues]
    else:
        raise TypeError(f"not a workspace model: {type(instance).__name__}")
    return issues or duplicate_issues(instance)


def profile_rules_issues(
    profile: Profile, rules: list[Rule] | None, *, only_rules: bool = False
) -> tuple[list[tuple[str | None, str]], dict[str, list[tuple[str | None, str]]]]:
    """Validate a profile with a full set of rules; return (profile issues, issues by layer key).

    Used by the admin's rule inline, which saves a profile and all its rules at once.
    """
    if rules is None:
        rules = rule_list_of_profile(profile=profile) if profile.pk else []
    layer_keys, consumer_keys = layer_keys_list(), consumer_keys_list()
    issues = validate_profile(
        _profile_document(profile, rules), layer_keys=layer_keys, consumer_keys=consumer_keys
    )
    by_layer: dict[str, list[tuple[str | None, str]]] = {}
    general: list[ValidationIssue] = []
    for issue in issues:
        match = re.match(r"^rules\.([^.\[]+)(.*)$", issue.path)
        if match:
            tail = match.group(2).lstrip(".")
            field = field_for_path(tail, RULE_FORM_FIELDS) if tail else None
            message = issue.message if field else str(issue)
            by_layer.setdefault(match.group(1), []).append((field, message))
        else:
            general.append(issue)
    general_fields = _by_field(general, PROFILE_MODEL_FIELDS)
    if not general_fields and not by_layer and not only_rules:
        general_fields = duplicate_issues(profile)
    return general_fields, by_layer

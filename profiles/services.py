"""Writes and orchestration over the workspace. The preview, the API, the admin and the management
commands all call these, so they cannot drift apart. Every argument is keyword-only.
"""

import copy
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml
from django.db import transaction
from django.utils import timezone
from simple_history.utils import bulk_create_with_history, bulk_update_with_history

from profiles import cache
from profiles.mappers import (
    canonical_string,
    json_safe,
    map_consumer_values,
    map_item_values,
    map_layer_values,
    map_profile_values,
    map_rows_to_document,
    map_rule_values,
)
from profiles.models import (
    Consumer,
    Item,
    Layer,
    Profile,
    Rule,
    WorkspaceVersion,
    workspace_bumps_suppressed,
)
from profiles.selectors import WorkspaceRows, workspace_rows_get
from profiles.validation import WorkspaceValidationError, document_issues, instance_issues
from resolver import CompiledWorkspace, ResolverError, ValidationIssue, WorkspaceError
from resolver.documents import dump_yaml
from resolver.documents import load_document as load_workspace_text

IMPORT_MODES = ("merge", "replace")
BATCH_SIZE = 500


class WorkspaceImportError(WorkspaceValidationError):
    """The import wrote nothing; ``issues`` lists every error with its path in the file."""


# --- resolve ------------------------------------------------------------------------------


def profile_resolve(
    *,
    profile: Profile | str,
    request: dict,
    rule_overrides: dict | None = None,
    budget_override: int | None = None,
    compiled: CompiledWorkspace | None = None,
) -> dict:
    """Resolve a request for one profile against the stored workspace; return SPEC §7 JSON.

    ``profile`` is a Profile or its key; it replaces any profile selection of ``request``
    (a SPEC §3 dict). ``rule_overrides`` (layer key -> partial rule, None for the default
    rule) and ``budget_override`` resolve unsaved edits without writing them. Raises
    ``resolver.RequestError`` (bad request, unknown profile) and ``resolver.WorkspaceError``
    (invalid overrides, or stored rows that do not form a valid workspace). Never writes.
    ``compiled`` resolves against a compilation the caller already holds (one version read
    per request instead of one per call).
    """
    profile_key = profile.key if isinstance(profile, Profile) else str(profile)
    request = {
        key: value
        for key, value in (request or {}).items()
        if key not in ("profile", "consumer", "objective", "environment")
    }
    request["profile"] = profile_key
    if compiled is None:
        compiled = cache.workspace_get().compiled
    if rule_overrides is not None or budget_override is not None:
        compiled = compiled.with_profile_draft(
            profile_key, rules=rule_overrides, budget=budget_override
        )
    return compiled.resolve(request)


def workspace_resolve(*, request: dict) -> dict:
    """Resolve a SPEC §3 request (selection by profile key or consumer + objective) as is."""
    return cache.workspace_get().compiled.resolve(request)


# --- export -------------------------------------------------------------------------------


def workspace_document_get() -> dict:
    """Return a copy of the stored workspace as a SPEC §2 document (safe to modify)."""
    return copy.deepcopy(cache.workspace_get().document)


def workspace_export(*, format: str | None = None) -> dict | str:
    """Return the stored workspace document; as YAML or JSON text when ``format`` is given.

    The document reads from the database directly (not the compiled cache), so an export
    works even when the stored rows do not form a valid workspace.
    """
    document = map_rows_to_document(workspace_rows_get())
    if format is None:
        return document
    if format == "json":
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if format == "yaml":
        return dump_yaml(document)
    raise ValueError(f"unknown export format {format!r} (use yaml or json)")


# --- import -------------------------------------------------------------------------------


@dataclass
class ImportSummary:
    """What an import changed, per kind of row: created, updated, deleted, unchanged."""

    mode: str
    counts: dict[str, dict[str, int]] = field(
        default_factory=lambda: {
            kind: {"created": 0, "updated": 0, "deleted": 0, "unchanged": 0}
            for kind in ("consumers", "layers", "items", "profiles", "rules")
        }
    )

    @property
    def changed(self) -> bool:
        return any(
            counts["created"] or counts["updated"] or counts["deleted"]
            for counts in self.counts.values()
        )

    def add(self, kind: str, action: str, number: int = 1) -> None:
        self.counts[kind][action] += number

    def as_dict(self) -> dict:
        return {"mode": self.mode, "changed": self.changed, **self.counts}

    def __str__(self) -> str:
        parts = []
        for kind, counts in self.counts.items():
            figures = ", ".join(f"{number} {action}" for action, number in counts.items() if number)
            parts.append(f"{kind}: {figures or 'none'}")
        return "; ".join(parts)


def workspace_parse(*, text: str) -> dict:
    """Parse a YAML-or-JSON workspace document (safe loader, duplicate keys rejected).

    Raises WorkspaceImportError naming the line of a syntax error or duplicate key.
    """
    try:
        document = load_workspace_text(text)
    except WorkspaceError as exc:
        raise WorkspaceImportError(exc.issues) from exc
    except yaml.YAMLError as exc:
        raise WorkspaceImportError([ValidationIssue("", f"not valid YAML: {exc}")]) from exc
    return document


def workspace_validate(*, document: Any) -> list[ValidationIssue]:
    """Return every error of a workspace document (the engine's messages and paths)."""
    return document_issues(document)


def workspace_import(
    *,
    document: dict | None = None,
    text: str | None = None,
    mode: str = "merge",
    user=None,
    rows: WorkspaceRows | None = None,
) -> ImportSummary:
    """Import a workspace document (or its YAML/JSON text) all-or-nothing, in one transaction.

    ``merge`` (default) upserts consumers, layers and profiles by key and items by path; a
    profile in the file gets exactly the file's rules. ``replace`` also deletes what the file
    does not contain. A document with any error writes nothing: WorkspaceImportError carries
    every issue with its path in the file. Rows whose values do not change are not written,
    so importing the same file twice changes nothing (no history entry, no version bump).
    ``rows`` are the stored rows when the caller already read them inside its transaction
    (and holds the writers' lock), so they are not read twice.
    """
    if mode not in IMPORT_MODES:
        raise ValueError(f"unknown import mode {mode!r} (use merge or replace)")
    if (document is None) == (text is None):
        raise ValueError("give either document or text")
    if text is not None:
        document = workspace_parse(text=text)

    summary = ImportSummary(mode=mode)
    with transaction.atomic(), workspace_bumps_suppressed():
        if rows is None:
            rows = workspace_rows_get()
        merged = None
        if mode == "merge" and _mergeable(document):
            merged = _merge_documents(map_rows_to_document(rows), document)
        if merged is None:
            # Replace, or a file too malformed to merge: the file alone must be valid.
            target = document
            issues = document_issues(target)
        else:
            # The file may refer to stored consumers and layers: validate the merged result
            # and report each issue at its path in the file.
            target, origins = merged
            issues = [_issue_in_file(issue, origins) for issue in document_issues(target)]
        if issues:
            raise WorkspaceImportError(issues)
        _synchronize(rows, target, user=user, summary=summary)
        if summary.changed:
            WorkspaceVersion.bump()
    return summary


_SECTIONS = (("consumers", "key"), ("layers", "key"), ("profiles", "key"))


def _is_key(value: Any) -> bool:
    return value is not None and not isinstance(value, dict | list)


def _mergeable(document: Any) -> bool:
    """Return whether every entry of the file can be matched by key/path for a merge."""
    if not isinstance(document, dict):
        return False
    for section, key_field in _SECTIONS:
        entries = document.get(section)
        if entries is None:
            continue
        if not isinstance(entries, list):
            return False
        for entry in entries:
            if not isinstance(entry, dict) or not _is_key(entry.get(key_field)):
                return False
            if section == "layers":
                items = entry.get("items")
                if items is not None and not (
                    isinstance(items, list)
                    and all(isinstance(i, dict) and _is_key(i.get("path")) for i in items)
                ):
                    return False
    return True


def _merge_documents(stored: dict, incoming: dict) -> tuple[dict, dict]:
    """Return the stored document with the file upserted into it, and the origin of each
    top-level entry (and item) of the result: ("file", index in the file) or ("stored", key).

    A key repeated in the file is not collapsed: the second entry is appended, so the
    validator reports the duplicate at its path in the file.
    """
    origins: dict[str, list] = {}
    target: dict[str, Any] = {
        key: value for key, value in incoming.items() if key not in dict(_SECTIONS)
    }
    target.setdefault("version", 1)
    for section, key_field in _SECTIONS:
        entries = list(stored.get(section) or [])
        section_origins: list = [("stored", entry[key_field]) for entry in entries]
        stored_index = {entry[key_field]: index for index, entry in enumerate(entries)}
        for file_index, entry in enumerate(incoming.get(section) or []):
            position = stored_index.pop(canonical_string(entry[key_field]), None)
            stored_items = []
            if position is None:
                position = len(entries)
                entries.append(entry)
                section_origins.append(None)
            elif section == "layers":
                stored_items = entries[position].get("items") or []
            if section == "layers":
                entry, item_origins = _merge_items(stored_items, entry)
                origins[f"items:{position}"] = item_origins
            entries[position] = entry
            section_origins[position] = ("file", file_index)
        target[section] = entries
        origins[section] = section_origins
    return target, origins


def _merge_items(stored_items: list, incoming_layer: dict) -> tuple[dict, list]:
    items = list(stored_items)
    item_origins: list = [("stored", item["path"]) for item in items]
    stored_index = {item["path"]: index for index, item in enumerate(items)}
    for item_index, item in enumerate(incoming_layer.get("items") or []):
        position = stored_index.pop(canonical_string(item["path"]), None)
        if position is None:
            items.append(item)
            item_origins.append(("file", item_index))
        else:
            items[position] = item
            item_origins[position] = ("file", item_index)
    return {**incoming_layer, "items": items}, item_origins


_TOP_PATH = re.compile(r"^(consumers|layers|profiles)\[(\d+)\](?:\.items\[(\d+)\])?")


def _issue_in_file(issue: ValidationIssue, origins: dict) -> ValidationIssue:
    """Translate a path of the merged document into the file's path (or name the stored row)."""
    match = _TOP_PATH.match(issue.path)
    if not match:
        return issue
    section, index, item_index = match.group(1), int(match.group(2)), match.group(3)
    kind, where = origins[section][index]
    rest = issue.path[match.end() :]
    if item_index is not None:
        item_origins = origins.get(f"items:{index}")
        item_kind, item_where = (
            item_origins[int(item_index)] if item_origins else (kind, int(item_index))
        )
        if kind == "file" and item_kind == "file":
            return ValidationIssue(f"{section}[{where}].items[{item_where}]{rest}", issue.message)
        return ValidationIssue(issue.path, f"{issue.message} (in the stored workspace)")
    if kind == "file":
        return ValidationIssue(f"{section}[{where}]{rest}", issue.message)
    return ValidationIssue(
        issue.path, f"{issue.message} (conflicts with stored {section[:-1]} {where})"
    )


def _changed_fields(instance, values: dict) -> list[str]:
    return [name for name, value in values.items() if getattr(instance, name) != value]


def _upsert(
    model,
    kind: str,
    wanted: list[tuple[dict, dict]],
    existing: dict[Any, Any],
    *,
    user,
    summary: ImportSummary,
    tracked: bool = True,
) -> dict:
    """Create or update rows; ``wanted`` is [(lookup, values)], ``existing`` maps lookup keys.

    Return every wanted row by its lookup key (created rows with their primary keys).
    """
    to_create, to_update, update_fields = [], [], set()
    result = {}
    for lookup_key, values in wanted:
        instance = existing.get(lookup_key)
        if instance is None:
            instance = model(**values)
            if tracked:
                instance.created_by = user
                instance.updated_by = user
            to_create.append((lookup_key, instance))
            continue
        changed = _changed_fields(instance, values)
        if changed:
            for name in changed:
                setattr(instance, name, values[name])
            update_fields.update(changed)
            if tracked:
                instance.updated_by = user
                update_fields.add("updated_by")
            update_fields.add("updated_at")
            to_update.append(instance)
            summary.add(kind, "updated")
        else:
            summary.add(kind, "unchanged")
        result[lookup_key] = instance
    if to_create:
        created = bulk_create_with_history(
            [instance for _, instance in to_create],
            model,
            batch_size=BATCH_SIZE,
            default_user=user,
        )
        for (lookup_key, _), instance in zip(to_create, created, strict=True):
            result[lookup_key] = instance
        summary.add(kind, "created", len(to_create))
    if to_update:
        moment = timezone.now()
        for instance in to_update:
            instance.updated_at = moment
        bulk_update_with_history(
            to_update,
            model,
            sorted(update_fields),
            batch_size=BATCH_SIZE,
            default_user=user,
        )
    return result


_KIND_BY_MODEL = {
    "profiles.Consumer": "consumers",
    "profiles.Layer": "layers",
    "profiles.Item": "items",
    "profiles.Profile": "profiles",
    "profiles.Rule": "rules",
}


def _delete(queryset, kind: str, summary: ImportSummary) -> None:
    """Delete in batches (history records each row); count cascaded rows under their kind."""
    _, per_model = queryset.delete()
    for label, number in per_model.items():
        if label in _KIND_BY_MODEL and number:
            summary.add(_KIND_BY_MODEL[label], "deleted", number)


def _synchronize(rows, target: dict, *, user, summary: ImportSummary) -> None:
    """Make the stored workspace equal to the (valid) target document."""
    consumers_wanted = [
        map_consumer_values(entry) | {"position": index}
        for index, entry in enumerate(target.get("consumers") or [])
    ]
    layers_wanted = []
    for index, entry in enumerate(target.get("layers") or []):
        items = [
            map_item_values(item) | {"position": item_index}
            for item_index, item in enumerate(entry.get("items") or [])
        ]
        layers_wanted.append((map_layer_values(entry) | {"position": index}, items))
    profiles_wanted = []
    for index, entry in enumerate(target.get("profiles") or []):
        rules = [
            (canonical_string(layer_key), map_rule_values(rule) | {"position": rule_index})
            for rule_index, (layer_key, rule) in enumerate((entry.get("rules") or {}).items())
        ]
        profiles_wanted.append((map_profile_values(entry) | {"position": index}, rules))

    consumer_keys = {values["key"] for values in consumers_wanted}
    layer_keys = {values["key"] for values, _ in layers_wanted}
    profile_keys = {values["key"] for values, _ in profiles_wanted}

    # Deletions first, so a removed profile never blocks a new one with its selection.
    _delete(Profile.objects.exclude(key__in=profile_keys).order_by("pk"), "profiles", summary)
    _delete(Layer.objects.exclude(key__in=layer_keys).order_by("pk"), "layers", summary)

    stored_consumers = {consumer.key: consumer for consumer in rows.consumers}
    consumers = _upsert(
        Consumer,
        "consumers",
        [(values["key"], values) for values in consumers_wanted],
        stored_consumers,
        user=user,
        summary=summary,
    )

    stored_layers = {layer.key: layer for layer in rows.layers if layer.key in layer_keys}
    layers = _upsert(
        Layer,
        "layers",
        [(values["key"], values) for values, _ in layers_wanted],
        stored_layers,
        user=user,
        summary=summary,
    )

    # Items: one batch for every layer.
    stored_items = {}
    stale_item_ids = []
    for layer in rows.layers:
        if layer.key not in layer_keys:
            continue
        wanted_paths = {
            values["path"]
            for layer_values, items in layers_wanted
            for values in items
            if layer_values["key"] == layer.key
        }
        for item in layer.workspace_items:
            if item.path in wanted_paths:
                stored_items[(layer.key, item.path)] = item
            else:
                stale_item_ids.append(item.pk)
    _delete(Item.objects.filter(pk__in=stale_item_ids).order_by("pk"), "items", summary)
    items_wanted = []
    for layer_values, items in layers_wanted:
        layer = layers[layer_values["key"]]
        for values in items:
            items_wanted.append(((layer.key, values["path"]), values | {"layer_id": layer.pk}))
    _upsert(Item, "items", items_wanted, stored_items, user=user, summary=summary, tracked=False)

    stored_profiles = {
        profile.key: profile for profile in rows.profiles if profile.key in profile_keys
    }
    profiles = _upsert(
        Profile,
        "profiles",
        [
            (
                values["key"],
                {k: v for k, v in values.items() if k != "consumer"}
                | {"consumer_id": consumers[values["consumer"]].pk},
            )
            for values, _ in profiles_wanted
        ],
        stored_profiles,
        user=user,
        summary=summary,
    )
    _delete(Consumer.objects.exclude(key__in=consumer_keys).order_by("pk"), "consumers", summary)

    stored_rules = {}
    stale_rule_ids = []
    wanted_rule_keys = {
        (values["key"], layer_key) for values, rules in profiles_wanted for layer_key, _ in rules
    }
    layer_key_by_id = {layer.pk: key for key, layer in layers.items()}
    for profile in rows.profiles:
        if profile.key not in profile_keys:
            continue
        for rule in profile.workspace_rules:
            rule_key = (profile.key, layer_key_by_id.get(rule.layer_id))
            if rule_key in wanted_rule_keys:
                stored_rules[rule_key] = rule
            else:
                stale_rule_ids.append(rule.pk)
    _delete(Rule.objects.filter(pk__in=stale_rule_ids).order_by("pk"), "rules", summary)
    rules_wanted = []
    for profile_values, rules in profiles_wanted:
        profile = profiles[profile_values["key"]]
        for layer_key, values in rules:
            rules_wanted.append(
                (
                    (profile.key, layer_key),
                    values | {"profile_id": profile.pk, "layer_id": layers[layer_key].pk},
                )
            )
    _upsert(Rule, "rules", rules_wanted, stored_rules, user=user, summary=summary)


# --- profile edits ------------------------------------------------------------------------


def _apply_rule_edits(saved_rules: dict, rules: dict) -> dict:
    """Return the rules of a profile after edits: partial rule dicts replace the given fields
    (a None field removes it); a layer mapped to None goes back to the default rule."""
    result = {key: dict(rule) for key, rule in saved_rules.items()}
    for layer_key, partial in rules.items():
        if partial is None:
            result.pop(layer_key, None)
            continue
        merged = {**result.get(layer_key, {}), **partial}
        result[layer_key] = {name: value for name, value in merged.items() if value is not None}
    return result


def profile_save_rules(
    *,
    profile: Profile | str,
    rules: dict,
    budget: int | None = None,
    user=None,
) -> Profile:
    """Save edits of one profile's rules (and budget) atomically, after validating them.

    ``rules`` has the meaning of ``CompiledWorkspace.with_profile_draft``: layer key ->
    partial rule whose given fields replace the saved ones (None removes a field), or None
    for the default rule; layers not named keep their rule. What the preview showed for a
    draft is what gets saved. Raises WorkspaceValidationError (engine messages and paths,
    e.g. ``profiles[0].rules.kb.mode: …``) and writes nothing when invalid.
    """
    key = profile.key if isinstance(profile, Profile) else str(profile)
    with transaction.atomic():
        instance = Profile.objects.select_for_update().get(key=key)
        document = map_rows_to_document(workspace_rows_get())
        index = next(
            position for position, entry in enumerate(document["profiles"]) if entry["key"] == key
        )
        entry = document["profiles"][index]
        entry["rules"] = _apply_rule_edits(entry.get("rules") or {}, rules or {})
        if budget is not None:
            entry["budget"] = budget
        issues = document_issues(document)
        if issues:
            raise WorkspaceValidationError(issues)

        layers = {layer.key: layer for layer in Layer.objects.all()}
        stored = {rule.layer_id: rule for rule in instance.rules.all()}
        wanted = entry["rules"]
        for rule in stored.values():
            if rule.layer.key not in wanted:
                rule._history_user = user
                rule.delete()
        for position, (layer_key, rule_document) in enumerate(wanted.items()):
            values = map_rule_values(rule_document) | {"position": position}
            rule = stored.get(layers[layer_key].pk)
            if rule is None:
                rule = Rule(profile=instance, layer=layers[layer_key], created_by=user)
            elif not _changed_fields(rule, values):
                continue
            for name, value in values.items():
                setattr(rule, name, value)
            rule.updated_by = user
            rule._history_user = user
            rule.save()
        if budget is not None and instance.budget != budget:
            instance.budget = budget
            instance.updated_by = user
            instance._history_user = user
            instance.save()
    return instance


__all__ = [
    "ImportSummary",
    "WorkspaceImportError",
    "WorkspaceValidationError",
    "profile_resolve",
    "profile_save_rules",
    "scenarios_upsert",
    "workspace_document_get",
    "workspace_export",
    "workspace_import",
    "workspace_parse",
    "workspace_resolve",
    "workspace_validate",
]


# --- scenarios ----------------------------------------------------------------------------

SCENARIO_FIELDS = ("name", "profile", "input", "now", "description", "format", "availability")


def _scenario_values(entry: dict, index: int, profiles: dict) -> dict:
    where = f"scenarios[{index}]"
    if not isinstance(entry, dict):
        raise WorkspaceValidationError([ValidationIssue(where, "must be an object")])
    unknown = sorted(set(entry) - {*SCENARIO_FIELDS, "default"})
    if unknown:
        raise WorkspaceValidationError([ValidationIssue(f"{where}.{unknown[0]}", "unknown field")])
    if not entry.get("name"):
        raise WorkspaceValidationError([ValidationIssue(f"{where}.name", "is required")])
    profile_key = canonical_string(entry.get("profile") or "")
    if profile_key not in profiles:
        raise WorkspaceValidationError(
            [ValidationIssue(f"{where}.profile", f'no profile "{profile_key}"')]
        )
    now = entry.get("now")
    return {
        "name": canonical_string(entry["name"]),
        "profile": profiles[profile_key],
        "input": json_safe(entry.get("input") or {}),
        "now": None if now is None else canonical_string(now),
        "description": canonical_string(entry.get("description") or ""),
        "format": entry.get("format"),
        "availability": json_safe(entry.get("availability") or {}),
        "is_default": bool(entry.get("default", False)),
    }


def scenarios_upsert(*, scenarios: list[dict]) -> dict[str, int]:
    """Create or update saved scenarios by name; return how many were created/updated/unchanged.

    Each entry is ``{name, profile, input, now, description?, format?, availability?,
    default?}``. Every request is checked against the stored workspace (a scenario that
    cannot resolve is an error), and nothing is written unless all are valid.
    """
    from profiles.models import Scenario

    counts = {"created": 0, "updated": 0, "unchanged": 0}
    if not isinstance(scenarios, list):
        raise WorkspaceValidationError([ValidationIssue("scenarios", "must be a list")])
    with transaction.atomic():
        profiles = {profile.key: profile for profile in Profile.objects.all()}
        wanted = [_scenario_values(entry, index, profiles) for index, entry in enumerate(scenarios)]
        compiled = cache.workspace_get().compiled
        for index, values in enumerate(wanted):
            probe = Scenario(**values)
            try:
                compiled.resolve(probe.as_request())
            except ResolverError as exc:
                raise WorkspaceValidationError(
                    [ValidationIssue(f"scenarios[{index}].{exc.path}".rstrip("."), exc.message)]
                ) from exc
        stored = {scenario.name: scenario for scenario in Scenario.objects.all()}
        defaults = {values["profile"].pk for values in wanted if values["is_default"]}
        # One default per profile: clear the old default before setting a new one.
        Scenario.objects.filter(profile_id__in=defaults, is_default=True).exclude(
            name__in=[values["name"] for values in wanted if values["is_default"]]
        ).update(is_default=False)
        for values in wanted:
            scenario = stored.get(values["name"])
            if scenario is None:
                Scenario.objects.create(**values)
                counts["created"] += 1
                continue
            changed = [name for name, value in values.items() if getattr(scenario, name) != value]
            if not changed:
                counts["unchanged"] += 1
                continue
            for name in changed:
                setattr(scenario, name, values[name])
            scenario.save()
            counts["updated"] += 1
    return counts


# --- single-object writes, ETags and expand (used by the API) ------------------------------


def document_etag(document) -> str:
    """Return a strong ETag of a document: a hash of its canonical JSON.

    Any edit that changes the document form changes the ETag, however it was made.
    """
    text = json.dumps(json_safe(document), sort_keys=True, separators=(",", ":"))
    return '"' + hashlib.sha256(text.encode()).hexdigest()[:32] + '"'


def workspace_writes_lock() -> None:
    """Block other single-object writers until this transaction ends (call inside ``atomic``)."""
    if not WorkspaceVersion.objects.select_for_update().filter(pk=1).exists():
        WorkspaceVersion.bump()
        WorkspaceVersion.objects.select_for_update().filter(pk=1).exists()


class EntryInvalid(WorkspaceValidationError):
    """A single-object write's validation issues, with ``field`` relative to the entry."""

    def __init__(self, issues: list[ValidationIssue], prefix: str | None):
        super().__init__(issues)
        self.prefix = prefix

    def as_dict(self) -> dict:
        body = super().as_dict()
        first = body["error"]["path"]
        if self.prefix and (first == self.prefix or first.startswith(self.prefix)):
            body["error"]["field"] = first[len(self.prefix) :].lstrip(".")
        return body


def workspace_document_change(
    change: Callable[[dict], str | None], *, user=None, check: Callable[[], None] | None = None
) -> ImportSummary:
    """Apply ``change`` to the stored document and save the result, all-or-nothing.

    A write takes the stored workspace document, changes one entry, and imports the result
    with ``workspace_import(mode="replace")``: the engine validates the whole document (errors
    carry paths such as ``profiles[3].rules.kb.mode``), only the rows that differ are written
    (with history), and the content version is bumped. Writers are serialized on the
    ``WorkspaceVersion`` row, so two never start from the same stale document.

    ``change(document)`` edits the document in place and returns the path of the entry it
    edited (``layers[2]``), used to name the field of an error. ``check()`` runs after the
    lock, before the document is read (an If-Match comparison). Raises ``EntryInvalid``.
    """
    with transaction.atomic():
        workspace_writes_lock()
        if check is not None:
            check()
        rows = workspace_rows_get()
        # A copy: the mapped document shares metadata objects with the rows it came from,
        # and the import compares the changed document with those same rows.
        document = copy.deepcopy(map_rows_to_document(rows))
        prefix = change(document)
        try:
            return workspace_import(document=document, mode="replace", user=user, rows=rows)
        except WorkspaceValidationError as exc:
            raise EntryInvalid(exc.issues, prefix) from exc


class RefNotAvailable(Exception):
    """The reference is not offered to this request (it never says why)."""


def resolution_refs(resolution: dict) -> set[tuple[str, str]]:
    """Return (layer key, item path) of every item a resolution offers to its request."""
    refs = set()
    for layer in resolution["layers"]:
        if layer["decision"]["kind"] == "omitted":
            continue
        materialized = layer["materialized"]
        for entry in (*materialized["items"], *materialized["references"]):
            refs.add((layer["layer"], entry["item"]))
    for reference in resolution["references"]:
        refs.add((reference["layer"], reference["item"]))
    return refs


def ref_expand(*, request: dict, ref: str) -> dict:
    """Return the item ``ref`` names when the resolution of ``request`` offers it.

    Privacy rule: a ref is available only when the resolution of the same request, on the
    same snapshot of the workspace, lists it for a selected layer (inline, a reference of
    any reason, or trimmed by the budget). Those are the layer's candidates after its
    itemFilter, so another customer's item is never among them. Raises ``RequestError`` for a
    bad request and ``RefNotAvailable`` for everything else, existing item or not.
    """
    snapshot = cache.workspace_get()
    resolution = snapshot.compiled.resolve(request)
    layer_key, separator, path = ref.partition("/")
    if not separator or (layer_key, path) not in resolution_refs(resolution):
        raise RefNotAvailable(ref)
    layer = next(entry for entry in snapshot.document["layers"] if entry["key"] == layer_key)
    item = next(entry for entry in layer.get("items") or [] if entry["path"] == path)
    return {
        "ref": ref,
        "layer": layer_key,
        "item": path,
        "title": item.get("title") or "",
        "body": item.get("body") or "",
        "metadata": json_safe(item.get("metadata") or {}),
    }


def profile_create(*, values: dict, user, rules: dict | None = None) -> Profile:
    """Create a profile (optionally with rules), validated in the stored workspace.

    Raises WorkspaceValidationError with the engine's issues; writes nothing when invalid.
    """
    with transaction.atomic():
        profile = Profile(**values, created_by=user, updated_by=user)
        issues = instance_issues(profile)
        if issues:
            raise WorkspaceValidationError(
                [ValidationIssue(name or "", message) for name, message in issues]
            )
        profile._history_user = user
        profile.save()
        if rules:
            profile_save_rules(profile=profile, rules=rules, user=user)
    return profile

"""Change sets: one change request holding changes over any entities, applied atomically.

A set is a list of entries ``{"kind": "consumer"|"layer"|"item"|"profile", "op":
"create"|"update"|"delete", "key": … (an item: "layer" and "path"), "value": {…}}``:

* ``create``: ``value`` is the whole SPEC §2 entry (its key, or an item's path, names it);
* ``update``: ``value``'s fields replace the entry's (``null`` removes a field); a profile's
  ``rules`` are partial per layer as a single-profile request's (``rules_merged``); a set
  does not rename (``value.key`` / ``value.path`` must name the entity) and does not change a
  layer's items (item entries do) nor ``governed`` (staff's, outside review);
* ``delete``: no ``value``.

It is validated against the stored workspace as a whole (``document_with_changes``, then the
engine's validator), its impact covers every saved scenario of every profile it can change
(``profiles.versioning.protection.profiles_affected`` before and after), and each entity it
touches has its ETag recorded (``entity_bases``): applying it (``change_set_write``, called by
``change_request_apply``) checks them under the writers' lock and writes every entry through the
ordinary write services, in one transaction, in an order that makes dependencies work.
"""

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from django.core.exceptions import ObjectDoesNotExist
from django.db import transaction
from django.db.models import Q

from profiles.authoring.profiles import (
    profile_create,
    profile_delete,
    profile_selections_park,
    profile_update,
)
from profiles.material.consumers import consumer_create, consumer_delete, consumer_update
from profiles.material.items import item_create, item_delete, item_update
from profiles.material.layers import layer_create, layer_delete, layer_update
from profiles.models import (
    ActivityOrigin,
    ChangeRequest,
    Consumer,
    Environment,
    Item,
    Layer,
    Profile,
    ProfileVersion,
)
from profiles.notifications.webhooks import change_request_event, webhook_event_emit
from profiles.safechange.impact import workspace_impact
from profiles.versioning.environments import SafeChangeError
from profiles.versioning.protection import profiles_affected
from profiles.versioning.versions import profile_documents_get
from profiles.workspace import cache
from profiles.workspace.concurrency import PreconditionFailed, document_etag, workspace_write
from profiles.workspace.entity_changes import KINDS, OPS, EntityChange, canonical_entry
from profiles.workspace.mappers import (
    map_consumer_to_resolver,
    map_item_to_resolver,
    map_layer_to_resolver,
)
from profiles.workspace.origin import WriteOrigin
from profiles.workspace.validation import (
    document_issues,
    issues_body,
    rules_merged,
    validate_consumer,
    validate_item,
    validate_layer,
    validate_profile,
)
from profiles.workspace.writing import Conflict, EntryInvalid
from resolver import ValidationIssue, WorkspaceError, compile_workspace, merge_rule
from resolver.validation import TEXT_RULE_MESSAGE, violates_text_rule

# One set holds at most this many entries (an import's proposal of a larger file is refused).
MAX_SET_CHANGES = 1_000
# ... and at most this many bytes of JSON (UTF-8): what a reviewer reads and every read of
# the request carries (an 8.7 MB set made each read 8.7 MB).
MAX_SET_BYTES = 2_000_000
ENTRY_FIELDS = ("kind", "op", "key", "layer", "path", "value")
SECTIONS = {"consumer": "consumers", "layer": "layers", "profile": "profiles"}
TITLE_MAX_LENGTH = ChangeRequest._meta.get_field("title").max_length
DESCRIPTION_MAX_LENGTH = 10_000
# The order entries are applied in: what others depend on first, what they stop using last.
APPLY_ORDER = {
    ("consumer", "create"): 0,
    ("consumer", "update"): 0,
    ("layer", "create"): 1,
    ("layer", "update"): 1,
    ("item", "create"): 2,
    ("item", "update"): 2,
    ("item", "delete"): 2,
    ("profile", "create"): 3,
    ("profile", "update"): 3,
    ("profile", "delete"): 4,
    ("layer", "delete"): 5,
    ("consumer", "delete"): 6,
}


# --- errors --------------------------------------------------------------------------------


class ChangeSetInvalid(SafeChangeError):
    """The set would not make a valid workspace; every issue names ``changes[i]…``."""

    code = "INVALID_WORKSPACE"

    def __init__(self, issues: list[ValidationIssue]):
        self.issues = issues
        first = issues[0]
        super().__init__(str(first), path=first.path, **issues_body(issues))


class StaleChangeSet(SafeChangeError):
    """Entities the set touches changed since it was written (or rebased); nothing is written."""

    status_code = 409
    code = "STALE_CHANGE_REQUEST"
    path = "entities"

    def __init__(self, change_request: ChangeRequest, refs: list[str]):
        named = ", ".join(refs[:10]) + (f" and {len(refs) - 10} more" if len(refs) > 10 else "")
        super().__init__(
            f"{named} changed since change request #{change_request.pk} was written: rebase it "
            "to recompute its impact, then apply it",
            entities=refs,
        )


# --- entries -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SetEntry:
    """One validated entry of a set (``key``: an item's layer key, with ``path``)."""

    index: int
    kind: str
    op: str
    key: str
    path: str | None
    value: dict | None

    @property
    def ref(self) -> str:
        return (
            f"{self.kind}:{self.key}/{self.path}"
            if self.kind == "item"
            else f"{self.kind}:{self.key}"
        )

    def as_dict(self) -> dict:
        """Return the entry in its wire shape."""
        where = {"layer": self.key, "path": self.path} if self.kind == "item" else {"key": self.key}
        entry = {"kind": self.kind, "op": self.op, **where}
        if self.value is not None:
            entry["value"] = self.value
        return entry


def _at(index: int, path: str = "") -> str:
    return f"changes[{index}]" + (f".{path}" if path and not path.startswith("[") else path)


def _name(value, index: int, field: str, issues: list) -> str | None:
    if isinstance(value, str) and value:
        if violates_text_rule(value):
            issues.append(ValidationIssue(_at(index, field), TEXT_RULE_MESSAGE))
            return None
        return value
    issues.append(ValidationIssue(_at(index, field), "is required (a string)"))
    return None


def _entry(index: int, raw, issues: list) -> SetEntry | None:
    """Return the entry's shape checked, or None with ``issues`` saying why."""
    if not isinstance(raw, dict):
        issues.append(ValidationIssue(_at(index), "must be an object {kind, op, key, value}"))
        return None
    before = len(issues)
    for name in raw:
        if name not in ENTRY_FIELDS:
            issues.append(
                ValidationIssue(
                    _at(index, str(name)),
                    "unknown field (use kind, op, key, value; layer and path for an item)",
                )
            )
    kind, op, value = raw.get("kind"), raw.get("op"), raw.get("value")
    if kind not in KINDS:
        issues.append(ValidationIssue(_at(index, "kind"), "must be one of " + ", ".join(KINDS)))
    if op not in OPS:
        issues.append(ValidationIssue(_at(index, "op"), "must be one of " + ", ".join(OPS)))
    if len(issues) > before:
        return None
    if op == "delete":
        if value is not None:
            issues.append(ValidationIssue(_at(index, "value"), "a delete takes no value"))
    elif not isinstance(value, dict):
        issues.append(
            ValidationIssue(_at(index, "value"), "must be an object (the entry's fields)")
        )
    elif op == "update" and not value:
        issues.append(ValidationIssue(_at(index, "value"), "must change at least one field"))
    if kind == "item":
        if "key" in raw:
            issues.append(ValidationIssue(_at(index, "key"), "an item is named by layer and path"))
        key = _name(raw.get("layer"), index, "layer", issues)
        given = raw.get("path")
        if op == "create" and isinstance(value, dict):
            if given is not None and given != value.get("path"):
                issues.append(ValidationIssue(_at(index, "path"), "must equal value.path"))
            given = value.get("path")
            field = "value.path"
        else:
            field = "path"
        path = _name(given, index, field, issues)
    else:
        for name in ("layer", "path"):
            if name in raw:
                issues.append(ValidationIssue(_at(index, name), f"only an item has a {name}"))
        given = raw.get("key")
        field = "key"
        if op == "create" and isinstance(value, dict):
            if given is not None and given != value.get("key"):
                issues.append(ValidationIssue(_at(index, "key"), "must equal value.key"))
            given, field = value.get("key"), "value.key"
        key, path = _name(given, index, field, issues), None
    if op == "update" and isinstance(value, dict):
        own = "path" if kind == "item" else "key"
        if own in value and value[own] != (path if kind == "item" else key):
            issues.append(
                ValidationIssue(
                    _at(index, f"value.{own}"),
                    f"a change set does not rename: delete and create, or leave {own} out",
                )
            )
        if kind == "layer" and "items" in value:
            issues.append(
                ValidationIssue(_at(index, "value.items"), "change items with item entries")
            )
    if kind == "layer" and isinstance(value, dict) and "governed" in value:
        issues.append(
            ValidationIssue(
                _at(index, "value.governed"),
                "a change set does not change whether a layer is governed (staff do, directly)",
            )
        )
    if kind == "profile" and op == "update" and isinstance(value, dict):
        rules = value.get("rules")
        if rules is not None and not isinstance(rules, dict):
            issues.append(
                ValidationIssue(_at(index, "value.rules"), "must be an object keyed by layer")
            )
        elif isinstance(rules, dict):
            for layer_key, partial in rules.items():
                if partial is not None and not isinstance(partial, dict):
                    issues.append(
                        ValidationIssue(_at(index, f"value.rules.{layer_key}"), "must be an object")
                    )
    if len(issues) > before or key is None or (kind == "item" and path is None):
        return None
    return SetEntry(index, kind, op, key, path, value if op != "delete" else None)


def change_set_bytes(changes) -> int:
    """Return the size of ``changes`` as compact JSON in UTF-8 (what a set's bound counts)."""
    try:
        text = json.dumps(changes, ensure_ascii=False, separators=(",", ":"), default=str)
    except ValueError:  # a circular structure: not JSON a client could have sent
        return MAX_SET_BYTES + 1
    return len(text.encode("utf-8", "surrogatepass"))


def change_set_entries(changes) -> list[SetEntry]:
    """Return the entries of a set's ``changes`` with their shape checked; raise
    ChangeSetInvalid naming ``changes[i].<field>``. Two entries of one entity are refused, and
    a set of more than ``MAX_SET_CHANGES`` entries or ``MAX_SET_BYTES`` bytes (at
    ``changes``)."""
    if not isinstance(changes, list):
        raise ChangeSetInvalid([ValidationIssue("changes", "must be a list of changes")])
    if not changes:
        raise ChangeSetInvalid([ValidationIssue("changes", "must hold at least one change")])
    if len(changes) > MAX_SET_CHANGES:
        raise ChangeSetInvalid(
            [
                ValidationIssue(
                    "changes",
                    f"a change set holds at most {MAX_SET_CHANGES:,} changes "
                    f"(got {len(changes):,})",
                )
            ]
        )
    size = change_set_bytes(changes)
    if size > MAX_SET_BYTES:
        raise ChangeSetInvalid(
            [
                ValidationIssue(
                    "changes",
                    f"a change set holds at most {MAX_SET_BYTES:,} bytes of JSON (got "
                    f"{size:,}): propose it in smaller sets",
                )
            ]
        )
    issues: list[ValidationIssue] = []
    entries: list[SetEntry] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(changes):
        entry = _entry(index, raw, issues)
        if entry is None:
            continue
        if entry.ref in seen:
            issues.append(
                ValidationIssue(
                    _at(index),
                    f"changes {entry.ref} again (changes[{seen[entry.ref]}] does): one entry "
                    "per entity",
                )
            )
            continue
        seen[entry.ref] = index
        entries.append(entry)
    if issues:
        raise ChangeSetInvalid(issues)
    return entries


def applied_order(entries: Iterable[SetEntry]) -> list[SetEntry]:
    """Return the entries in the order they apply (stable within a step)."""
    return sorted(entries, key=lambda entry: APPLY_ORDER[(entry.kind, entry.op)])


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
                issues.append(ValidationIssue(_at(entry.index, "layer"), f'no layer "{entry.key}"'))
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
                issues.append(ValidationIssue(_at(entry.index), f"{noun} exists already"))
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
                    _at(entry.index, "path" if entry.kind == "item" else "key"), f"no {noun}"
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


def _issue_of_change(issue: ValidationIssue, document: dict, indexes: dict[str, int]):
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
            _at(entry.index, f"value.{issue.path}" if issue.path else "value"), issue.message
        )
        for issue in issues
    ]


class _Index:
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


def _validated(document: dict, entries: list[SetEntry]) -> dict:
    """Return the document with the entries applied; raise ChangeSetInvalid naming each."""
    result, issues = _applied(document, entries)
    if issues:
        raise ChangeSetInvalid(issues)
    index = _Index(result)
    layer_keys = {layer.get("key") for layer in result["layers"] if isinstance(layer, dict)}
    consumer_keys = {c.get("key") for c in result["consumers"] if isinstance(c, dict)}
    for entry in entries:
        if entry.op != "delete":
            issues += _entry_issues(entry, index.get(entry.ref), layer_keys, consumer_keys)
    if issues:
        raise ChangeSetInvalid(issues)
    indexes = {entry.ref: entry.index for entry in entries}
    issues = [_issue_of_change(issue, result, indexes) for issue in document_issues(result)]
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
    return _validated(document, change_set_entries(changes))


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
    old, new = _Index(before), _Index(after)
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


def _compiled_after(snapshot, result: dict, entries: list[SetEntry]):
    """Compile the set's result, reusing every layer of the snapshot the set leaves alone."""
    touched = {entry.key for entry in entries if entry.kind in ("layer", "item")}
    tokens = {copy.key: copy.label for copy in snapshot.layers.values() if copy.key not in touched}
    return compile_workspace(result, previous=snapshot.compiled, tokens=tokens)


@dataclass(frozen=True)
class ChangeSetPreview:
    """What a set does to the stored workspace: its entries, the workspace it leaves, the
    entity changes, the profiles it affects and their impact."""

    entries: list[SetEntry]
    document: dict
    changes: list[EntityChange]
    affected: list[str]
    impact: list[dict]


def change_set_preview(changes, *, offset: int = 0, snapshot=None) -> ChangeSetPreview:
    """Validate a set against the committed workspace and compute its impact (writes
    nothing); raise ChangeSetInvalid."""
    entries = change_set_entries(changes)
    snapshot = snapshot or cache.workspace_get()
    touched = {entry.key for entry in entries if entry.kind in ("layer", "item")}
    before = cache.document_with_items(snapshot, touched)
    result = _validated(before, entries)
    entity_changes = set_entity_changes(before, result, entries)
    affected = set_affected_profiles(before, result, entity_changes)
    try:
        compiled = _compiled_after(snapshot, result, entries)
    except WorkspaceError as exc:  # checked above; the engine has the last word
        indexes = {entry.ref: entry.index for entry in entries}
        raise ChangeSetInvalid(
            [_issue_of_change(issue, result, indexes) for issue in exc.issues]
        ) from exc
    impact = workspace_impact(
        profiles=affected, before=snapshot.compiled, after=compiled, offset=offset
    )
    return ChangeSetPreview(entries, result, entity_changes, affected, impact)


# --- ETags of the entities ---------------------------------------------------------------------


def _refs_by_kind(refs: Iterable[str]) -> dict[str, list[str]]:
    by_kind: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for ref in refs:
        kind, _, name = ref.partition(":")
        by_kind[kind].append(name)
    return by_kind


def entity_etags_get(refs: Iterable[str]) -> dict[str, str | None]:
    """Return the current ETag of each entity (None: it does not exist), in four queries at
    most; the ETags are those of the write services' ``If-Match``."""
    refs = list(refs)
    by_kind = _refs_by_kind(refs)
    found: dict[str, str] = {}
    if by_kind["consumer"]:
        for consumer in Consumer.objects.filter(key__in=by_kind["consumer"]):
            found[f"consumer:{consumer.key}"] = document_etag(map_consumer_to_resolver(consumer))
    if by_kind["layer"]:
        for layer in Layer.objects.filter(key__in=by_kind["layer"]):
            entry = map_layer_to_resolver(layer, [])
            entry.pop("items", None)
            found[f"layer:{layer.key}"] = document_etag(entry)
    if by_kind["item"]:
        paths: dict[str, list[str]] = {}
        for name in by_kind["item"]:
            layer, _, path = name.partition("/")
            paths.setdefault(layer, []).append(path)
        wanted = Q()
        for layer, layer_paths in paths.items():
            wanted |= Q(layer__key=layer, path__in=layer_paths)
        for item in Item.objects.filter(wanted).select_related("layer"):
            found[f"item:{item.layer.key}/{item.path}"] = document_etag(map_item_to_resolver(item))
    if by_kind["profile"]:
        for key, document in profile_documents_get(by_kind["profile"]).items():
            found[f"profile:{key}"] = document_etag(document)
    return {ref: found.get(ref) for ref in refs}


def _bases(entries: list[SetEntry]) -> dict[str, str | None]:
    bases = entity_etags_get(entry.ref for entry in entries)
    issues = [
        ValidationIssue(_at(entry.index), f"{entry.ref} exists already")
        for entry in entries
        if entry.op == "create" and bases[entry.ref] is not None
    ]
    if issues:
        raise ChangeSetInvalid(issues)
    return bases


def change_set_refs(change_request: ChangeRequest) -> list[str]:
    """Return the refs of the entities the set touches, in the order of its entries."""
    refs = []
    for entry in change_request.entity_changes:
        if entry.get("kind") == "item":
            refs.append(f"item:{entry.get('layer')}/{entry.get('path')}")
        else:
            refs.append(f"{entry.get('kind')}:{entry.get('key')}")
    return refs


def change_set_stale(change_request: ChangeRequest) -> list[str]:
    """Return the refs of the entities that changed since the set was written or rebased
    (in the order of its entries)."""
    bases = change_request.entity_bases or {}
    refs = [ref for ref in change_set_refs(change_request) if ref in bases]
    current = entity_etags_get(refs)
    return [ref for ref in refs if current[ref] != bases[ref]]


# --- title and stored form ---------------------------------------------------------------------

# What ``str.splitlines`` breaks a text at: a title is one line, the subject of every email
# about its request (a mailer refuses a subject with a line break).
LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


def title_one_line_check(title: str) -> None:
    """Raise SafeChangeError at ``title`` when the title holds a line break."""
    if any(character in LINE_BREAKS for character in title):
        raise SafeChangeError(
            "title: must be one line (no line breaks: it is the subject of the request's emails)",
            path="title",
        )


_VERBS = {"create": "create", "update": "change", "delete": "delete"}


def change_set_title(entries: list[SetEntry]) -> str:
    """Return a title saying what the set does ("Create layer release-notes; change
    support-answer, support-staging; change 2 items in tickets")."""
    groups: dict[tuple[str, str], list[str]] = {}
    for entry in entries:
        # An item is counted in its layer, never named: a title is read by everyone (lists,
        # emails, webhooks' payloads), an item's path only by who may read material.
        groups.setdefault((entry.op, entry.kind), []).append(entry.key)
    parts = []
    for (op, kind), names in groups.items():
        if kind == "item":
            layers = list(dict.fromkeys(names))
            more = f" and {len(layers) - 3} more layers" if len(layers) > 3 else ""
            noun = f"{len(names)} item" + ("s" if len(names) > 1 else "")
            parts.append(f"{_VERBS[op]} {noun} in {', '.join(layers[:3])}{more}")
            continue
        noun = "" if kind == "profile" else (f"{kind}s " if len(names) > 1 else f"{kind} ")
        listed = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        parts.append(f"{_VERBS[op]} {noun}{listed}")
    title = "; ".join(parts)
    title = title[0].upper() + title[1:]
    return title if len(title) <= TITLE_MAX_LENGTH else title[: TITLE_MAX_LENGTH - 1] + "…"


def _clean_text(title, description, entries) -> tuple[str, str]:
    if title is None or (isinstance(title, str) and not title.strip()):
        title = change_set_title(entries)
    if not isinstance(title, str):
        raise SafeChangeError("title: must be a string", path="title")
    if description is None:
        description = ""
    if not isinstance(description, str):
        raise SafeChangeError("description: must be a string", path="description")
    for name, value, limit in (
        ("title", title, TITLE_MAX_LENGTH),
        ("description", description, DESCRIPTION_MAX_LENGTH),
    ):
        if violates_text_rule(value):
            raise SafeChangeError(f"{name}: {TEXT_RULE_MESSAGE}", path=name)
        if len(value) > limit:
            raise SafeChangeError(f"{name}: must be at most {limit:,} characters", path=name)
    title_one_line_check(title)
    return title.strip(), description


def _stored(preview: ChangeSetPreview) -> list[dict]:
    """Return the entries as a change request stores them: the wire shape, with the field
    diff of each against the workspace it was written (or rebased) on."""
    diffs = {}
    for change in preview.changes:
        diffs.setdefault(change.ref, change.as_dict()["fields"])
    return [{**entry.as_dict(), "fields": diffs.get(entry.ref, [])} for entry in preview.entries]


def change_set_changes(change_request: ChangeRequest) -> list[dict]:
    """Return the set's entries as given (without the stored field diffs)."""
    return [
        {name: value for name, value in entry.items() if name != "fields"}
        for entry in change_request.entity_changes
    ]


def change_set_diff(change_request: ChangeRequest) -> list[dict]:
    """Return each entry's entity change ``{kind, op, key | layer+path, fields}`` as computed
    when the set was written or last rebased."""
    return [
        {
            name: entry.get(name)
            for name in (
                "kind",
                "op",
                *(("layer", "path") if entry["kind"] == "item" else ("key",)),
            )
        }
        | {"fields": entry.get("fields", [])}
        for entry in change_request.entity_changes
    ]


def change_request_counts(change_request: ChangeRequest) -> dict[str, dict[str, int]]:
    """Return how many entities of each kind the request creates, changes and deletes (a
    created layer's items counted as item creates; one profile's request: that profile)."""
    counts = {kind: dict.fromkeys(OPS, 0) for kind in KINDS}
    if not change_request.is_change_set:
        counts["profile"]["create" if change_request.creates is not None else "update"] = 1
        return counts
    for entry in change_request.entity_changes:
        kind, op = entry.get("kind"), entry.get("op")
        if kind in counts and op in OPS:
            counts[kind][op] += 1
        if kind == "layer" and op == "create" and isinstance(entry.get("value"), dict):
            counts["item"]["create"] += len(entry["value"].get("items") or [])
    return counts


# --- what a reader sees ------------------------------------------------------------------------


def change_set_item_refs(change_request: ChangeRequest) -> set[str]:
    """Return the refs (``item:<layer>/<path>``) of the items the set writes: its item entries
    and the items of the layers it creates."""
    refs = set()
    for entry in change_request.entity_changes:
        if entry.get("kind") == "item":
            refs.add(f"item:{entry.get('layer')}/{entry.get('path')}")
        elif entry.get("kind") == "layer" and isinstance(entry.get("value"), dict):
            for item in entry["value"].get("items") or []:
                if isinstance(item, dict):
                    refs.add(f"item:{entry.get('key')}/{item.get('path')}")
    return refs


@dataclass(frozen=True)
class ChangeSetShown:
    """A set as one reader may see it. Item material (an item's path, title, body, metadata)
    is customer data: whoever may not read material (READ_MATERIAL, the rule the activity
    log applies to its item rows) sees no item entry, no item of a created layer, no ref of an
    item the set writes (entities, stale entities, the refs its impact admits), only how many
    item changes are withheld."""

    changes: list[dict]
    entity_changes: list[dict]
    entities: list[str]
    stale_entities: list[str]
    impact: list[dict]
    items_withheld: int


def _without_items(entry: dict) -> dict:
    if entry.get("kind") != "layer" or not isinstance(entry.get("value"), dict):
        return entry
    if "items" not in entry["value"]:
        return entry
    value = {name: field for name, field in entry["value"].items() if name != "items"}
    return {**entry, "value": value}


def _admitted_without(side: dict | None, units: set[str]) -> dict | None:
    if side is None:
        return None
    return {**side, "admitted": [ref for ref in side["admitted"] if ref not in units]}


def change_set_shown(
    change_request: ChangeRequest, *, material: bool, stale_entities: list[str] | None = None
) -> ChangeSetShown:
    """Return what a reader sees of the request's set (``material``: whether they may read
    material; ``stale_entities``: ``change_set_stale``'s answer when it was asked)."""
    changes = change_set_changes(change_request)
    diff = change_set_diff(change_request)
    entities = change_set_refs(change_request)
    stale = list(stale_entities or [])
    impact = list(change_request.impact)
    if material:
        return ChangeSetShown(changes, diff, entities, stale, impact, 0)
    hidden = change_set_item_refs(change_request)
    units = {ref.removeprefix("item:") for ref in hidden}
    return ChangeSetShown(
        changes=[_without_items(entry) for entry in changes if entry.get("kind") != "item"],
        entity_changes=[entry for entry in diff if entry.get("kind") != "item"],
        entities=[ref for ref in entities if ref not in hidden],
        stale_entities=[ref for ref in stale if ref not in hidden],
        impact=[
            {
                **entry,
                "before": _admitted_without(entry.get("before"), units),
                "after": _admitted_without(entry.get("after"), units),
            }
            for entry in impact
        ]
        if units
        else impact,
        items_withheld=len(hidden),
    )


def change_set_text_without_items(change_request: ChangeRequest, text: str) -> str:
    """Return ``text`` (a refusal's message, for a thread, an email or a webhook's payload,
    which readers see) with each item the set writes named by its layer only."""
    for ref in sorted(change_set_item_refs(change_request), key=len, reverse=True):
        layer = ref.removeprefix("item:").partition("/")[0]
        text = text.replace(ref, f"an item of layer {layer}")
    return text


def _fill(change_request: ChangeRequest, changes) -> ChangeSetPreview:
    """Validate ``changes`` now and store them with their bases, affected profiles, impact."""
    preview = change_set_preview(changes)
    change_request.entity_bases = _bases(preview.entries)
    change_request.entity_changes = _stored(preview)
    change_request.affected_profiles = preview.affected
    change_request.impact = preview.impact
    return preview


# --- services ------------------------------------------------------------------------------


def change_set_create(*, title=None, description="", changes, user) -> ChangeRequest:
    """Open a change request holding a set of changes over any entities.

    Validates the set against the committed workspace (ChangeSetInvalid naming
    ``changes[i]…``; creating an entity that exists is one), records the ETag of each entity
    it touches, the profiles whose answer it may change and the impact on their saved
    scenarios. ``title`` defaults to what the set does.
    """
    entries = change_set_entries(changes)
    title, description = _clean_text(title, description, entries)
    change_request = ChangeRequest(
        profile_key="", title=title, description=description, author=user, changes={}
    )
    _fill(change_request, changes)
    with transaction.atomic():
        change_request.save()
        webhook_event_emit("change_request.opened", change_request_event(change_request))
    return change_request


def change_set_revise(change_request: ChangeRequest, changes) -> None:
    """Give an open set new ``changes`` (validated, bases and impact recomputed); the caller
    saves it, makes a new revision and withdraws the approvals."""
    _fill(change_request, changes)


def change_set_rebase(change_request: ChangeRequest) -> bool:
    """Move a set onto the entities as they are now (validated again, impact recomputed);
    return whether its bases moved (then the caller withdraws the approvals)."""
    previous = dict(change_request.entity_bases or {})
    _fill(change_request, change_set_changes(change_request))
    return previous != change_request.entity_bases


def change_sets_approvals_required(change_requests) -> dict[int, int]:
    """Return, per set, the approvals it needs now: the most any protected environment of the
    profiles it affects asks for (the profiles' environments as they are now, and those the
    set moves or creates them into); 1 when none is protected (two queries)."""
    change_requests = [cr for cr in change_requests if cr.is_change_set]
    keys = {key for cr in change_requests for key in cr.affected_profiles}
    current = dict(Profile.objects.filter(key__in=keys).values_list("key", "environment"))
    environments_of: dict[int, set] = {}
    for cr in change_requests:
        environments = {current.get(key) for key in cr.affected_profiles}
        for entry in cr.entity_changes:
            if entry.get("kind") == "profile" and isinstance(entry.get("value"), dict):
                environments.add(entry["value"].get("environment"))
        environments_of[cr.pk] = environments - {None}
    wanted = set().union(*environments_of.values()) if environments_of else set()
    protected = dict(
        Environment.objects.filter(key__in=wanted, requires_change_request=True).values_list(
            "key", "approvals"
        )
    )
    return {
        pk: max([1, *(protected[key] for key in environments if key in protected)])
        for pk, environments in environments_of.items()
    }


def _profile_changes(key: str, value: dict) -> dict:
    """Return ``profile_update`` changes for a set's update: its partial rules merged into the
    stored rules (read under the writers' lock)."""
    changes = {name: field for name, field in value.items() if name != "rules"}
    stored = (profile_documents_get([key]).get(key) or {}).get("rules") or {}
    if "rules" in value and value["rules"] is None:
        changes["rules"] = dict.fromkeys(stored)
    elif isinstance(value.get("rules"), dict):
        changes["rules"] = {
            layer: merge_rule(stored.get(layer), partial)
            for layer, partial in value["rules"].items()
        }
    return changes


def _write(entry: SetEntry, *, user, origin: WriteOrigin, selection: dict | None = None) -> None:
    """Write one entry through its service (the ordinary write path); ``selection`` is the
    whole selection of a profile update parked before the set's writes."""
    writes = {"user": user, "origin": origin}
    if entry.kind == "consumer":
        if entry.op == "create":
            consumer_create(document=entry.value, **writes)
        elif entry.op == "update":
            consumer_update(key=entry.key, changes=entry.value, **writes)
        else:
            consumer_delete(key=entry.key, **writes)
    elif entry.kind == "layer":
        if entry.op == "create":
            layer_create(document=entry.value, **writes)
        elif entry.op == "update":
            layer_update(key=entry.key, changes=entry.value, **writes)
        else:
            layer_delete(key=entry.key, **writes)
    elif entry.kind == "item":
        if entry.op == "create":
            item_create(layer=entry.key, document=entry.value, **writes)
        elif entry.op == "update":
            item_update(layer=entry.key, path=entry.path, changes=entry.value, **writes)
        else:
            item_delete(layer=entry.key, path=entry.path, **writes)
    elif entry.op == "create":
        profile_create(document=entry.value, **writes)
    elif entry.op == "update":
        changes = _profile_changes(entry.key, entry.value) | (selection or {})
        profile_update(key=entry.key, changes=changes, **writes)
    else:
        profile_delete(key=entry.key, **writes)


def _failure(entry: SetEntry, exc: Exception) -> ChangeSetInvalid:
    """Return the refusal of a set whose entry the write path refused (nothing is written)."""
    if isinstance(exc, EntryInvalid):
        issues = [
            ValidationIssue(_at(entry.index, f"value.{i.path}" if i.path else ""), i.message)
            for i in exc.field_issues
        ]
    else:
        message = getattr(exc, "message", None) or str(exc) or exc.__class__.__name__
        issues = [ValidationIssue(_at(entry.index), f"{entry.ref}: {message}")]
    return ChangeSetInvalid(issues or [ValidationIssue(_at(entry.index), str(exc))])


def change_set_write(change_request: ChangeRequest, *, user, approvers: tuple[str, ...]) -> None:
    """Apply an approved set: under the writers' lock, every entity it touches must be as it
    was written against (else StaleChangeSet naming them); then every entry goes through its
    write service, in ``applied_order``, in this one transaction. Any entry refused raises
    ChangeSetInvalid and nothing is written. The services record the profile versions
    (source ``change-request``, authored by the requester, naming the approvers) and the
    activity of every entity."""
    entries = change_set_entries(change_set_changes(change_request))
    origin = WriteOrigin(
        source=ProfileVersion.Source.CHANGE_REQUEST,
        message=change_request.title,
        author=change_request.author,
        change_request=change_request,
        approvers=approvers,
        door=ActivityOrigin.CHANGE_REQUEST,
    )
    with workspace_write():
        stale = change_set_stale(change_request)
        if stale:
            raise StaleChangeSet(change_request, stale)
        # Profiles may take each other's selections (a swap): the moving ones are parked
        # first, and each update writes its whole selection.
        selections = profile_selections_park(
            changes={e.key: e.value for e in entries if e.kind == "profile" and e.op == "update"}
        )
        for entry in applied_order(entries):
            try:
                selection = selections.get(entry.key) if entry.kind == "profile" else None
                _write(entry, user=user, origin=origin, selection=selection)
            except (EntryInvalid, Conflict, ObjectDoesNotExist, PreconditionFailed) as exc:
                raise _failure(entry, exc) from exc


# --- a set from entity changes (an import's proposal) ------------------------------------------


def _changed_fields(before: dict, after: dict, *, skip=()) -> dict:
    """Return the fields of ``after`` that differ from ``before`` (None: no longer given)."""
    return {
        name: after.get(name)
        for name in (*after, *(name for name in before if name not in after))
        if name not in skip and before.get(name) != after.get(name)
    }


def _rules_changed(before: dict, after: dict) -> dict:
    """Return the partial rules that turn ``before``'s rules into ``after``'s."""
    rules = {}
    for layer, rule in after.items():
        saved = before.get(layer)
        if saved is None:
            # A rule given whole: every field the default rule may have is named.
            rules[layer] = dict(rule)
        elif saved != rule:
            rules[layer] = _changed_fields(saved, rule)
    for layer in before:
        if layer not in after:
            rules[layer] = None
    return rules


def change_set_from_entity_changes(changes: Iterable[EntityChange]) -> list[dict]:
    """Return the set (wire shape) that makes these entity changes: creates with their whole
    entry, updates with the changed fields only (a profile's rules as partial rules), deletes.

    ``document_with_changes(before, change_set_from_entity_changes(
    workspace_entity_changes(before, after)))`` is ``after`` (tests/profiles/safechange).
    """
    changes = list(changes)
    created = {c.key for c in changes if c.kind == "layer" and c.op == "create"}
    deleted = {c.key for c in changes if c.kind == "layer" and c.op == "delete"}
    # A created layer carries its items; a deleted one takes its items with it.
    items_of: dict[str, list[dict]] = {key: [] for key in created}
    for change in changes:
        if change.kind == "item" and change.key in created:
            items_of[change.key].append(dict(change.after))
    entries = []
    for change in changes:
        if change.kind == "item" and (change.key in created or change.key in deleted):
            continue
        where = (
            {"layer": change.key, "path": change.path}
            if change.kind == "item"
            else {"key": change.key}
        )
        entry: dict = {"kind": change.kind, "op": change.op, **where}
        if change.op == "create":
            entry["value"] = dict(change.after)
            if change.kind == "layer":
                entry["value"]["items"] = items_of[change.key]
        elif change.op == "update":
            value = _changed_fields(change.before, change.after, skip=("rules", "items"))
            if change.kind == "profile":
                rules = _rules_changed(
                    change.before.get("rules") or {}, change.after.get("rules") or {}
                )
                if rules:
                    value["rules"] = rules
            entry["value"] = value
        entries.append(entry)
    return entries

"""The whole workspace at once: export, parse and import (all-or-nothing, in bulk).

An import takes the writers' lock like every single-entry write, so two imports (or an import
and an edit) never interleave: the result is one of them applied after the other. Rows whose
values do not change are not written; the layers whose material changed get a new content
token, and the version is bumped explicitly once for the whole import.
"""

import json
import re
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import yaml
from django.utils import timezone

from profiles.activity.records import activity_record_many
from profiles.authoring.profiles import profiles_park
from profiles.models import ActivityOrigin, Consumer, Item, Layer, Profile, Rule
from profiles.versioning.protection import protection_check
from profiles.versioning.versions import WriteOrigin, profile_versions_record
from profiles.workspace.bulk_writes import BulkWriter
from profiles.workspace.concurrency import workspace_write
from profiles.workspace.derived import Written
from profiles.workspace.entity_changes import workspace_entity_changes
from profiles.workspace.mappers import (
    canonical_string,
    map_consumer_values,
    map_item_values,
    map_layer_values,
    map_profile_values,
    map_rows_to_document,
    map_rule_values,
    map_values_to_document,
)
from profiles.workspace.origin import origin_of
from profiles.workspace.selectors import workspace_rows_get, workspace_values_get
from profiles.workspace.validation import WorkspaceValidationError, document_issues
from profiles.workspace.writing import author, workspace_changed
from resolver import ValidationIssue, WorkspaceError
from resolver.documents import dump_yaml
from resolver.documents import load_document as load_workspace_text

IMPORT_MODES = ("merge", "replace")


class WorkspaceImportError(WorkspaceValidationError):
    """The import wrote nothing; ``issues`` lists every error with its path in the file."""


# --- export -------------------------------------------------------------------------------


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


# A summary names at most this many rows per kind and action; the counts stay exact.
NAMES_LISTED = 50
NAMED_ACTIONS = ("created", "updated", "deleted")


@dataclass
class ImportSummary:
    """What an import changed, per kind of row: created, updated, deleted, unchanged.

    ``counts`` are exact. ``names`` lists what was created, updated and deleted: consumers,
    layers and profiles by key, items as ``layer/path``, rules as ``profile/layer``, in the
    file's order (deletions in the stored order), at most ``NAMES_LISTED`` per kind and
    action, so a 50,000-item import keeps a small summary; the count minus the names listed
    is how many more there are.
    """

    mode: str
    counts: dict[str, dict[str, int]] = field(
        default_factory=lambda: {
            kind: {"created": 0, "updated": 0, "deleted": 0, "unchanged": 0}
            for kind in ("consumers", "layers", "items", "profiles", "rules")
        }
    )
    names: dict[str, dict[str, list[str]]] = field(
        default_factory=lambda: {
            kind: {action: [] for action in NAMED_ACTIONS}
            for kind in ("consumers", "layers", "items", "profiles", "rules")
        }
    )

    @property
    def changed(self) -> bool:
        return any(
            counts["created"] or counts["updated"] or counts["deleted"]
            for counts in self.counts.values()
        )

    def add(self, kind: str, action: str, number: int = 1, names=()) -> None:
        """Count ``number`` rows; ``names`` (keys, or (layer, path) / (profile, layer)
        pairs, an iterable read only as far as the list has room) names them."""
        self.counts[kind][action] += number
        if names:
            self.name(kind, action, names)

    def name(self, kind: str, action: str, names) -> None:
        """List the first of ``names`` (counted elsewhere) while the list has room."""
        listed = self.names[kind].get(action)
        if listed is None or len(listed) >= NAMES_LISTED:
            return
        for name in islice(names, NAMES_LISTED - len(listed)):
            listed.append(name if isinstance(name, str) else "/".join(name))

    def name_deletions(self, rows, target: dict) -> None:
        """Name the stored rows (``WorkspaceValues``) the target document does not keep (and
        the items and rules their deletion takes along); ``_delete`` counts them as it
        deletes."""
        layer_keys = {layer.id: layer.key for layer in rows.layers}
        consumer_keys = {canonical_string(entry["key"]) for entry in target.get("consumers") or []}
        item_paths = {
            canonical_string(entry["key"]): {
                canonical_string(item["path"]) for item in entry.get("items") or []
            }
            for entry in target.get("layers") or []
        }
        rule_layers = {
            canonical_string(entry["key"]): {
                canonical_string(layer_key) for layer_key in entry.get("rules") or {}
            }
            for entry in target.get("profiles") or []
        }
        self.name(
            "consumers",
            "deleted",
            (row.key for row in rows.consumers if row.key not in consumer_keys),
        )
        self.name(
            "layers", "deleted", (row.key for row in rows.layers if row.key not in item_paths)
        )
        self.name(
            "items",
            "deleted",
            (
                (layer.key, item.path)
                for layer in rows.layers
                for item in rows.items.get(layer.id, ())
                if item.path not in item_paths.get(layer.key, ())
            ),
        )
        self.name(
            "profiles", "deleted", (row.key for row in rows.profiles if row.key not in rule_layers)
        )
        self.name(
            "rules",
            "deleted",
            (
                (profile.key, layer_keys[rule.layer_id])
                for profile in rows.profiles
                for rule in rows.rules.get(profile.id, ())
                if layer_keys[rule.layer_id] not in rule_layers.get(profile.key, ())
            ),
        )

    def as_dict(self) -> dict:
        return {"mode": self.mode, "changed": self.changed, **self.counts, "names": self.names}

    def lines(self) -> list[str]:
        """Return the summary in words, a line per kind: counts, then what they name."""
        lines = []
        for kind, counts in self.counts.items():
            figures = []
            for action, number in counts.items():
                if not number:
                    continue
                listed = self.names[kind].get(action)
                if listed:
                    more = number - len(listed)
                    named = ", ".join(listed) + (f" and {more} more" if more else "")
                    figures.append(f"{number} {action} ({named})")
                else:
                    figures.append(f"{number} {action}")
            lines.append(f"{kind}: {', '.join(figures) or 'none'}")
        return lines

    def __str__(self) -> str:
        return "; ".join(self.lines())


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


def workspace_import(
    *,
    document: dict | None = None,
    text: str | None = None,
    mode: str = "merge",
    user=None,
    origin: WriteOrigin | None = None,
) -> ImportSummary:
    """Import a workspace document (or its YAML/JSON text) all-or-nothing, in one transaction.

    ``merge`` (default) upserts consumers, layers and profiles by key and items by path; a
    profile in the file gets exactly the file's rules. ``replace`` also deletes what the file
    does not contain. A document with any error writes nothing: WorkspaceImportError carries
    every issue with its path in the file. Rows whose values do not change are not written,
    so importing the same file twice changes nothing (no history entry, no version bump).
    The import holds the writers' lock from before it reads the stored rows until it commits.
    ``origin`` is on whose behalf its profile versions are written (None: the user's).
    """
    if mode not in IMPORT_MODES:
        raise ValueError(f"unknown import mode {mode!r} (use merge or replace)")
    if (document is None) == (text is None):
        raise ValueError("give either document or text")
    if text is not None:
        document = workspace_parse(text=text)

    summary = ImportSummary(mode=mode)
    origin = origin_of(origin, ActivityOrigin.IMPORT)
    with workspace_write():
        stored = workspace_values_get()
        target = import_target(stored, document, mode=mode)
        changes = workspace_entity_changes(map_values_to_document(stored), target)
        # Safe change: what can change a protected answer needs a change request (profiles
        # too are refused below, where their versions are recorded).
        protection_check(changes, user=user, origin=origin)
        writer = BulkWriter(user=author(origin.author or user), now=timezone.now())
        written: dict[tuple[int, str], Written] = {}
        changed_layers = _synchronize(
            stored, target, writer=writer, summary=summary, written=written
        )
        if summary.changed:
            counts = summary.counts
            profiles_changed = any(
                counts[kind][action]
                for kind in ("consumers", "profiles", "rules")
                for action in ("created", "updated", "deleted")
            )
            workspace_changed(layers=changed_layers, profiles=profiles_changed, written=written)
            if profiles_changed:
                # Safe change: a version per changed profile; protected environments refuse.
                profile_versions_record(
                    keys=[profile.key for profile in stored.profiles]
                    + [canonical_string(entry["key"]) for entry in target.get("profiles") or []],
                    user=user,
                    origin=origin,
                )
            # Profiles are logged where their versions are recorded.
            activity_record_many(
                (change for change in changes if change.kind != "profile"),
                user=user,
                origin=origin,
            )
    return summary


def import_target(stored, document, *, mode: str) -> dict:
    """Return the workspace an import of ``document`` leaves (stored rows ``stored``, as
    ``workspace_values_get`` reads them); raise WorkspaceImportError with every issue at its
    path in the file. Writes nothing."""
    merged = None
    if mode == "merge" and _mergeable(document):
        merged = _merge_documents(map_values_to_document(stored), document)
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
    return target


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


_PATH = r"(consumers|layers|profiles)\[(\d+)\](?:\.items\[(\d+)\])?"
_TOP_PATH = re.compile("^" + _PATH)
# A path of the merged document named inside a message ("first at layers[3]").
_PATH_IN_MESSAGE = re.compile(r"(?<![\w.\]])" + _PATH)


def _in_file(match: re.Match, origins: dict) -> tuple[str | None, str]:
    """Return the file's path for a path of the merged document, or None and words naming
    the stored row it is."""
    section, index, item_index = match.group(1), int(match.group(2)), match.group(3)
    kind, where = origins[section][index]
    if item_index is None:
        if kind == "file":
            return f"{section}[{where}]", ""
        return None, f"stored {section[:-1]} {where}"
    item_origins = origins.get(f"items:{index}")
    item_kind, item_where = (
        item_origins[int(item_index)] if item_origins else (kind, int(item_index))
    )
    if kind == "file" and item_kind == "file":
        return f"{section}[{where}].items[{item_where}]", ""
    return None, f"stored item {item_where}" if item_kind == "stored" else "stored item"


def _issue_in_file(issue: ValidationIssue, origins: dict) -> ValidationIssue:
    """Translate a path of the merged document into the file's path (or name the stored row),
    in the issue's path and in its message."""

    def translated(match: re.Match) -> str:
        path, words = _in_file(match, origins)
        return path if path is not None else words

    message = _PATH_IN_MESSAGE.sub(translated, issue.message)
    match = _TOP_PATH.match(issue.path)
    if not match:
        return ValidationIssue(issue.path, message)
    path, words = _in_file(match, origins)
    if path is not None:
        return ValidationIssue(path + issue.path[match.end() :], message)
    if match.group(3) is not None:
        return ValidationIssue(issue.path, f"{message} (in the stored workspace)", stored=True)
    return ValidationIssue(issue.path, f"{message} (conflicts with {words})", stored=True)


def _upsert(
    model,
    kind: str,
    wanted: list[tuple[Any, dict]],
    existing: dict[Any, Any],
    *,
    writer: BulkWriter,
    summary: ImportSummary,
    touched: set | None = None,
    park=None,
) -> dict[Any, int]:
    """Create or update rows; ``wanted`` is [(lookup key, values)], ``existing`` maps lookup
    keys to the stored value rows (``WorkspaceValues``). Rows whose values are all equal are
    not written.

    Return the id of every wanted row by its lookup key; the lookup keys of rows created or
    updated are added to ``touched``. ``park(rows, updates)``, given, runs before any row is
    written, with the stored and new values of the rows to update (profiles move their
    selections out of each other's way there); it returns the fields it overwrote in the
    database, which the update then writes in full: the rows as read no longer say what is
    stored in those fields, so comparing with them would keep the parked values.
    """
    touched = set() if touched is None else touched
    to_create, to_update, update_fields = [], [], set()
    ids = {}
    for lookup_key, values in wanted:
        row = existing.get(lookup_key)
        if row is None:
            to_create.append((lookup_key, values))
            touched.add(lookup_key)
            continue
        ids[lookup_key] = row.id
        changed = [name for name, value in values.items() if getattr(row, name) != value]
        if changed:
            update_fields.update(changed)
            to_update.append(row._asdict() | values)
            touched.add(lookup_key)
            summary.add(kind, "updated", names=(lookup_key,))
        else:
            summary.add(kind, "unchanged")
    if park is not None and to_update:
        update_fields.update(park([existing[key] for key in touched if key in existing], to_update))
    if to_create:
        created = writer.create(model, [values for _, values in to_create])
        for (lookup_key, _), row_id in zip(to_create, created, strict=True):
            ids[lookup_key] = row_id
        summary.add(kind, "created", len(to_create), names=(key for key, _ in to_create))
    writer.update(model, to_update, sorted(update_fields))
    return ids


_KIND_BY_MODEL = {
    "profiles.Consumer": "consumers",
    "profiles.Layer": "layers",
    "profiles.Item": "items",
    "profiles.Profile": "profiles",
    "profiles.Rule": "rules",
}


SELECTION = ("consumer_id", "objective", "environment")


def _park_selections(stored_rows, updates: list[dict]) -> tuple[str, ...]:
    """Give the profiles whose selection (consumer, objective, environment) an import changes
    a selection no profile can have, before any profile is written: the file's profiles may
    take each other's selections (a swap, or a new profile taking a freed one), and the
    unique selection is checked row by row. Return the fields parked (the objective, or none):
    the update writes them for every row, so each parked row gets the file's value in the
    same transaction even when only its consumer or environment changes; the parked value is
    never committed, and no history records it."""
    before = {row.id: row for row in stored_rows}
    moving = [
        row["id"]
        for row in updates
        if any(getattr(before[row["id"]], name) != row[name] for name in SELECTION)
    ]
    if not moving:
        return ()
    profiles_park(ids=moving)
    return ("objective",)


def _delete(queryset, kind: str, summary: ImportSummary) -> None:
    """Delete in batches (history records each row); count cascaded rows under their kind."""
    _, per_model = queryset.delete()
    for label, number in per_model.items():
        if label in _KIND_BY_MODEL and number:
            summary.add(_KIND_BY_MODEL[label], "deleted", number)


def _synchronize(
    stored,
    target: dict,
    *,
    writer: BulkWriter,
    summary: ImportSummary,
    written: dict[tuple[int, str], Written] | None = None,
) -> set[int]:
    """Make the stored workspace (``stored``: its value rows) equal to the (valid) target.

    Return the ids of the layers whose own fields or items changed; the items created or
    changed are added to ``written`` as stored (their derived rows need no read of them).
    """
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
    summary.name_deletions(stored, target)
    _delete(Profile.objects.exclude(key__in=profile_keys).order_by("pk"), "profiles", summary)
    gone_layers = Layer.objects.exclude(key__in=layer_keys)
    gone_items = (
        Item.objects.filter(layer__in=gone_layers).order_by("pk").values_list("pk", flat=True)
    )
    summary.add("items", "deleted", writer.delete(Item, list(gone_items)))
    _delete(gone_layers.order_by("pk"), "layers", summary)

    consumer_ids = _upsert(
        Consumer,
        "consumers",
        [(values["key"], values) for values in consumers_wanted],
        {consumer.key: consumer for consumer in stored.consumers},
        writer=writer,
        summary=summary,
    )

    changed_layers: set = set()
    layer_ids = _upsert(
        Layer,
        "layers",
        [(values["key"], values) for values, _ in layers_wanted],
        {layer.key: layer for layer in stored.layers if layer.key in layer_keys},
        writer=writer,
        summary=summary,
        touched=changed_layers,
    )

    # Items: one batch for every layer.
    stored_items = {}
    stale_item_ids = []
    paths_wanted = {
        layer_values["key"]: {values["path"] for values in items}
        for layer_values, items in layers_wanted
    }
    for layer in stored.layers:
        if layer.key not in layer_keys:
            continue
        wanted_paths = paths_wanted[layer.key]
        for item in stored.items.get(layer.id, ()):
            if item.path in wanted_paths:
                stored_items[(layer.key, item.path)] = item
            else:
                stale_item_ids.append(item.id)
                changed_layers.add(layer.key)
    summary.add("items", "deleted", writer.delete(Item, stale_item_ids))
    items_wanted = []
    for layer_values, items in layers_wanted:
        layer_key = layer_values["key"]
        layer_id = layer_ids[layer_key]
        for values in items:
            values["layer_id"] = layer_id
            items_wanted.append(((layer_key, values["path"]), values))
    items_touched: set = set()
    item_ids = _upsert(
        Item,
        "items",
        items_wanted,
        stored_items,
        writer=writer,
        summary=summary,
        touched=items_touched,
    )
    changed_layers.update(layer_key for layer_key, _ in items_touched)
    if written is not None:
        values_of = dict(items_wanted)
        for lookup in items_touched:
            values = values_of[lookup]
            written[(values["layer_id"], values["path"])] = Written(
                id=item_ids[lookup],
                title=values["title"],
                body=values["body"],
                metadata=values["metadata"],
                updated_at=writer.at,
            )

    profile_ids = _upsert(
        Profile,
        "profiles",
        [
            (
                values["key"],
                {k: v for k, v in values.items() if k != "consumer"}
                | {"consumer_id": consumer_ids[values["consumer"]]},
            )
            for values, _ in profiles_wanted
        ],
        {profile.key: profile for profile in stored.profiles if profile.key in profile_keys},
        writer=writer,
        summary=summary,
        park=_park_selections,
    )
    _delete(Consumer.objects.exclude(key__in=consumer_keys).order_by("pk"), "consumers", summary)

    stored_rules = {}
    stale_rule_ids = []
    wanted_rule_keys = {
        (values["key"], layer_key) for values, rules in profiles_wanted for layer_key, _ in rules
    }
    layer_key_by_id = {layer_id: key for key, layer_id in layer_ids.items()}
    for profile in stored.profiles:
        if profile.key not in profile_keys:
            continue
        for rule in stored.rules.get(profile.id, ()):
            rule_key = (profile.key, layer_key_by_id.get(rule.layer_id))
            if rule_key in wanted_rule_keys:
                stored_rules[rule_key] = rule
            else:
                stale_rule_ids.append(rule.id)
    _delete(Rule.objects.filter(pk__in=stale_rule_ids).order_by("pk"), "rules", summary)
    rules_wanted = []
    for profile_values, rules in profiles_wanted:
        profile_key = profile_values["key"]
        for layer_key, values in rules:
            rules_wanted.append(
                (
                    (profile_key, layer_key),
                    values
                    | {"profile_id": profile_ids[profile_key], "layer_id": layer_ids[layer_key]},
                )
            )
    _upsert(Rule, "rules", rules_wanted, stored_rules, writer=writer, summary=summary)
    return {layer_ids[key] for key in changed_layers}

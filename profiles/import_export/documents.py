"""The workspace document as a file: its export, its parse, and the workspace an import of it
leaves (validated, every issue at its path in the file).

Nothing here writes: the import itself (``profiles.import_export.imports``) takes the writers'
lock, then asks ``import_target`` what the stored rows must become.
"""

import json
import re
from typing import Any

import yaml

from profiles.workspace.mappers import (
    canonical_string,
    map_rows_to_document,
    map_values_to_document,
)
from profiles.workspace.selectors import workspace_rows_get
from profiles.workspace.validation import WorkspaceValidationError, document_issues
from resolver import ValidationIssue, WorkspaceError
from resolver.documents import dump_yaml
from resolver.documents import load_document as load_workspace_text


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

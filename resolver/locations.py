"""Where an issue is in the text of a document: the entry it concerns, its line and column.

Validation works on the loaded document and reports document paths
(``profiles[0].rules.tickets.maxItems``); a person fixing a file also needs the entry's key
and the line. ``locate_issues`` finds them after the fact, only when there are issues: it
composes the text again (libyaml's node graph, no Python objects built) and follows each path
through it, so loading a valid document costs nothing more.

* Lines and columns are 1-based and point at the value as written. A path whose last step
  is not written (a missing field) points at the nearest enclosing value that is.
* A value reached through a YAML alias is where its anchor wrote it; ``alias_line`` and
  ``alias_column`` give the first alias the path went through, in the entry named.
* JSON is read the same way (JSON written with spaces is YAML too). JSON that YAML does not
  read (a tab for indentation, a key over 1,024 characters) gets the entry but no line.
* An issue at path ``""`` (a loader error, which names its line itself) is left as it is.

Like ``resolver.documents``, an edge module: it needs PyYAML, and ``import resolver`` does not
load it.
"""

import dataclasses
import re

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from resolver.documents import load_document
from resolver.errors import ResolverError, ValidationIssue
from resolver.yaml_plain import collection_paused

__all__ = ["locate_issues"]

try:
    from yaml import CSafeLoader as _FastSafeLoader
except ImportError:  # PyYAML built without libyaml
    _FastSafeLoader = None

_MERGE_TAG = "tag:yaml.org,2002:merge"
_INDEX = re.compile(r"\[(\d+)\]")
_ENTRY = re.compile(r"^(consumers|layers|profiles)\[(\d+)\](?:\.(items)\[(\d+)\]|\.(rules)\.)?")
_LAYER_ITEM = re.compile(r"^items\[(\d+)\]")
# What may stand between a mapping key (or the previous sequence entry) and an alias: spaces,
# line breaks, indicators and comments, never another value.
_BEFORE_ALIAS = re.compile(r"(?:#[^\n]*|[^*#])*")


def locate_issues(text: str | bytes, issues: list[ValidationIssue]) -> list[ValidationIssue]:
    """Return ``issues`` with the entry each concerns and the line and column of its value.

    ``text`` is the document the issues' paths refer to. Never raises for a text it cannot
    read: such issues come back as they are.
    """
    located = [issue for issue in issues if issue.path]
    if not located:
        return list(issues)
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8-sig", "replace")
    root = _compose(text)
    document = None
    if root is None:
        try:
            document = load_document(text)
        except ResolverError:
            return list(issues)
    out = []
    for issue in issues:
        if not issue.path:
            out.append(issue)
        elif root is not None:
            out.append(_located(issue, text, root))
        else:
            entry = _entry_name(issue.path, lambda *steps: _document_fields(document, steps))
            out.append(dataclasses.replace(issue, entry=entry))
    return out


def _compose(text: str):
    """Return the YAML node graph of ``text``, or None when YAML does not read it."""
    for composer in (_FastComposer, _PureComposer):
        if composer is None:
            continue
        loader = composer(text)
        try:
            with collection_paused():
                return loader.get_single_node()
        except (yaml.YAMLError, ValueError, RecursionError):
            continue
        finally:
            loader.dispose()
    return None


class _UntaggedComposing:
    """Compose without resolving the scalars' tags: only the graph's shape and marks count."""

    def resolve(self, kind, value, implicit):
        return _MERGE_TAG if value == "<<" and implicit[0] else ""


class _PureComposer(_UntaggedComposing, yaml.SafeLoader):
    """PyYAML's own parser: it reads escaped surrogate pairs, which libyaml refuses."""


_FastComposer = (
    type("_FastComposer", (_UntaggedComposing, _FastSafeLoader), {})
    if _FastSafeLoader is not None
    else None
)


def _located(issue: ValidationIssue, text: str, root) -> ValidationIssue:
    node, alias_index = _follow(root, issue.path, text)
    mark = node.start_mark
    fields = {
        "entry": _entry_name(issue.path, lambda *steps: _node_fields(root, steps)),
        "line": mark.line + 1,
        "column": mark.column + 1,
    }
    if alias_index is not None:
        line_start = text.rfind("\n", 0, alias_index) + 1
        fields["alias_line"] = text.count("\n", 0, line_start) + 1
        fields["alias_column"] = alias_index - line_start + 1
    return dataclasses.replace(issue, **fields)


def _follow(root, path: str, text: str):
    """Return the node at ``path`` (or the nearest written one above it) and the text index
    of the first alias on the way (None when no alias was followed)."""
    node, rest, alias_index = root, path, None
    while rest:
        if node.__class__ is MappingNode:
            if node is not root:
                rest = rest.removeprefix(".")
            step = _mapping_step(node, rest)
            if step is None:
                break
            key_node, child, rest, merge_key = step
            if merge_key is not None and alias_index is None:
                alias_index = _alias_at(text, merge_key.end_mark.index)
            after = key_node.end_mark.index
        elif node.__class__ is SequenceNode:
            match = _INDEX.match(rest)
            if match is None or int(match.group(1)) >= len(node.value):
                break
            position = int(match.group(1))
            child, rest = node.value[position], rest[match.end() :]
            after = node.value[position - 1].end_mark.index if position else node.start_mark.index
        else:
            break
        if alias_index is None and child.start_mark.index < after:
            # Written before its place: an alias of a node anchored earlier.
            alias_index = _alias_at(text, after)
        node = child
    return node, alias_index


def _mapping_step(node, rest: str):
    """Return (key node, value node, rest of the path, merge key node) for the longest key
    ``rest`` starts with (keys may hold dots and brackets), or None.

    A key the mapping does not write itself may come from a merge key (``<<: *base``): the
    merged mappings are searched after it, as PyYAML's constructor merges them; the merge
    key is then returned last (else None).
    """
    best = None
    merges = []
    for key_node, value_node in node.value:
        if key_node.__class__ is not ScalarNode:
            continue
        name = key_node.value
        if name == "<<" and key_node.tag == _MERGE_TAG:
            merges.append((key_node, value_node))
            continue
        fits = rest.startswith(name) and (len(rest) == len(name) or rest[len(name)] in ".[")
        if fits and (best is None or len(name) > len(best[0].value)):
            best = (key_node, value_node, rest[len(name) :], None)
    if best is not None:
        return best
    for merge_key, value_node in merges:
        sources = value_node.value if value_node.__class__ is SequenceNode else [value_node]
        for source in sources:
            if source.__class__ is MappingNode:
                step = _mapping_step(source, rest)
                if step is not None:
                    return (*step[:3], merge_key)
    return None


def _alias_at(text: str, after: int) -> int | None:
    """Return the index of the alias written after ``after`` (a key's end, or the previous
    entry's), or None when the text there is not one (a merge key's entry)."""
    position = _BEFORE_ALIAS.match(text, after).end()
    return position if text.startswith("*", position) else None


def _entry_name(path: str, fields) -> str | None:
    """Return what the path's entry is called: ``profile K``, ``rule K/LAYER``, ``layer K``,
    ``item LAYER/PATH``, ``consumer K``; None outside an entry or when its key is not a
    string. ``fields(section, index, ...)`` returns the entry's key (or an item's path)."""
    match = _ENTRY.match(path)
    if match is not None:
        section, index = match.group(1), int(match.group(2))
        key = fields(section, index, "key")
        if key is None:
            return None
        key = _shown(key)
        if match.group(3):
            item_path = fields(section, index, "items", int(match.group(4)), "path")
            if item_path is None:
                return f"layer {key}"
            return f"item {key}/{_shown(item_path)}"
        if match.group(5):
            layer = _rule_layer(path[match.end() :])
            return f"rule {key}/{_shown(layer)}" if layer else f"profile {key}"
        return f"{section[:-1]} {key}"
    match = _LAYER_ITEM.match(path)  # one layer's document (an import of one layer)
    if match is not None:
        key = fields("key")
        item_path = fields("items", int(match.group(1)), "path")
        if key is not None and item_path is not None:
            return f"item {_shown(key)}/{_shown(item_path)}"
    return None


def _shown(name: str) -> str:
    """Return a key or path as an entry's name can show it: escaped surrogate pairs joined,
    what no text column can store (NUL, a lone surrogate) escaped, at most 200 characters."""
    if not name.isascii():
        name = name.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    name = _UNSTORABLE.sub(lambda match: match.group().encode("unicode_escape").decode(), name)
    return name if len(name) <= _LONGEST_NAME else name[: _LONGEST_NAME - 1] + "…"


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_LONGEST_NAME = 200


def _rule_layer(rest: str) -> str:
    """The rule's layer key: the path's step after ``rules.`` (up to the next field)."""
    return rest.split(".", 1)[0]


def _node_fields(root, steps) -> str | None:
    """Return the scalar text at ``steps`` (names and indexes) of the node graph, or None."""
    node = root
    for step in steps:
        if isinstance(step, int):
            if node.__class__ is not SequenceNode or step >= len(node.value):
                return None
            node = node.value[step]
        else:
            if node.__class__ is not MappingNode:
                return None
            node = next(
                (
                    value
                    for key, value in node.value
                    if key.__class__ is ScalarNode and key.value == step
                ),
                None,
            )
            if node is None:
                return None
    return node.value if node.__class__ is ScalarNode else None


def _document_fields(document, steps) -> str | None:
    """Return the scalar at ``steps`` of a loaded document as text, or None."""
    value = document
    for step in steps:
        if isinstance(step, int):
            if not isinstance(value, list) or step >= len(value):
                return None
        elif not isinstance(value, dict) or step not in value:
            return None
        value = value[step]
    if value is None or isinstance(value, dict | list):
        return None
    return str(value)

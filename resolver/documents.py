"""Reading workspace documents (YAML or JSON) within the limits of SPEC §2.2.

The CLI, the import, the studio upload and the API all read documents here, so every door
refuses the same things the same way: duplicate mapping keys, nesting deeper than 64
levels and YAML aliases that would add more than 100,000 nodes, each a loader error at
path ``""``. The limits are checked on the composed YAML node graph, where an alias is
still one shared node, before any Python object is built; a JSON text's nesting is
measured by a linear scan before the (recursive) JSON parser sees it.

YAML goes through libyaml (``CSafeLoader``) when PyYAML has it, else through the
pure-Python classes, with the same results. A YAML timestamp that is no date
in SPEC §3's sense (outside years 1–9999 UTC, year 0000, no such day) loads as the string
it was written as.

Only JSON data is loaded: a YAML tag of the safe schema that builds something else
(``!!binary`` bytes, a ``!!set``, ``!!omap``/``!!pairs`` lists of pairs) is a loader error
at the value's path, naming its line and column (``!!python/…`` and unknown tags have no
constructor at all).

Loading a large document is dominated by building Python objects, so libyaml's node graph
is turned into the document by one tight function (``_construct_plain``) that knows only
the plain YAML types and checks the nesting on the way; anything else (other tags, merge
keys, a duplicate key, an error) is built again by PyYAML's own constructor, so results and
errors stay PyYAML's. The cyclic garbage collector is paused meanwhile: the millions of
objects a large document allocates form no cycles, and its passes over them cost more than
the parsing.

Writing YAML is ``resolver.yaml_writer``'s (``dump_yaml``, re-exported here); what reading
and writing share (the core tags, the quicker tag resolution, ``collection_paused``) is in
``resolver.yaml_plain``.

This module is an edge of the package like ``cli.py``: ``import resolver`` does not load it
(or PyYAML).
"""

import contextlib
import json
import re
from array import array
from itertools import accumulate

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from resolver.errors import RequestError, WorkspaceError
from resolver.limits import MAX_ALIAS_NODES, MAX_DOCUMENT_DEPTH
from resolver.values import parse_date
from resolver.yaml_plain import (
    _MAP_TAG,
    _SEQ_TAG,
    _STR_TAG,
    _NotPlain,
    _QuickResolving,
    collection_paused,
)
from resolver.yaml_writer import _FastDumper as _FastDumper
from resolver.yaml_writer import dump_yaml

try:
    from yaml import CSafeLoader as _FastSafeLoader
except ImportError:  # PyYAML built without libyaml
    _FastSafeLoader = None

__all__ = ["DocumentLimitError", "dump_yaml", "load_document", "load_json"]

TOO_DEEP = f"the document nests deeper than {MAX_DOCUMENT_DEPTH} levels"
TOO_MANY_ALIAS_NODES = f"YAML aliases add more than {MAX_ALIAS_NODES:,} nodes"
RECURSIVE_ALIAS = "a YAML alias refers to a node that contains it"


class DocumentLimitError(Exception):
    """A document beyond a SPEC §2.2 document limit (nesting, alias expansion)."""


# -- entry points ----------------------------------------------------------------------------


def load_document(text: str | bytes) -> object:
    """Parse a workspace document: JSON if it parses as JSON, else safe YAML.

    Raises ``WorkspaceError`` (``INVALID_WORKSPACE``, path ``""``) for text that is not UTF-8,
    not valid YAML, has a duplicate mapping key, or breaks a document limit of SPEC §2.2.
    """
    text = _decode(text, WorkspaceError)
    try:
        return _load_json(text, MAX_DOCUMENT_DEPTH, _reject_duplicate_json_keys)
    except DocumentLimitError as exc:
        raise WorkspaceError(str(exc)) from None
    except ValueError:  # not JSON (most YAML fails at its first character): read it as YAML
        pass
    return _load_yaml(text)


def load_json(
    text: str | bytes,
    *,
    max_depth: int = MAX_DOCUMENT_DEPTH,
    error=RequestError,
    allow_nan: bool = True,
) -> object:
    """Parse a JSON text nested at most ``max_depth`` levels (an API request body).

    The depth is measured before parsing, so a deeply nested body never reaches the
    recursive parser. Raises ``error`` (``RequestError``, i.e. ``INVALID_REQUEST``, by
    default) at path ``""`` for text that is not UTF-8 JSON or is nested too deep, and with
    ``allow_nan=False`` for ``NaN``/``Infinity``, which JSON itself does not have.
    """
    text = _decode(text, error)
    try:
        return _load_json(text, max_depth, None, None if allow_nan else _refuse_constant)
    except DocumentLimitError as exc:
        raise error(str(exc)) from None
    except ValueError as exc:
        raise error(f"not valid JSON ({exc})") from None


# -- JSON ------------------------------------------------------------------------------------

# A JSON string (escapes included), and a YAML single-quoted one, so that the brackets
# inside strings are not counted.
_QUOTED = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|\'[^\']*\'', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_OPENS_CONTAINER = re.compile(r"[ \t\r\n]*[\[{]")
_BRACKET_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")


def json_depth(text: str) -> int:
    """Return how many levels of brackets nest in a JSON text (outside its strings), in C."""
    brackets = _NOT_BRACKET.sub("", _QUOTED.sub("", text))
    if not brackets:
        return 0
    steps = array("b", brackets.encode("ascii").translate(_BRACKET_STEPS))
    return max(accumulate(steps))


def _could_nest_deeper(text: str, max_depth: int) -> bool:
    """Return whether the text may nest deeper than ``max_depth``: only a text that opens a
    container can nest, and it cannot nest deeper than it has opening brackets (counted in C,
    strings included: an upper bound that spares most texts the exact count)."""
    if not _OPENS_CONTAINER.match(text):
        return False  # a scalar
    return text.count("[") + text.count("{") > max_depth


def _load_json(text: str, max_depth: int, pairs_hook, parse_constant=None):
    if _could_nest_deeper(text, max_depth) and json_depth(text) > max_depth:
        raise DocumentLimitError(
            TOO_DEEP if max_depth == MAX_DOCUMENT_DEPTH else f"nested deeper than {max_depth}"
        )
    return json.loads(text, object_pairs_hook=pairs_hook, parse_constant=parse_constant)


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def _reject_duplicate_json_keys(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise WorkspaceError(f'duplicate key "{key}"')
        out[key] = value
    return out


# -- YAML ------------------------------------------------------------------------------------


def _load_yaml(text: str):
    loader_class = _FastLoader if _FastLoader is not None else _PureLoader
    try:
        try:
            return _read_yaml(text, loader_class)
        except yaml.scanner.ScannerError as exc:
            # libyaml refuses escaped surrogates ("\ud83d\ude00"), which SPEC §2.2 reads as
            # one character: the pure loader reads them and joins the pairs.
            if loader_class is _PureLoader or "invalid Unicode character escape" not in str(exc):
                raise
            return _read_yaml(text, _PureLoader)
    except DocumentLimitError as exc:
        raise WorkspaceError(str(exc)) from None
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc)
        if "maximum nesting depth" in problem:  # libyaml's own limit (1,000 levels)
            raise WorkspaceError(TOO_DEEP) from None
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise WorkspaceError(f"{where}not valid YAML or JSON ({problem})") from None
    except (ValueError, UnicodeError) as exc:  # e.g. an integer of more than 4,300 digits
        raise WorkspaceError(f"not valid YAML or JSON ({exc})") from None


def _decode(text: str | bytes, error) -> str:
    if isinstance(text, str):
        return text
    try:
        return bytes(text).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"the document is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _read_yaml(text: str, loader_class):
    with collection_paused():
        loader = loader_class(text)
        # Without an anchor there is no alias: only the nesting needs checking.
        loader.aliases_possible = _ANCHOR.search(text) is not None
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()


# Where an anchor could start: an "&" before a name, not inside a word (an anchor is a token
# of its own, so it follows a space, a line break, an indicator or nothing). A text without
# one holds no aliases. Conservative: an "&amp;" in a body matches as well.
_ANCHOR = re.compile(r"&(?<!\w&)\S")


def check_nesting(root) -> None:
    """Raise ``DocumentLimitError`` when a node tree without aliases nests too deep."""
    todo = [(root, 1)] if root.__class__ is not ScalarNode else []
    while todo:
        node, level = todo.pop()
        if level > MAX_DOCUMENT_DEPTH:
            raise DocumentLimitError(TOO_DEEP)
        level += 1
        if node.__class__ is MappingNode:
            for key, value in node.value:
                if key.__class__ is not ScalarNode:
                    todo.append((key, level))
                if value.__class__ is not ScalarNode:
                    todo.append((value, level))
        else:
            todo.extend((child, level) for child in node.value if child.__class__ is not ScalarNode)


def check_document_limits(root) -> None:
    """Raise ``DocumentLimitError`` when a composed YAML node graph breaks SPEC §2.2.

    An alias is the node it refers to, shared; each occurrence after the first adds that
    node's whole expanded subtree (mapping keys included). The walk visits every node once
    and keeps each one's expanded size and height, so it costs the size of the text, not
    of the expansion. An alias to a node that contains it (a cycle) is refused.
    """
    finished: dict[int, tuple[int, int]] = {}  # node id -> (expanded size, height)
    opened: set[int] = set()
    seen_scalars: set[int] = set()
    added = 0
    # Each entry: (node, None) to open it, or (node, (container children, scalar count)) to
    # finish it once its children are finished.
    todo: list = [(root, None)]
    while todo:
        node, pending = todo.pop()
        key = id(node)
        if pending is not None:
            children, scalars = pending
            size, height = 1 + scalars, 0
            for child in children:
                child_size, child_height = finished[id(child)]
                size += child_size
                if child_height > height:
                    height = child_height
            height += 1
            if height > MAX_DOCUMENT_DEPTH:
                raise DocumentLimitError(TOO_DEEP)
            finished[key] = (size, height)
            continue
        if key in finished:  # an alias of a node read before
            added += finished[key][0]
            if added > MAX_ALIAS_NODES:
                raise DocumentLimitError(TOO_MANY_ALIAS_NODES)
            continue
        if key in opened:
            raise DocumentLimitError(RECURSIVE_ALIAS)
        if node.__class__ is ScalarNode:  # only the root can be a lone scalar here
            finished[key] = (1, 0)
            continue
        opened.add(key)
        if node.__class__ is MappingNode:
            members = [member for pair in node.value for member in pair]
        else:
            members = node.value
        children = []
        scalars = 0
        for member in members:
            if member.__class__ is ScalarNode:
                scalars += 1
                member_key = id(member)
                if member_key in seen_scalars:  # an alias of a scalar adds one node
                    added += 1
                    if added > MAX_ALIAS_NODES:
                        raise DocumentLimitError(TOO_MANY_ALIAS_NODES)
                else:
                    seen_scalars.add(member_key)
            else:
                children.append(member)
        todo.append((node, (children, scalars)))
        todo.extend((child, None) for child in reversed(children))


def _construct_mapping(loader, node, deep=False):
    loader.flatten_mapping(node)
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            hashable = key in seen
        except TypeError:
            raise WorkspaceError(
                f"line {key_node.start_mark.line + 1}: a mapping key must be a scalar"
            ) from None
        if hashable:
            raise WorkspaceError(
                f'line {key_node.start_mark.line + 1}: duplicate key "{key}" '
                f"(first on line {seen[key] + 1})"
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


def _construct_timestamp(loader, node):
    """Return a YAML timestamp as a date/datetime when SPEC §3 calls it a date, else as text."""
    try:
        value = SafeConstructor.construct_yaml_timestamp(loader, node)
    except (ValueError, OverflowError):  # year 0000, no such day, an offset beyond 24 hours
        return node.value
    return value if parse_date(value) is not None else node.value


# The tags of YAML's safe schema whose values are no JSON data, as a document writes them.
_NOT_JSON_TAGS = {
    f"tag:yaml.org,2002:{name}": f"!!{name}" for name in ("binary", "set", "omap", "pairs")
}


class _NotJsonValue(Exception):
    def __init__(self, node):
        self.node = node


def _refuse_not_json(loader, node):
    raise _NotJsonValue(node)


def node_path(root, target) -> str:
    """Return the document path (``layers[0].items[2].metadata.x``) of a node of the graph.

    A node used as a mapping key has the mapping's path. Called only to report an error.
    """
    todo = [(root, "")]
    seen: set[int] = set()
    while todo:
        node, path = todo.pop()
        if node is target:
            return path
        if id(node) in seen or node.__class__ is ScalarNode:
            continue
        seen.add(id(node))
        if node.__class__ is MappingNode:
            children = []
            for key, value in node.value:
                if key is target:
                    return path
                name = key.value if key.__class__ is ScalarNode else "?"
                children.append((value, f"{path}.{name}" if path else name))
        else:
            children = [(child, f"{path}[{n}]") for n, child in enumerate(node.value)]
        todo.extend(reversed(children))
    return ""


class _LimitedLoading:
    """Check the document limits on the composed node graph, before anything is built."""

    aliases_possible = True
    # Whether plain nodes may be built by ``_construct_plain`` (its strings are the scalars'
    # text as composed).
    plain_construction = True

    def get_single_data(self):
        node = self.get_single_node()
        if node is None:
            return None
        if self.aliases_possible:
            check_document_limits(node)
        if self.plain_construction:
            # Anything it does not build, or an error, is PyYAML's constructor's to give.
            with contextlib.suppress(Exception):
                return _construct_plain(self, node, shared={} if self.aliases_possible else None)
        if not self.aliases_possible:
            check_nesting(node)
        try:
            return self.construct_document(node)
        except _NotJsonValue as exc:
            mark = exc.node.start_mark
            raise WorkspaceError(
                f"line {mark.line + 1}, column {mark.column + 1}: YAML "
                f"{_NOT_JSON_TAGS[exc.node.tag]} builds no JSON value (a document holds "
                "strings, numbers, true/false, null, lists and mappings)",
                path=node_path(node, exc.node),
            ) from None


# Scalars whose value depends on their tag and text alone (immutable values, built once per
# distinct text).
_PLAIN_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "timestamp")
)


def _construct_plain(loader, root, *, shared: dict | None):
    """Return the document of a composed node graph, equal to the loader's own construction.

    Only untagged-or-core mappings, sequences and scalars are built here; a mapping key
    repeated, a merge key (``<<``), another tag or a container nested deeper than
    ``MAX_DOCUMENT_DEPTH`` raises (the caller then runs PyYAML's constructor, which gives
    the same document or the error). ``shared`` (when the text may hold aliases) keeps one
    object per node, as PyYAML's constructor does.
    """
    scalars: dict = {}
    constructors = loader.yaml_constructors

    def build(node, level):
        if node.__class__ is ScalarNode:
            tag = node.tag
            if tag == _STR_TAG:
                return node.value
            key = (tag, node.value)
            value = scalars.get(key, scalars)
            if value is scalars:
                if tag not in _PLAIN_SCALAR_TAGS:
                    raise _NotPlain
                value = scalars[key] = constructors[tag](loader, node)
            return value
        if level > MAX_DOCUMENT_DEPTH:
            raise _NotPlain
        if shared is not None and id(node) in shared:
            return shared[id(node)]
        level += 1
        if node.__class__ is MappingNode:
            if node.tag != _MAP_TAG:
                raise _NotPlain
            value = {}
            if shared is not None:
                shared[id(node)] = value
            for key_node, value_node in node.value:
                if key_node.tag not in _KEY_TAGS:
                    raise _NotPlain
                key = build(key_node, level)
                if key in value:
                    raise _NotPlain
                value[key] = build(value_node, level)
            return value
        if node.__class__ is not SequenceNode or node.tag != _SEQ_TAG:
            raise _NotPlain
        if shared is None:
            return [build(child, level) for child in node.value]
        value = shared[id(node)] = []
        value.extend(build(child, level) for child in node.value)
        return value

    return build(root, 1)


# A plain mapping's keys are scalars of these tags: not "<<" (merge) nor "=" (value), which
# PyYAML's mapping constructor rewrites, nor containers.
_KEY_TAGS = _PLAIN_SCALAR_TAGS | {_STR_TAG}


class _PureLoader(_LimitedLoading, yaml.SafeLoader):
    """The pure-Python loader: nesting is refused while composing (its composer recurses)."""

    _depth = 0
    plain_construction = False  # its strings join escaped surrogate pairs (construct_scalar)

    def compose_sequence_node(self, anchor):
        return self._nested(super().compose_sequence_node, anchor)

    def compose_mapping_node(self, anchor):
        return self._nested(super().compose_mapping_node, anchor)

    def _nested(self, compose, anchor):
        self._depth += 1
        try:
            if self._depth > MAX_DOCUMENT_DEPTH:
                raise DocumentLimitError(TOO_DEEP)
            return compose(anchor)
        finally:
            self._depth -= 1

    def construct_scalar(self, node):
        value = super().construct_scalar(node)
        if isinstance(value, str) and not value.isascii() and _SURROGATE.search(value):
            # Join escaped surrogate pairs into one character; lone ones stay (and fail the
            # text rule of validation).
            value = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        return value


_SURROGATE = re.compile("[\ud800-\udfff]")


_FastLoader = (
    type(
        "_FastLoader",
        (_LimitedLoading, _QuickResolving, _FastSafeLoader),
        {"__doc__": "libyaml's loader."},
    )
    if _FastSafeLoader is not None
    else None
)

for _loader in (_PureLoader, _FastLoader):
    if _loader is not None:
        _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
        _loader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)
        for _tag in _NOT_JSON_TAGS:
            _loader.add_constructor(_tag, _refuse_not_json)

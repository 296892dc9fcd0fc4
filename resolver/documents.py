"""Reading and writing workspace documents (YAML or JSON) within the limits of SPEC §2.2.

The CLI, the import, the studio upload and the API all read documents here, so every door
refuses the same things the same way: duplicate mapping keys, nesting deeper than 64
levels and YAML aliases that would add more than 100,000 nodes, each a loader error at
path ``""``. The limits are checked on the composed YAML node graph, where an alias is
still one shared node, before any Python object is built; a JSON text's nesting is
measured by a linear scan before the (recursive) JSON parser sees it.

YAML goes through libyaml (``CSafeLoader`` / ``CSafeDumper``) when PyYAML has it, else
through the pure-Python classes, with the same results. A YAML timestamp that is no date
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

This module is an edge of the package like ``cli.py``: ``import resolver`` does not load it
(or PyYAML).
"""

import contextlib
import gc
import io
import json
import re
import secrets
from array import array
from itertools import accumulate

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from resolver.errors import RequestError, WorkspaceError
from resolver.limits import MAX_ALIAS_NODES, MAX_DOCUMENT_DEPTH
from resolver.values import parse_date

try:
    from yaml import CSafeDumper as _CSafeDumper
    from yaml import CSafeLoader as _FastSafeLoader
except ImportError:  # PyYAML built without libyaml
    _CSafeDumper = _FastSafeLoader = None

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


def dump_yaml(document) -> str:
    """Return a workspace document as block-style YAML, keys in document order.

    The text is byte for byte what PyYAML's pure-Python safe dumper writes (``width=100``,
    unicode as is). libyaml writes the same text several times faster, except for a few
    kinds of string (``_WRITTEN_DIFFERENTLY_BY_LIBYAML``); a document holding one is written
    in pieces: libyaml for the runs of items without such a string, PyYAML for the rest.
    """
    if _FastDumper is None:
        return _dump(document, yaml.SafeDumper)
    try:
        return _dump_plain(document)
    except _NotPlain:
        pass
    differs, shared = _scan(document)
    if not differs:
        return _dump(document, _FastDumper)
    if shared or not _has_item_lists(document):
        return _dump(document, yaml.SafeDumper)  # anchors and aliases must stay in one piece
    return _dump_in_pieces(document)


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


def _load_json(text: str, max_depth: int, pairs_hook, parse_constant=None):
    # Only a text that opens a container can nest; any other JSON text is a scalar.
    if _OPENS_CONTAINER.match(text) and json_depth(text) > max_depth:
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


@contextlib.contextmanager
def collection_paused():
    """Pause the cyclic garbage collector while a large document's objects are built.

    Each collection pass walks every object still alive, so building a document of a
    million objects with the collector on costs several times the building itself. Objects
    are still freed by reference counting; the collector resumes afterwards (unless it was
    already off).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


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


_STR_TAG = "tag:yaml.org,2002:str"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MAP_TAG = "tag:yaml.org,2002:map"
# Scalars whose value depends on their tag and text alone (immutable values, built once per
# distinct text).
_PLAIN_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "timestamp")
)


class _NotPlain(Exception):
    """The node graph holds something ``_construct_plain`` leaves to PyYAML's constructor."""


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


class _QuickResolving:
    """PyYAML's tag resolution, in fewer steps: libyaml calls it for every node it reads and
    twice for every scalar it writes.

    The same implicit resolvers (a copy taken at import, by first character) and the same
    default tags; the safe loader and dumper have no path resolvers, so that step is left out.
    """

    def resolve(self, kind, value, implicit):
        if kind is ScalarNode:
            if implicit[0]:
                for tag, regexp in _IMPLICIT_RESOLVERS.get(value[:1], _ANY_FIRST_RESOLVERS):
                    if regexp.match(value):
                        return tag
            return _STR_TAG
        return _SEQ_TAG if kind is SequenceNode else _MAP_TAG


_ANY_FIRST_RESOLVERS = tuple(yaml.resolver.Resolver.yaml_implicit_resolvers.get(None, ()))
_IMPLICIT_RESOLVERS = {
    first: (*resolvers, *_ANY_FIRST_RESOLVERS)
    for first, resolvers in yaml.resolver.Resolver.yaml_implicit_resolvers.items()
    if first is not None
}

_FastLoader = (
    type(
        "_FastLoader",
        (_LimitedLoading, _QuickResolving, _FastSafeLoader),
        {"__doc__": "libyaml's loader."},
    )
    if _FastSafeLoader is not None
    else None
)
_FastDumper = (
    type("_FastDumper", (_QuickResolving, _CSafeDumper), {"__doc__": "libyaml's dumper."})
    if _CSafeDumper is not None
    else None
)

for _loader in (_PureLoader, _FastLoader):
    if _loader is not None:
        _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
        _loader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)
        for _tag in _NOT_JSON_TAGS:
            _loader.add_constructor(_tag, _refuse_not_json)


# -- YAML output -----------------------------------------------------------------------------

WIDTH = 100

# The strings libyaml's emitter writes unlike PyYAML's (found by comparing the two on random
# text): any with a character beyond U+FFFF (libyaml quotes and escapes it, PyYAML writes it
# as is), and any PyYAML writes double-quoted (a character it escapes, a space before or
# after a line break), whose long lines the two fold differently. Mapping keys have two
# more cases (``_key_differs``).
_UNSAFE_CHARACTER = "[^\n\x20-\x7e\xa0-\ud7ff\ue000-\ufffd]"
_WRITTEN_DIFFERENTLY_BY_LIBYAML = re.compile(f"{_UNSAFE_CHARACTER}|\ufeff| \n|\n ")
_CONTAINERS = (dict, list, tuple, set, frozenset)
_LINE_START = re.compile("(?:^|(?<=[\n\x85\u2028\u2029]))(?=[^\n\x85\u2028\u2029])")


def _dump(document, dumper, width: int = WIDTH) -> str:
    return yaml.dump(document, Dumper=dumper, sort_keys=False, allow_unicode=True, width=width)


def _dump_pure(document, width: int = WIDTH) -> str:
    return _dump(document, yaml.SafeDumper, width)


def _dump_libyaml(document, width: int = WIDTH) -> str:
    try:
        return _dump_plain(document, width)
    except _NotPlain:
        return _dump(document, _FastDumper, width)


def _dump_plain(document, width: int = WIDTH) -> str:
    """Return ``_dump(document, _FastDumper, width)`` for a document of plain values, faster.

    The nodes PyYAML's representer would build are built here in one pass (a str, int,
    bool, float or None scalar, a dict, a list), and libyaml writes them. Raises
    ``_NotPlain`` when that text could differ from PyYAML's pure-Python dumper's (a string
    of ``_WRITTEN_DIFFERENTLY_BY_LIBYAML``, a key of ``_key_differs``) or the document holds
    anything else: another type, a container twice (PyYAML writes an anchor).
    """
    stream = io.StringIO()
    dumper = _FastDumper(
        stream, default_flow_style=False, allow_unicode=True, width=width, sort_keys=False
    )
    strings: list[str] = []
    containers: set[int] = set()
    keys_checked: set[str] = set()

    def node(value):
        kind = value.__class__
        if kind is str:
            strings.append(value)
            return ScalarNode(_STR_TAG, value)
        if kind is dict or kind is list:
            if id(value) in containers:
                raise _NotPlain
            containers.add(id(value))
            if kind is list:
                return SequenceNode(_SEQ_TAG, [node(item) for item in value], flow_style=False)
            pairs = []
            for key, item in value.items():
                if key not in keys_checked:
                    if _key_differs(key):
                        raise _NotPlain
                    keys_checked.add(key)
                pairs.append((node(key), node(item)))
            return MappingNode(_MAP_TAG, pairs, flow_style=False)
        if kind is int or kind is bool or kind is float or value is None:
            return dumper.represent_data(value)
        raise _NotPlain

    try:
        with collection_paused():
            root = node(document)
            if _written_differently(strings):
                raise _NotPlain
            dumper.open()
            dumper.serialize(root)
            dumper.close()
    finally:
        dumper.dispose()
    return stream.getvalue()


_UNSAFE_CHARACTER_RE = re.compile(_UNSAFE_CHARACTER)


def _written_differently(strings: list[str]) -> bool:
    """Return whether any of ``strings`` matches ``_WRITTEN_DIFFERENTLY_BY_LIBYAML``.

    One pass over all of them joined: an "x" between two strings forms no match.
    """
    text = "x".join(strings)
    return (
        " \n" in text
        or "\n " in text
        or "\ufeff" in text
        or _UNSAFE_CHARACTER_RE.search(text) is not None
    )


def _scan(value) -> tuple[bool, bool]:
    """Return (some string is written differently by libyaml, some container is shared)."""
    differs = False
    seen: set[int] = set()
    stack = [value]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if not differs and _WRITTEN_DIFFERENTLY_BY_LIBYAML.search(value):
                differs = True
        elif isinstance(value, _CONTAINERS):
            if id(value) in seen:
                return differs, True
            seen.add(id(value))
            if isinstance(value, dict):
                if not differs:
                    differs = any(_key_differs(key) for key in value)
                stack.extend(value.values())
            else:
                stack.extend(value)
    return differs, False


def _key_differs(key) -> bool:
    """Return True for a mapping key libyaml could write unlike PyYAML.

    Besides the strings of ``_WRITTEN_DIFFERENTLY_BY_LIBYAML``: the empty key (PyYAML writes
    ``? ''``) and long ones, which PyYAML stops writing as simple keys at 128 characters and
    libyaml beyond 128 bytes.
    """
    if not isinstance(key, str):
        return isinstance(key, _CONTAINERS)
    return not 0 < len(key) <= 30 or _WRITTEN_DIFFERENTLY_BY_LIBYAML.search(key) is not None


def _has_item_lists(document) -> bool:
    return isinstance(document, dict) and isinstance(document.get("layers"), list)


def _dump_in_pieces(document) -> str:
    """Write a workspace whose items are cut into runs, each written by the fitting dumper.

    The rest of the document (the skeleton) is written with one marker line in place of
    each run; a run written on its own, narrower by the marker's indentation and then
    indented by it, is exactly what the whole document's dump holds there (a block
    sequence's entries are written independently of their neighbours).
    """
    token = f"piece-{secrets.token_hex(8)}-"
    runs: dict[str, tuple[list, bool]] = {}
    layers = []
    for layer in document["layers"]:
        items = layer.get("items") if isinstance(layer, dict) else None
        if not isinstance(items, list) or not items:
            layers.append(layer)
            continue
        markers = []
        for run, fast in _runs(items):
            marker = f"{token}{len(runs)}"
            runs[marker] = (run, fast)
            markers.append(marker)
        layers.append({**layer, "items": markers})
    skeleton = {**document, "layers": layers}
    text = _dump(skeleton, yaml.SafeDumper if _scan(skeleton)[0] else _FastDumper)
    lines = text.split("\n")
    for n, line in enumerate(lines):
        if token not in line:
            continue
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        run, fast = runs[body[2:]]  # the line is "<indent>- <marker>"
        piece = (_dump_libyaml if fast else _dump_pure)(run, width=WIDTH - indent)
        # Every line of the piece moves right by the indentation, except empty ones; a quoted
        # string may also break its lines at U+0085, U+2028 or U+2029.
        lines[n] = _LINE_START.sub(" " * indent, piece[:-1])
    return "\n".join(lines)


def _runs(items: list):
    """Yield (run of consecutive items, whether libyaml writes all of them like PyYAML)."""
    run: list = []
    run_fast = True
    for item in items:
        fast = not _scan(item)[0]
        if run and fast != run_fast:
            yield run, run_fast
            run = []
        run.append(item)
        run_fast = fast
    if run:
        yield run, run_fast

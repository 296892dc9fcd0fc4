"""Writing workspace documents as YAML, byte for byte what PyYAML's pure-Python dumper writes.

``dump_yaml`` is the one entry point (``resolver.documents`` re-exports it). libyaml writes
the same text several times faster, except for a few kinds of string; a document holding one
is written by PyYAML, or in pieces (libyaml for the runs of items without such a string,
PyYAML for the rest) when it is a workspace whose items can be cut into runs.

An edge module like ``resolver.documents``: ``import resolver`` does not load it (or PyYAML).
"""

import io
import re
import secrets

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from resolver.yaml_plain import (
    _MAP_TAG,
    _SEQ_TAG,
    _STR_TAG,
    _NotPlain,
    _QuickResolving,
    collection_paused,
)

try:
    from yaml import CSafeDumper as _CSafeDumper
except ImportError:  # PyYAML built without libyaml
    _CSafeDumper = None

__all__ = ["dump_yaml"]

WIDTH = 100

_FastDumper = (
    type("_FastDumper", (_QuickResolving, _CSafeDumper), {"__doc__": "libyaml's dumper."})
    if _CSafeDumper is not None
    else None
)


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

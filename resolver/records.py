"""The request-independent records of the resolution JSON (SPEC §7), prepared per layer.

One reference record per item and reason, one materialized record per item and date field,
each also as a JSON fragment, and each item's reference line per format. A resolution gathers
them with numpy instead of building one dict per item per request, so they are **shared**
between resolutions: a resolution is read-only data (see ``CompiledWorkspace``).

Record keys: ``("path",)``; ``("ref", reason, rendered)`` (a ``references[]`` entry);
``("materialized-ref", reason)`` (a ``materialized.references[]`` entry); ``("unit", field,
scored)`` (a ``materialized.items[]`` entry of an item without a score or a flag); and
``("json", *key)``, the JSON fragments of the records ``key``.
"""

import json
from json.encoder import encode_basestring

import numpy as np

from resolver.render import Renderer

# Compact JSON, exactly as the CLI and the API write a resolution (``report.json_text``).
compact_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


# The kinds of records whose fragments ``json_fragments`` writes item by item.
_WRITTEN = frozenset({"path", "ref", "materialized-ref", "unit"})
# Gathers of one key of a fetched layer's index that write only the items gathered.
PARTIAL_GATHERS = 2


def json_fragment(value) -> bytes:
    """Return a value's compact JSON in UTF-8, followed by a comma (an element of a list)."""
    return (compact_json(value) + ",").encode()


def object_array(values) -> np.ndarray:
    """Return a 1-d numpy array of Python objects (``np.array`` would nest lists)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


class SharedRecords:
    """A layer index's shared records and reference lines, each built on first use.

    The records are built from the facts of the index (paths, references, titles, path
    order, dates), which every method is given as ``index``: they hold no reference to it,
    so a compiled workspace holds no cycles. ``by_key`` holds the records of every item in
    path order (object arrays), ``listed`` the same as lists, ``lines`` the reference lines
    and their lengths by slot, ``shortest_line`` the shortest live item's line per format.
    """

    def __init__(
        self,
        by_key: dict | None = None,
        listed: dict | None = None,
        lines: dict | None = None,
        shortest_line: dict | None = None,
    ):
        self.by_key: dict[tuple, np.ndarray] = {} if by_key is None else by_key
        self.listed: dict[tuple, list] = {} if listed is None else listed
        self.lines: dict[tuple, np.ndarray] = {} if lines is None else lines
        self.shortest_line: dict[str, int] = {} if shortest_line is None else shortest_line
        # Gathers of a fetched layer's keys answered without building their records.
        self.partial: dict[tuple, int] = {}

    # Records are kept in path order, so that the lists a resolution takes from them (all in
    # path order, or runs of it, for large layers) read memory front to back, and a run of
    # consecutive items is one slice.

    def gather(self, index, key: tuple, indices: np.ndarray) -> list:
        """Return the shared records ``key`` of some items, in the order given (a new list)."""
        if not len(indices):
            return []
        records = self.by_key.get(key)
        if records is None:
            if index.fetched and key[0] == "json" and key[1] in _WRITTEN and self.few(key):
                # A request's fetched items, few of them shown: their fragments only.
                return self.json_fragments(index, key[1:], indices.tolist())
            records = self.by_key[key] = self.build(index, key)
        ranks = index.path_rank[indices]
        first = int(ranks[0])
        count = len(ranks)
        if int(ranks[-1]) - first == count - 1 and (count < 3 or (np.diff(ranks) == 1).all()):
            # A run in path order: a slice of the records as a list (a copy of pointers).
            listed = self.listed.get(key)
            if listed is None:
                listed = self.listed[key] = records.tolist()
            return listed[first : first + count]
        return records[ranks].tolist()

    def few(self, key: tuple) -> bool:
        """Whether to write the fragments ``key`` of only the items gathered: for the first
        ``PARTIAL_GATHERS`` gathers of the key (a fetched layer's index given again, by a
        cache of its material, then builds them all, as a held layer's does at once)."""
        partial = self.partial.get(key, 0)
        if partial >= PARTIAL_GATHERS:
            return False
        self.partial[key] = partial + 1
        return True

    def paths(self, index) -> np.ndarray:
        """Return the items' paths in path order (an object array; do not change it)."""
        paths = self.by_key.get(("path",))
        if paths is None:
            paths = self.by_key[("path",)] = self.build(index, ("path",))
        return paths

    def build(self, index, key: tuple) -> np.ndarray:
        """Build the records ``key`` of every item, in path order."""
        order = index.by_path.tolist()
        kind = key[0]
        if kind == "json":
            return object_array(self.json_fragments(index, key[1:], order))
        if kind == "path":
            return object_array([index.paths[i] for i in order])
        if kind == "ref":
            reason, rendered = key[1], key[2]
            layer_key, refs, paths, titles = index.layer.key, index.refs, index.paths, index.titles
            return object_array(
                [
                    {
                        "ref": refs[i],
                        "layer": layer_key,
                        "item": paths[i],
                        "title": titles[i],
                        "reason": reason,
                        "rendered": rendered,
                    }
                    for i in order
                ]
            )
        if kind == "unit":
            score = 0.0 if key[2] else None
            paths, days = index.paths, index.recency_dates(key[1]).days
            return object_array(
                [
                    {
                        "item": paths[i],
                        "score": score,
                        "matchedTerms": [],
                        "date": days[i],
                        "notCurrent": None,
                    }
                    for i in order
                ]
            )
        return object_array([self.record(index, key, i) for i in order])

    def json_fragments(self, index, key: tuple, order: list[int]) -> list[bytes]:
        """Return the records ``key`` of the items in ``order`` as JSON fragments.

        A fragment is ``json_fragment(record)``: the record's compact JSON in UTF-8 and a
        comma. The common kinds are written directly (strings escaped by the encoder's own
        function), the others encoded record by record; both give the same bytes.
        """
        kind = key[0]
        text = encode_basestring
        paths = index.paths
        if kind == "path":
            return [(text(paths[i]) + ",").encode() for i in order]
        if kind == "ref":
            head = f'"layer":{text(index.layer.key)},"item":'
            rendered = "true" if key[2] else "false"
            tail = f',"reason":{text(key[1])},"rendered":{rendered}}},'
            refs, titles = index.refs, index.titles
            return [
                f'{{"ref":{text(refs[i])},{head}{text(paths[i])},"title":{text(titles[i])}{tail}'.encode()
                for i in order
            ]
        if kind == "materialized-ref":
            tail = f',"reason":{text(key[1])}}},'
            return [f'{{"item":{text(paths[i])}{tail}'.encode() for i in order]
        if kind == "unit":
            score = "0.0" if key[2] else "null"
            days = index.recency_dates(key[1]).days
            middle = f',"score":{score},"matchedTerms":[],"date":'
            return [
                f'{{"item":{text(paths[i])}{middle}{"null" if days[i] is None else text(days[i])}'
                ',"notCurrent":null},'.encode()
                for i in order
            ]
        return [json_fragment(record) for record in self.build(index, key).tolist()]

    def reference_lines(self, index, renderer) -> tuple[np.ndarray, np.ndarray]:
        """Return each item's reference line in the renderer's format, and their lengths."""
        key = ("lines", renderer.format)
        lines = self.lines.get(key)
        if lines is None:
            lines = object_array(
                [
                    renderer.reference(ref=ref, title=title)
                    for ref, title in zip(index.refs, index.titles, strict=True)
                ]
            )
            self.lines[key] = lines
        key = ("line-lengths", renderer.format)
        lengths = self.lines.get(key)
        if lengths is None:
            lengths = np.fromiter(map(len, lines), np.int64, len(lines))
            self.lines[key] = lengths
        return lines, lengths

    def record(self, index, key: tuple, i: int):
        """Return item i's entry of the records ``key`` (as the bulk builders make it).

        ``key`` may also be a key of ``lines``: ``("lines", format)`` or ``("line-lengths",
        format)``.
        """
        kind = key[0]
        if kind == "json":
            return json_fragment(self.record(index, key[1:], i))
        if kind == "path":
            return index.paths[i]
        if kind == "ref":
            return {
                "ref": index.refs[i],
                "layer": index.layer.key,
                "item": index.paths[i],
                "title": index.titles[i],
                "reason": key[1],
                "rendered": key[2],
            }
        if kind == "materialized-ref":
            return {"item": index.paths[i], "reason": key[1]}
        if kind == "unit":
            return {
                "item": index.paths[i],
                "score": 0.0 if key[2] else None,
                "matchedTerms": [],
                "date": index.recency_dates(key[1]).days[i],
                "notCurrent": None,
            }
        line = Renderer(key[1]).reference(ref=index.refs[i], title=index.titles[i])
        return line if kind == "lines" else len(line)

    def reference_capacity(self, index, renderer, budget: int) -> int:
        """Return a number of the layer's reference lines that never fits in the budget."""
        shortest = self.shortest_line.get(renderer.format)
        if shortest is None:
            _, lengths = self.reference_lines(index, renderer)
            shortest = int(lengths[index.by_path].min())
            self.shortest_line[renderer.format] = shortest
        return 4 * budget // (shortest + 1) + 1

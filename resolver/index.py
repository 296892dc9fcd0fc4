"""Per-layer indexes, built once per compiled workspace and shared by every resolution.

Everything that does not depend on the request is computed here, lazily and at most once:
path order, itemFilter lookups, display titles, summaries, dates, the BM25 postings, and the
request-independent records of the resolution JSON (SPEC §7) — one reference record per item
and reason, one materialized record per item and date field. A resolution gathers those
records with numpy instead of building one dict per item per request, so the records are
**shared** between resolutions: a resolution is read-only data (see ``CompiledWorkspace``).

Item indices are **slots**: positions in the index's ``items``. An index built for a layer
has one slot per item, in layer order; an index derived by an incremental change keeps the
slots of the items that stayed, gives added items new slots at the end, and leaves a removed
item's slot empty (``items[slot]`` is None, a tombstone), so a deletion renumbers nothing.
Only live slots are ever candidates (``by_path`` and the itemFilter lookups hold no empty
slot); per-slot arrays keep a stale value in empty slots, which nothing reads. When a quarter
of the slots are empty, the next change compacts them. Lists of slots are numpy ``intp``
arrays.
"""

import json
import math
from array import array
from collections import Counter
from dataclasses import dataclass
from json.encoder import encode_basestring

import numpy as np

from resolver import reasons as R
from resolver.model import Item, Layer
from resolver.render import Renderer
from resolver.text import collapse, cut, paragraphs, tokenize
from resolver.values import canonical_values, format_day, parse_date

K1 = 1.2
B = 0.75
MICROSECONDS_PER_DAY = 86_400_000_000
UNDATED = np.iinfo(np.int64).max  # sorts after every instant
STALE_FLAG, UNKNOWN_FLAG = 1, 2  # a resolution's not-current flags of items kept by warn


def instant_microseconds(instant) -> int:
    """Return a UTC datetime as integer microseconds since 0001-01-01 (exact, sortable)."""
    seconds = instant.toordinal() * 86_400 + instant.hour * 3_600 + instant.minute * 60
    return (seconds + instant.second) * 1_000_000 + instant.microsecond


# Compact JSON, exactly as the CLI and the API write a resolution (``report.json_text``).
compact_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def json_fragment(value) -> bytes:
    """Return a value's compact JSON in UTF-8, followed by a comma (an element of a list)."""
    return (compact_json(value) + ",").encode()


def object_array(values) -> np.ndarray:
    """Return a 1-d numpy array of Python objects (``np.array`` would nest lists)."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


@dataclass(frozen=True, slots=True)
class FieldDates:
    """Each item's date in one metadata field (SPEC §3 "Dates"), as arrays.

    ``micros`` holds the instant in microseconds (``UNDATED`` where there is none), ``days``
    the ``YYYY-MM-DD`` strings (None where undated), ``sources`` the field the date came from.
    """

    micros: np.ndarray
    days: list
    sources: list


class LayerIndex:
    """Request-independent facts about one layer's items, computed on first use.

    ``size`` is the number of slots (the length of every per-slot array), ``count`` the
    number of items (``size`` minus the empty slots).
    """

    def __init__(self, layer: Layer):
        self.layer = layer
        self.items = layer.items
        self.size = self.count = len(layer.items)
        self.layer_slots = np.arange(self.size, dtype=np.intp)  # layer position -> slot
        self.paths = [item.path for item in layer.items]
        order = sorted(range(self.size), key=self.paths.__getitem__)
        self.by_path = np.array(order, dtype=np.intp)
        self.by_path.flags.writeable = False
        self.titles = [collapse(item.title) or item.path for item in layer.items]
        self.refs = [f"{layer.key}/{path}" for path in self.paths]
        self._path_rank: np.ndarray | None = None
        self._filters: dict[str, dict[str, list[int]]] = {}
        self._field_dates: dict[str, FieldDates] = {}
        self._recency: dict[str, FieldDates] = {}
        self._summaries: list[tuple[str, bool] | None] | None = None
        self._derived: np.ndarray | None = None
        self._records: dict[tuple, np.ndarray] = {}  # path order
        self._record_lists: dict[tuple, list] = {}  # the same, as lists (for slices)
        self._lines: dict[tuple, np.ndarray] = {}  # reference lines, item order
        self._shortest_line: dict[str, int] = {}  # per format, over the live items
        self._postings: dict[str, tuple[np.ndarray, np.ndarray]] | None = None
        self._lengths: np.ndarray | None = None
        self._total_length = 0
        self._norm: tuple[float, np.ndarray] | None = None
        self._term_parts: dict[str, np.ndarray] = {}  # whole-layer corpus only

    def ref(self, i: int) -> str:
        """Return item i's reference, ``<layer key>/<item path>``."""
        return self.refs[i]

    @property
    def path_rank(self) -> np.ndarray:
        """Return each item's position in path order."""
        if self._path_rank is None:
            rank = np.full(self.size, -1, dtype=np.intp)
            rank[self.by_path] = np.arange(self.count, dtype=np.intp)
            self._path_rank = rank
        return self._path_rank

    # -- shared records --------------------------------------------------------------------
    #
    # Records are kept in path order, so that the lists a resolution takes from them (all in
    # path order, or runs of it, for large layers) read memory front to back, and a run of
    # consecutive items is one slice.

    def gather(self, key: tuple, indices: np.ndarray) -> list:
        """Return the shared records ``key`` of some items, in the order given (a new list)."""
        if not len(indices):
            return []
        records = self._records.get(key)
        if records is None:
            records = self._records[key] = self._build_records(key)
        ranks = self.path_rank[indices]
        first = int(ranks[0])
        count = len(ranks)
        if int(ranks[-1]) - first == count - 1 and (count < 3 or (np.diff(ranks) == 1).all()):
            # A run in path order: a slice of the records as a list (a copy of pointers).
            listed = self._record_lists.get(key)
            if listed is None:
                listed = self._record_lists[key] = records.tolist()
            return listed[first : first + count]
        return records[ranks].tolist()

    def position(self, path: str) -> int | None:
        """Return the slot of the item with this path, None when the layer has none."""
        if not self.count:
            return None
        paths = self.path_records()
        rank = int(np.searchsorted(paths, path))
        if rank < self.count and paths[rank] == path:
            return int(self.by_path[rank])
        return None

    def path_records(self) -> np.ndarray:
        """Return the items' paths in path order (an object array; do not change it)."""
        paths = self._records.get(("path",))
        if paths is None:
            paths = self._records[("path",)] = self._build_records(("path",))
        return paths

    def _build_records(self, key: tuple) -> np.ndarray:
        """Build the records ``key`` of every item, in path order."""
        order = self.by_path.tolist()
        kind = key[0]
        if kind == "json":
            return object_array(self._json_fragments(key[1:], order))
        if kind == "path":
            return object_array([self.paths[i] for i in order])
        if kind == "ref":
            reason, rendered = key[1], key[2]
            layer_key, refs, paths, titles = self.layer.key, self.refs, self.paths, self.titles
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
            paths, days = self.paths, self.recency_dates(key[1]).days
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
        return object_array([self._record(key, i) for i in order])

    def _json_fragments(self, key: tuple, order: list[int]) -> list[bytes]:
        """Return the records ``key`` of the items in ``order`` as JSON fragments.

        A fragment is ``json_fragment(record)``: the record's compact JSON in UTF-8 and a
        comma. The common kinds are written directly (strings escaped by the encoder's own
        function), the others encoded record by record; both give the same bytes.
        """
        kind = key[0]
        text = encode_basestring
        paths = self.paths
        if kind == "path":
            return [(text(paths[i]) + ",").encode() for i in order]
        if kind == "ref":
            head = f'"layer":{text(self.layer.key)},"item":'
            rendered = "true" if key[2] else "false"
            tail = f',"reason":{text(key[1])},"rendered":{rendered}}},'
            refs, titles = self.refs, self.titles
            return [
                f'{{"ref":{text(refs[i])},{head}{text(paths[i])},"title":{text(titles[i])}{tail}'.encode()
                for i in order
            ]
        if kind == "materialized-ref":
            tail = f',"reason":{text(key[1])}}},'
            return [f'{{"item":{text(paths[i])}{tail}'.encode() for i in order]
        if kind == "unit":
            score = "0.0" if key[2] else "null"
            days = self.recency_dates(key[1]).days
            middle = f',"score":{score},"matchedTerms":[],"date":'
            return [
                f'{{"item":{text(paths[i])}{middle}{"null" if days[i] is None else text(days[i])}'
                ',"notCurrent":null},'.encode()
                for i in order
            ]
        return [json_fragment(record) for record in self._build_records(key).tolist()]

    def reference_lines(self, renderer) -> tuple[np.ndarray, np.ndarray]:
        """Return each item's reference line in the renderer's format, and their lengths."""
        key = ("lines", renderer.format)
        lines = self._lines.get(key)
        if lines is None:
            lines = object_array(
                [
                    renderer.reference(ref=ref, title=title)
                    for ref, title in zip(self.refs, self.titles, strict=True)
                ]
            )
            self._lines[key] = lines
        key = ("line-lengths", renderer.format)
        lengths = self._lines.get(key)
        if lengths is None:
            lengths = np.fromiter(map(len, lines), np.int64, len(lines))
            self._lines[key] = lengths
        return lines, lengths

    def _record(self, key: tuple, i: int):
        """Return item i's entry of the shared records ``key`` (as the bulk builders make it)."""
        kind = key[0]
        if kind == "json":
            return json_fragment(self._record(key[1:], i))
        if kind == "path":
            return self.paths[i]
        if kind == "ref":
            return {
                "ref": self.refs[i],
                "layer": self.layer.key,
                "item": self.paths[i],
                "title": self.titles[i],
                "reason": key[1],
                "rendered": key[2],
            }
        if kind == "materialized-ref":
            return {"item": self.paths[i], "reason": key[1]}
        if kind == "unit":
            return {
                "item": self.paths[i],
                "score": 0.0 if key[2] else None,
                "matchedTerms": [],
                "date": self.recency_dates(key[1]).days[i],
                "notCurrent": None,
            }
        line = Renderer(key[1]).reference(ref=self.refs[i], title=self.titles[i])
        return line if kind == "lines" else len(line)

    def reference_capacity(self, renderer, budget: int) -> int:
        """Return a number of this layer's reference lines that never fits in the budget."""
        shortest = self._shortest_line.get(renderer.format)
        if shortest is None:
            _, lengths = self.reference_lines(renderer)
            shortest = int(lengths[self.by_path].min())
            self._shortest_line[renderer.format] = shortest
        return 4 * budget // (shortest + 1) + 1

    # -- itemFilter ------------------------------------------------------------------------

    def filter_lookup(self, field: str) -> dict[str, list[int]]:
        """Return canonical value -> item indices whose ``metadata[field]`` matches it."""
        lookup = self._filters.get(field)
        if lookup is None:
            lookup = {}
            for i, item in enumerate(self.items):
                if item is None:
                    continue
                for value in set(canonical_values(item.metadata.get(field))):
                    lookup.setdefault(value, []).append(i)
            self._filters[field] = lookup
        return lookup

    # -- dates -----------------------------------------------------------------------------

    def field_dates(self, field: str) -> FieldDates:
        """Return each item's date in ``metadata[field]`` (currentness, SPEC §4.4)."""
        dates = self._field_dates.get(field)
        if dates is None:
            micros = np.full(self.size, UNDATED, dtype=np.int64)
            days: list[str | None] = [None] * self.size
            for i, item in enumerate(self.items):
                if item is not None:
                    micros[i], days[i] = item_date(item, field)
            dates = FieldDates(micros, days, [field] * self.size)
            self._field_dates[field] = dates
        return dates

    def recency_dates(self, field: str) -> FieldDates:
        """Return each item's recency date: ``metadata[field]``, else ``metadata.date``."""
        dates = self._recency.get(field)
        if dates is None:
            own = self.field_dates(field)
            if field == "date":
                dates = own
            else:
                fallback = self.field_dates("date")
                undated = own.micros == UNDATED
                micros = np.where(undated, fallback.micros, own.micros)
                days = list(own.days)
                sources = list(own.sources)
                for i in np.flatnonzero(undated & (fallback.micros != UNDATED)).tolist():
                    days[i] = fallback.days[i]
                    sources[i] = "date"
                dates = FieldDates(micros, days, sources)
            self._recency[field] = dates
        return dates

    # -- summaries -------------------------------------------------------------------------

    def summary(self, i: int) -> tuple[str, bool]:
        """Return ``(summary, derived_from_body)`` of item i (SPEC §4.6)."""
        if self._summaries is None:
            self._summaries = [None] * self.size
        cached = self._summaries[i]
        if cached is None:
            item = self.items[i]
            stored = item.metadata.get("summary")
            if isinstance(stored, str) and stored.strip():
                cached = (stored.strip(), False)
            else:
                paras = paragraphs(item.body)
                cached = (cut(paras[0]) if paras else "", True)
            self._summaries[i] = cached
        return cached

    def derived_summaries(self, units: np.ndarray) -> int:
        """Return how many of the units have no stored summary (it comes from the body)."""
        if self._derived is None:
            derived = np.zeros(self.size, dtype=bool)
            for i, item in enumerate(self.items):
                derived[i] = item is not None and summary_is_derived(item)
            self._derived = derived
        return int(np.count_nonzero(self._derived[units]))

    # -- relevance -------------------------------------------------------------------------

    def _build_postings(self) -> None:
        # Each item's term counts go into flat arrays (term number, item, tf); one stable sort
        # by term number then groups them, items ascending within a term. Per term: item ids
        # and term frequencies (as float64, the type the formula computes in), as views.
        vocabulary: dict[str, int] = {}
        number = vocabulary.setdefault
        term_numbers, frequencies, counts = array("q"), array("d"), array("q")
        lengths = array("d")
        for item in self.items:
            tokens = item_tokens(item) if item is not None else ()
            lengths.append(len(tokens))
            tally = Counter(tokens)
            counts.append(len(tally))
            term_numbers.extend([number(term, len(vocabulary)) for term in tally])
            frequencies.extend(tally.values())
        numbers = np.frombuffer(term_numbers, dtype=np.int64) if term_numbers else np.zeros(0, int)
        items = np.repeat(np.arange(self.size, dtype=np.int64), np.frombuffer(counts, np.int64))
        order = np.argsort(numbers, kind="stable")
        items, tfs = items[order], np.frombuffer(frequencies)[order] if frequencies else None
        bounds = np.searchsorted(numbers[order], np.arange(len(vocabulary) + 1)).tolist()
        self._postings = {
            term: (items[bounds[n] : bounds[n + 1]], tfs[bounds[n] : bounds[n + 1]])
            for term, n in vocabulary.items()
        }
        self._lengths = np.frombuffer(lengths) if self.size else np.zeros(0)
        self._total_length = int(sum(lengths))

    def matched_terms(self, terms: tuple[str, ...], items: np.ndarray) -> list[list[str]]:
        """Return, for each of some items, the query terms that occur in it, in query order.

        One vectorized search of each term's posting for all the items at once (a summary or
        a retrieve layer asks this for a handful of items; a search per item and term cost
        more than the scoring).
        """
        if self._postings is None:
            self._build_postings()
        found: list[list[str]] = [[] for _ in range(len(items))]
        for term in terms:
            posting = self._postings.get(term)
            if posting is None or not len(posting[0]):
                continue
            term_ids = posting[0]
            at = term_ids.searchsorted(items)
            np.minimum(at, len(term_ids) - 1, out=at)
            for position in np.flatnonzero(term_ids[at] == items).tolist():
                found[position].append(term)
        return found

    def _length_norm(self, avgdl: float) -> np.ndarray:
        """Return ``k1·(1 − b + b·|d|/avgdl)`` per item, computed as SPEC §5 writes it."""
        if self._norm is not None and self._norm[0] == avgdl:
            return self._norm[1]
        norm = K1 * ((1 - B) + (B * self._lengths) / avgdl)
        self._norm = (avgdl, norm)
        return norm

    def bm25(self, terms: tuple[str, ...], corpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Score the corpus (item indices) against the query terms with BM25 (SPEC §5).

        Return ``(scores, hit, terms_in)``: per item of the layer the unrounded score,
        whether at least one query term occurs in it (items outside the corpus score 0, no
        hit), and which: bit ``t`` of ``terms_in`` is set when query term ``t`` occurs (None
        beyond 64 query terms; ``matched_terms`` answers then).

        The per-posting arithmetic is the formula's, operation for operation, in float64,
        and each term's part is added to the running sums in query-term order: every score
        is bit-identical to the sequential sum of SPEC §5.
        """
        if self._postings is None:
            self._build_postings()
        scores = np.zeros(self.size)
        hit = np.zeros(self.size, dtype=bool)
        terms_in = None
        for bits in (8, 16, 32, 64):
            if len(terms) <= bits:
                terms_in = np.zeros(self.size, dtype=f"uint{bits}")
                break
        n = len(corpus)
        if not terms or not n:
            return scores, hit, terms_in
        if n == self.count:
            total = self._total_length
            member = None
        else:
            total = int(self._lengths[corpus].sum())
            member = np.zeros(self.size, dtype=bool)
            member[corpus] = True
        if total == 0:
            return scores, hit, terms_in
        avgdl = total / n
        norm = self._length_norm(avgdl)
        factor = K1 + 1
        for number, term in enumerate(terms):
            posting = self._postings.get(term)
            if posting is None:
                continue
            term_ids, term_tfs = posting
            if member is not None:
                inside = member[term_ids]
                term_ids, term_tfs = term_ids[inside], term_tfs[inside]
            df = len(term_ids)
            if not df:
                continue
            # Over the whole layer a term's part of each score does not depend on the
            # request: computed once (the same operations, so the same bits), then reused.
            part = self._term_parts.get(term) if member is None else None
            if part is None:
                idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
                part = idf * term_tfs * factor / (term_tfs + norm[term_ids])
                if member is None:
                    self._term_parts[term] = part
            scores[term_ids] += part
            if terms_in is None:
                hit[term_ids] = True
            else:
                terms_in[term_ids] |= terms_in.dtype.type(1 << number)
        if terms_in is not None:
            np.not_equal(terms_in, 0, out=hit)
        return scores, hit, terms_in

    # -- incremental change -----------------------------------------------------------------

    def changes_to(self, layer: Layer) -> "ItemChanges | None":
        """Return how ``layer`` (the same layer, edited) differs from this index's layer.

        Items are matched by path, and an item counts as unchanged only when it is the very
        object this index holds (the validation hands back earlier items it found exactly
        equal). Return None when more than half of the items were replaced or removed: a new
        index then costs less than patching this one.
        """
        slots = dict(zip(self.path_records().tolist(), self.by_path.tolist(), strict=True))
        replaced: dict[int, Item] = {}
        added: list[Item] = []
        layer_slots = np.empty(len(layer.items), dtype=np.intp)
        items = self.items
        for position, item in enumerate(layer.items):
            slot = slots.pop(item.path, None)
            if slot is None:
                slot = self.size + len(added)
                added.append(item)
            elif items[slot] is not item:
                replaced[slot] = item
            layer_slots[position] = slot
        removed = tuple(slots.values())
        if 2 * (len(replaced) + len(removed)) > self.count:
            return None
        return ItemChanges(replaced, tuple(added), removed, layer_slots)

    def layer_positions(self) -> np.ndarray:
        """Return each slot's position in ``layer.items`` (-1 for an empty slot)."""
        positions = np.full(self.size, -1, dtype=np.intp)
        positions[self.layer_slots] = np.arange(self.count, dtype=np.intp)
        return positions

    def with_changes(self, layer: Layer, changes: "ItemChanges") -> "LayerIndex":
        """Return the index of ``layer``, which is this index's layer after ``changes``.

        Whatever this index has built is carried over as copied arrays with only the changed
        slots rebuilt: the postings and document lengths are patched by tokenizing the
        replaced, added and removed items (the earlier ones, to take their terms out), never
        the whole layer. A removed item leaves an empty slot; when a quarter of the slots are
        empty they are compacted (renumbered) here. This index is left as it was
        (resolutions may still use it).
        """
        new = LayerIndex.__new__(LayerIndex)
        size = self.size + len(changes.added)
        rebuilt = [*changes.replaced, *range(self.size, size)]
        items = list(self.items)
        items.extend(changes.added)
        for slot, item in changes.replaced.items():
            items[slot] = item
        for slot in changes.removed:
            items[slot] = None
        new.layer, new.items, new.size = layer, items, size
        new.count = self.count + len(changes.added) - len(changes.removed)
        assert new.count == len(layer.items) == len(changes.layer_slots), "changes out of step"
        new.layer_slots = changes.layer_slots
        new.paths = _grown(self.paths, size, rebuilt, lambda i: items[i].path)
        new.titles = _grown(
            self.titles, size, rebuilt, lambda i: collapse(items[i].title) or items[i].path
        )
        new.refs = _grown(self.refs, size, rebuilt, lambda i: f"{layer.key}/{items[i].path}")

        # Path order: the removed items' ranks leave, the added ones go in at their place
        # (replaced items keep their path, so their rank).
        ordered = self.path_records()
        removed_ranks = self.path_rank[list(changes.removed)] if changes.removed else None
        by_path = self.by_path
        if removed_ranks is not None:
            by_path = np.delete(by_path, removed_ranks)
            ordered = np.delete(ordered, removed_ranks)
        added = sorted(range(self.size, size), key=new.paths.__getitem__)
        at = None
        if added:
            at = np.searchsorted(ordered, object_array([new.paths[i] for i in added]))
            by_path = np.insert(by_path, at, added)
        new.by_path = by_path
        new.by_path.flags.writeable = False
        new._path_rank = None
        new._filters = self._patched_filters(items, changes, size)
        new._field_dates = {
            name: FieldDates(
                _grown_array(
                    dates.micros, size, rebuilt, lambda i, name=name: item_date(items[i], name)[0]
                ),
                _grown(
                    dates.days, size, rebuilt, lambda i, name=name: item_date(items[i], name)[1]
                ),
                _grown(dates.sources, size, rebuilt, lambda i, name=name: name),
            )
            for name, dates in self._field_dates.items()
        }
        new._recency = {}
        new._summaries = None
        if self._summaries is not None:
            new._summaries = _grown(self._summaries, size, rebuilt, lambda i: None)
        new._derived = None
        if self._derived is not None:
            new._derived = _grown_array(
                self._derived, size, rebuilt, lambda i: summary_is_derived(items[i])
            )
        new._shortest_line = {}
        new._lines = {
            key: _grown_array(lines, size, rebuilt, lambda i, key=key: new._record(key, i))
            for key, lines in self._lines.items()
        }
        # Records last: building one may read the dates above.
        rank = new.path_rank
        new._records = {}
        new._record_lists = {}
        for key, records in self._records.items():
            if removed_ranks is not None:
                records = np.delete(records, removed_ranks)
            elif not added:
                records = records.copy()
            if added:
                records = np.insert(records, at, object_array([new._record(key, i) for i in added]))
            for i in changes.replaced:
                records[rank[i]] = new._record(key, i)
            new._records[key] = records

        new._norm = None
        new._term_parts = {}
        new._postings, new._lengths, new._total_length = None, None, 0
        if self._postings is not None:
            new._patch_postings(self, changes)
        if 4 * (new.size - new.count) > new.size:
            return new.compacted()
        return new

    def _patched_filters(self, items: list, changes: "ItemChanges", size: int) -> dict:
        """Return the itemFilter lookups with the changed slots moved to their values."""
        leaving = [*changes.replaced, *changes.removed]
        arriving = [*changes.replaced, *range(self.size, size)]
        filters = {}
        for field, lookup in self._filters.items():
            lookup = dict(lookup)
            for i in leaving:
                for value in set(canonical_values(self.items[i].metadata.get(field))):
                    remaining = [j for j in lookup[value] if j != i]
                    if remaining:
                        lookup[value] = remaining
                    else:
                        del lookup[value]
            for i in arriving:
                for value in set(canonical_values(items[i].metadata.get(field))):
                    lookup[value] = [*lookup.get(value, ()), i]
            filters[field] = lookup
        return filters

    def _patch_postings(self, old: "LayerIndex", changes: "ItemChanges") -> None:
        postings = dict(old._postings)
        lengths = _grown_array(old._lengths, self.size, (), None)
        edits = [(i, old.items[i], self.items[i]) for i in changes.replaced]
        edits += [(i, old.items[i], None) for i in changes.removed]
        edits += [(i, None, self.items[i]) for i in range(old.size, self.size)]
        for i, earlier, item in edits:
            before = Counter(item_tokens(earlier)) if earlier is not None else {}
            tokens = item_tokens(item) if item is not None else []
            lengths[i] = len(tokens)
            after = Counter(tokens)
            for term in before.keys() | after.keys():
                tf = after.get(term)
                posting = postings.get(term)
                if term in before:
                    term_ids, term_tfs = posting
                    at = int(term_ids.searchsorted(i))
                    if tf is None:
                        if len(term_ids) == 1:
                            del postings[term]
                        else:
                            postings[term] = (
                                np.concatenate((term_ids[:at], term_ids[at + 1 :])),
                                np.concatenate((term_tfs[:at], term_tfs[at + 1 :])),
                            )
                    elif tf != before[term]:
                        term_tfs = term_tfs.copy()
                        term_tfs[at] = tf
                        postings[term] = (term_ids, term_tfs)
                elif posting is None:
                    postings[term] = (np.array([i], dtype=np.int64), np.array([float(tf)]))
                else:
                    term_ids, term_tfs = posting
                    at = int(term_ids.searchsorted(i))
                    postings[term] = (
                        np.concatenate((term_ids[:at], (i,), term_ids[at:])),
                        np.concatenate((term_tfs[:at], (float(tf),), term_tfs[at:])),
                    )
        self._postings = postings
        self._lengths = lengths
        self._total_length = int(lengths.sum())

    def compacted(self) -> "LayerIndex":
        """Return this index without empty slots: the live slots renumbered, in slot order.

        The path-ordered records stay as they are (they hold live items only); per-slot
        arrays are gathered, the postings renumbered term by term, and the itemFilter
        lookups left to be rebuilt on first use.
        """
        keep = np.sort(self.by_path)
        remap = np.full(self.size, -1, dtype=np.intp)
        remap[keep] = np.arange(self.count, dtype=np.intp)
        new = LayerIndex.__new__(LayerIndex)
        new.layer = self.layer
        new.size = new.count = self.count
        new.items = _gathered(self.items, keep)
        new.layer_slots = remap[self.layer_slots]
        new.paths = _gathered(self.paths, keep)
        new.titles = _gathered(self.titles, keep)
        new.refs = _gathered(self.refs, keep)
        new.by_path = remap[self.by_path]
        new.by_path.flags.writeable = False
        new._path_rank = None
        new._records = self._records  # path order, live items only: unchanged
        new._record_lists = self._record_lists
        new._filters = {}
        new._field_dates = {
            name: FieldDates(
                dates.micros[keep], _gathered(dates.days, keep), _gathered(dates.sources, keep)
            )
            for name, dates in self._field_dates.items()
        }
        new._recency = {}
        new._summaries = None if self._summaries is None else _gathered(self._summaries, keep)
        new._derived = None if self._derived is None else self._derived[keep]
        new._lines = {key: lines[keep] for key, lines in self._lines.items()}
        new._shortest_line = self._shortest_line  # the same live items
        new._norm = None
        new._term_parts = {}
        new._postings, new._lengths, new._total_length = None, None, 0
        if self._postings is not None:
            new._postings = {
                term: (remap[term_ids].astype(np.int64, copy=False), term_tfs)
                for term, (term_ids, term_tfs) in self._postings.items()
            }
            new._lengths = self._lengths[keep]
            new._total_length = self._total_length
        return new


@dataclass(frozen=True)
class ItemChanges:
    """How a layer's items changed, in its index's slots.

    ``replaced`` maps slots to the items that now take them (the same path, other content);
    ``added`` lists new items, which take new slots from the index's size on, in this order;
    ``removed`` lists the slots whose items left. ``layer_slots`` gives the slot of each item
    of the changed layer, in its order.
    """

    replaced: dict[int, Item]
    added: tuple[Item, ...]
    removed: tuple[int, ...]
    layer_slots: np.ndarray


def _grown(old: list, size: int, rebuilt, make) -> list:
    """Return a copy of a per-slot list, grown to ``size``, with the ``rebuilt`` slots made."""
    new = list(old)
    new.extend([None] * (size - len(new)))
    for i in rebuilt:
        new[i] = make(i)
    return new


def _grown_array(old: np.ndarray, size: int, rebuilt, make) -> np.ndarray:
    """Return a copy of a per-slot array, grown to ``size``, with the ``rebuilt`` slots made."""
    new = np.zeros(size, dtype=old.dtype)
    new[: len(old)] = old
    for i in rebuilt:
        new[i] = make(i)
    return new


def _gathered(values, slots: np.ndarray) -> list:
    """Return the entries of a per-slot list at ``slots`` (a new list)."""
    return object_array(values)[slots].tolist()


def item_tokens(item: Item) -> list[str]:
    """Return the tokens of an item's document for relevance: ``title + "\n" + body`` (§5)."""
    return tokenize(item.title + "\n" + item.body)


def item_date(item: Item, field: str) -> tuple[int, str | None]:
    """Return the item's date in ``metadata[field]`` as (microseconds, day); UNDATED if none."""
    parsed = parse_date(item.metadata.get(field))
    if parsed is None:
        return UNDATED, None
    return instant_microseconds(parsed[0]), format_day(parsed[0])


def summary_is_derived(item: Item) -> bool:
    """Return whether the item's summary comes from its body (no stored summary, §4.6)."""
    stored = item.metadata.get("summary")
    return not (isinstance(stored, str) and stored.strip())


REFERENCE_REASONS = (
    R.ON_DEMAND,
    R.LAYER_TOKEN_LIMIT,
    R.BEYOND_MAX_ITEMS,
    R.NOT_RETRIEVED,
    R.BUDGET_TRIMMED,
)

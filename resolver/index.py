"""Per-layer indexes, built once per compiled workspace and shared by every resolution.

Everything that does not depend on the request is computed here, lazily and at most once:
path order, itemFilter lookups, display titles, summaries, dates, the BM25 postings, and the
request-independent records of the resolution JSON (SPEC §7) — one reference record per item
and reason, one materialized record per item and date field. A resolution gathers those
records with numpy instead of building one dict per item per request, so the records are
**shared** between resolutions: a resolution is read-only data (see ``CompiledWorkspace``).

Item indices are positions in ``layer.items``; lists of them are numpy ``intp`` arrays.
"""

import math
from array import array
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass

import numpy as np

from resolver import reasons as R
from resolver.model import Layer
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
    """Request-independent facts about one layer's items, computed on first use."""

    def __init__(self, layer: Layer):
        self.layer = layer
        self.items = layer.items
        self.size = len(layer.items)
        self.paths = [item.path for item in layer.items]
        order = sorted(range(self.size), key=self.paths.__getitem__)
        self.by_path = np.array(order, dtype=np.intp)
        self.by_path.flags.writeable = False
        self.titles = [collapse(item.title) or item.path for item in layer.items]
        self.refs = [f"{layer.key}/{path}" for path in self.paths]
        self._path_rank: np.ndarray | None = None
        self._path_array: np.ndarray | None = None
        self._filters: dict[str, dict[str, list[int]]] = {}
        self._field_dates: dict[str, FieldDates] = {}
        self._recency: dict[str, FieldDates] = {}
        self._summaries: list[tuple[str, bool] | None] | None = None
        self._derived: np.ndarray | None = None
        self._records: dict[tuple, np.ndarray] = {}
        self._postings: dict[str, tuple[array, np.ndarray, np.ndarray]] | None = None
        self._lengths: np.ndarray | None = None
        self._total_length = 0
        self._norm: tuple[float, np.ndarray] | None = None

    def ref(self, i: int) -> str:
        """Return item i's reference, ``<layer key>/<item path>``."""
        return self.refs[i]

    @property
    def path_rank(self) -> np.ndarray:
        """Return each item's position in path order."""
        if self._path_rank is None:
            rank = np.empty(self.size, dtype=np.intp)
            rank[self.by_path] = np.arange(self.size, dtype=np.intp)
            self._path_rank = rank
        return self._path_rank

    def path_list(self, indices: np.ndarray) -> list[str]:
        """Return the paths of some items (a fresh list)."""
        if self._path_array is None:
            self._path_array = object_array(self.paths)
        return self._path_array[indices].tolist()

    # -- shared records --------------------------------------------------------------------

    def reference_records(self, reason: str, rendered: bool) -> np.ndarray:
        """Return per item its ``references`` record with this reason and flag (SPEC §7)."""
        key = ("ref", reason, rendered)
        records = self._records.get(key)
        if records is None:
            layer_key = self.layer.key
            records = object_array(
                [
                    {
                        "ref": ref,
                        "layer": layer_key,
                        "item": path,
                        "title": title,
                        "reason": reason,
                        "rendered": rendered,
                    }
                    for ref, path, title in zip(self.refs, self.paths, self.titles, strict=True)
                ]
            )
            self._records[key] = records
        return records

    def materialized_reference_records(self, reason: str) -> np.ndarray:
        """Return per item its ``materialized.references`` record with this reason."""
        key = ("materialized-ref", reason)
        records = self._records.get(key)
        if records is None:
            records = object_array([{"item": path, "reason": reason} for path in self.paths])
            self._records[key] = records
        return records

    def unit_records(self, field: str, scored: bool) -> np.ndarray:
        """Return per item its ``materialized.items`` record without relevance or flag.

        ``scored`` gives the record of an item that scored 0 (score 0.0, no matched terms)
        in a layer where relevance was computed; otherwise score is null.
        """
        key = ("unit", field, scored)
        records = self._records.get(key)
        if records is None:
            score = 0.0 if scored else None
            days = self.recency_dates(field).days
            records = object_array(
                [
                    {
                        "item": path,
                        "score": score,
                        "matchedTerms": [],
                        "date": day,
                        "notCurrent": None,
                    }
                    for path, day in zip(self.paths, days, strict=True)
                ]
            )
            self._records[key] = records
        return records

    def reference_lines(self, renderer) -> tuple[np.ndarray, np.ndarray]:
        """Return each item's reference line in the renderer's format, and their lengths."""
        key = ("lines", renderer.format)
        cached = self._records.get(key)
        if cached is None:
            lines = [
                renderer.reference(ref=ref, title=title)
                for ref, title in zip(self.refs, self.titles, strict=True)
            ]
            cached = (object_array(lines), np.fromiter(map(len, lines), np.int64, len(lines)))
            self._records[key] = cached
        return cached

    def reference_capacity(self, renderer, budget: int) -> int:
        """Return a number of this layer's reference lines that never fits in the budget."""
        _, lengths = self.reference_lines(renderer)
        return 4 * budget // (int(lengths.min()) + 1) + 1

    # -- itemFilter ------------------------------------------------------------------------

    def filter_lookup(self, field: str) -> dict[str, list[int]]:
        """Return canonical value -> item indices whose ``metadata[field]`` matches it."""
        lookup = self._filters.get(field)
        if lookup is None:
            lookup = {}
            for i, item in enumerate(self.items):
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
                parsed = parse_date(item.metadata.get(field))
                if parsed is not None:
                    micros[i] = instant_microseconds(parsed[0])
                    days[i] = format_day(parsed[0])
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
                stored = item.metadata.get("summary")
                derived[i] = not (isinstance(stored, str) and stored.strip())
            self._derived = derived
        return int(np.count_nonzero(self._derived[units]))

    # -- relevance -------------------------------------------------------------------------

    def _build_postings(self) -> None:
        # Item ids ascending per term, term frequencies alongside (as float64, the type the
        # formula computes in); the id array is kept for bisecting, a numpy view for gathers.
        ids: dict[str, array] = {}
        tfs: dict[str, array] = {}
        lengths = array("d")
        for i, item in enumerate(self.items):
            tokens = tokenize(item.title + "\n" + item.body)
            lengths.append(len(tokens))
            for term, tf in Counter(tokens).items():
                term_ids = ids.get(term)
                if term_ids is None:
                    ids[term] = term_ids = array("q")
                    tfs[term] = array("d")
                term_ids.append(i)
                tfs[term].append(tf)
        self._postings = {
            term: (term_ids, np.frombuffer(term_ids, dtype=np.int64), np.frombuffer(tfs[term]))
            for term, term_ids in ids.items()
        }
        self._lengths = np.frombuffer(lengths) if self.size else np.zeros(0)
        self._total_length = int(sum(lengths))

    def matched_terms(self, terms: tuple[str, ...], i: int) -> list[str]:
        """Return the query terms that occur in item i, in query order."""
        if self._postings is None:
            self._build_postings()
        found = []
        for term in terms:
            posting = self._postings.get(term)
            if posting is not None:
                term_ids = posting[0]
                at = bisect_left(term_ids, i)
                if at < len(term_ids) and term_ids[at] == i:
                    found.append(term)
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

        Return ``(scores, hit)``: per item of the layer the unrounded score and whether at
        least one query term occurs in it (items outside the corpus score 0, no hit).

        The per-posting arithmetic is the formula's, operation for operation, in float64,
        and each term's part is added to the running sums in query-term order: every score
        is bit-identical to the sequential sum of SPEC §5.
        """
        if self._postings is None:
            self._build_postings()
        scores = np.zeros(self.size)
        hit = np.zeros(self.size, dtype=bool)
        n = len(corpus)
        if not terms or not n:
            return scores, hit
        if n == self.size:
            total = self._total_length
            member = None
        else:
            total = int(self._lengths[corpus].sum())
            member = np.zeros(self.size, dtype=bool)
            member[corpus] = True
        if total == 0:
            return scores, hit
        avgdl = total / n
        norm = self._length_norm(avgdl)
        factor = K1 + 1
        for term in terms:
            posting = self._postings.get(term)
            if posting is None:
                continue
            _, term_ids, term_tfs = posting
            if member is not None:
                inside = member[term_ids]
                term_ids, term_tfs = term_ids[inside], term_tfs[inside]
            df = len(term_ids)
            if not df:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            scores[term_ids] += idf * term_tfs * factor / (term_tfs + norm[term_ids])
            hit[term_ids] = True
        return scores, hit


REFERENCE_REASONS = (
    R.ON_DEMAND,
    R.LAYER_TOKEN_LIMIT,
    R.BEYOND_MAX_ITEMS,
    R.NOT_RETRIEVED,
    R.BUDGET_TRIMMED,
)

"""Per-layer indexes, built once per compiled workspace and shared by every resolution.

Everything that does not depend on the request is computed here, lazily and at most once:
path order, itemFilter lookups, display titles, summaries, recency dates and the BM25
postings. A live preview therefore never re-tokenizes unchanged material.
"""

import math
from array import array
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass

from resolver.model import Layer
from resolver.text import collapse, cut, paragraphs, tokenize
from resolver.values import canonical_values, format_day, parse_date

K1 = 1.2
B = 0.75


@dataclass(frozen=True, slots=True)
class RecencyDate:
    """The date an item is ordered by and displayed with, and the field it came from."""

    timestamp: float
    day: str
    field: str


class LayerIndex:
    """Request-independent facts about one layer's items, computed on first use."""

    def __init__(self, layer: Layer):
        self.layer = layer
        self.items = layer.items
        self.size = len(layer.items)
        self.by_path = sorted(range(self.size), key=lambda i: layer.items[i].path)
        self.path_rank = [0] * self.size
        for rank, i in enumerate(self.by_path):
            self.path_rank[i] = rank
        self.titles = [collapse(item.title) or item.path for item in layer.items]
        self.refs = [f"{layer.key}/{item.path}" for item in layer.items]
        self.paths = [item.path for item in layer.items]
        self._filters: dict[str, dict[str, list[int]]] = {}
        self._recency: dict[str, list[RecencyDate | None]] = {}
        self._days: dict[str, list[str | None]] = {}
        self._summaries: list[tuple[str, bool]] | None = None
        self._postings: dict[str, array] | None = None
        self._tfs: dict[str, array] | None = None
        self._lengths: array | None = None

    def ref(self, i: int) -> str:
        """Return item i's reference, ``<layer key>/<item path>``."""
        return self.refs[i]

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

    def recency_dates(self, field: str) -> list[RecencyDate | None]:
        """Return each item's recency date: ``metadata[field]``, else ``metadata.date``."""
        dates = self._recency.get(field)
        if dates is None:
            dates = []
            for item in self.items:
                found = None
                for name in (field, "date"):
                    parsed = parse_date(item.metadata.get(name))
                    if parsed is not None:
                        instant = parsed[0]
                        found = RecencyDate(instant.timestamp(), format_day(instant), name)
                        break
                dates.append(found)
            self._recency[field] = dates
        return dates

    def recency_days(self, field: str) -> list[str | None]:
        """Return each item's recency date as ``YYYY-MM-DD`` (None when undated)."""
        days = self._days.get(field)
        if days is None:
            days = [d.day if d is not None else None for d in self.recency_dates(field)]
            self._days[field] = days
        return days

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

    def summary_derived(self, i: int) -> bool:
        """Return whether item i's summary comes from its body (no stored summary)."""
        stored = self.items[i].metadata.get("summary")
        return not (isinstance(stored, str) and stored.strip())

    # -- relevance -------------------------------------------------------------------------

    def _build_postings(self) -> None:
        # Postings are kept in arrays (item ids ascending, term frequencies alongside): millions
        # of small tuples would make every garbage collection walk them.
        ids: dict[str, array] = {}
        tfs: dict[str, array] = {}
        lengths = array("I")
        for i, item in enumerate(self.items):
            tokens = tokenize(item.title + "\n" + item.body)
            lengths.append(len(tokens))
            for term, tf in Counter(tokens).items():
                term_ids = ids.get(term)
                if term_ids is None:
                    ids[term] = term_ids = array("I")
                    tfs[term] = array("I")
                term_ids.append(i)
                tfs[term].append(tf)
        self._lengths, self._postings, self._tfs = lengths, ids, tfs

    def matched_terms(self, terms: tuple[str, ...], i: int) -> list[str]:
        """Return the query terms that occur in item i, in query order."""
        if self._postings is None:
            self._build_postings()
        found = []
        for term in terms:
            term_ids = self._postings.get(term)
            if term_ids:
                at = bisect_left(term_ids, i)
                if at < len(term_ids) and term_ids[at] == i:
                    found.append(term)
        return found

    def bm25(self, terms: tuple[str, ...], corpus: list[int]) -> dict[int, float]:
        """Score the corpus (item indices) against the query terms with BM25 (SPEC §5).

        Return item index -> unrounded score for the items with at least one query term
        (every other corpus item scores 0). Scores are summed in query-term order.
        """
        if self._postings is None:
            self._build_postings()
        scores: dict[int, float] = {}
        n = len(corpus)
        if not terms or not n:
            return scores
        lengths = self._lengths
        if n == self.size:
            total = sum(lengths)
            member = None
        else:
            total = sum(lengths[i] for i in corpus)
            member = bytearray(self.size)
            for i in corpus:
                member[i] = 1
        if total == 0:
            return scores
        avgdl = total / n
        get = scores.get
        for term in terms:
            term_ids = self._postings.get(term)
            if not term_ids:
                continue
            term_tfs = self._tfs[term]
            if member is None:
                pairs = zip(term_ids, term_tfs, strict=True)
                df = len(term_ids)
            else:
                pairs = [(i, tf) for i, tf in zip(term_ids, term_tfs, strict=True) if member[i]]
                df = len(pairs)
                if not df:
                    continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for i, tf in pairs:
                part = idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * lengths[i] / avgdl))
                scores[i] = get(i, 0.0) + part
        return scores

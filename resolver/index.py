"""Per-layer indexes, built once per compiled workspace and shared by every resolution.

Everything that does not depend on the request is computed here, lazily and at most once:
path order, itemFilter lookups, display titles, summaries and dates. An index composes the
two other request-independent parts of a layer, each kept by its own class: the BM25
postings (``resolver.postings``) and the shared records of the resolution JSON with their
JSON fragments (``resolver.records``). Deriving the index of an edited layer from an earlier
one is ``resolver.patching``'s job.

Item indices are **slots**: positions in the index's ``items``. An index built for a layer
has one slot per item, in layer order; an index derived by an incremental change keeps the
slots of the items that stayed, gives added items new slots at the end, and leaves a removed
item's slot empty (``items[slot]`` is None, a tombstone), so a deletion renumbers nothing.
Only live slots are ever candidates (``by_path`` and the itemFilter lookups hold no empty
slot); per-slot arrays keep a stale value in empty slots, which nothing reads. When a quarter
of the slots are empty, the next change compacts them. Lists of slots are numpy ``intp``
arrays.
"""

import copy
import functools
from dataclasses import dataclass

import numpy as np

from resolver.model import Item, Layer
from resolver.postings import Postings
from resolver.records import SharedRecords
from resolver.text import collapse, cut, paragraphs
from resolver.values import canonical_values, format_day, parse_date

MICROSECONDS_PER_DAY = 86_400_000_000
UNDATED = np.iinfo(np.int64).max  # sorts after every instant
_NO_DATE = (UNDATED, None)
STALE_FLAG, UNKNOWN_FLAG = 1, 2  # a resolution's not-current flags of items kept by warn


def instant_microseconds(instant) -> int:
    """Return a UTC datetime as integer microseconds since 0001-01-01 (exact, sortable)."""
    seconds = instant.toordinal() * 86_400 + instant.hour * 3_600 + instant.minute * 60
    return (seconds + instant.second) * 1_000_000 + instant.microsecond


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
    number of items (``size`` minus the empty slots). ``records`` holds the shared records
    (built from these facts), ``postings`` the BM25 postings (built on first use). The
    attributes with a leading underscore are caches: ``resolver.patching`` carries them over
    to the index it derives.

    ``analysed`` maps item paths to term counts computed beforehand (``resolver.analysis``:
    packed, or dicts): the postings are built from them rather than by tokenizing those
    items' text (``resolver.packed``). It is dropped once the postings are built.
    """

    def __init__(self, layer: Layer, analysed=None, *, fetched: bool = False):
        self.layer = layer
        self._analysed = analysed or None
        # A request's fetched material (resolver.served): a few items, read for one request,
        # whose postings are built per query term.
        self._fetched = fetched
        self.items = layer.items
        self.size = self.count = len(layer.items)
        self.layer_slots = np.arange(self.size, dtype=np.intp)  # layer position -> slot
        self.paths = [item.path for item in layer.items]
        order = sorted(range(self.size), key=self.paths.__getitem__)
        self.by_path = np.array(order, dtype=np.intp)
        self.by_path.flags.writeable = False
        self.titles = [collapse(item.title) or item.path for item in layer.items]
        self.refs = [f"{layer.key}/{path}" for path in self.paths]
        self.records = SharedRecords()
        self._path_rank: np.ndarray | None = None
        self._filters: dict[str, dict[str, list[int]]] = {}
        self._field_dates: dict[str, FieldDates] = {}
        self._recency: dict[str, FieldDates] = {}
        self._summaries: list[tuple[str, bool] | None] | None = None
        self._derived: np.ndarray | None = None
        self._postings: Postings | None = None

    @property
    def fetched(self) -> bool:
        """Whether the index holds a request's fetched material (``resolver.served``)."""
        return self._fetched

    def with_layer(self, layer: Layer) -> "LayerIndex":
        """Return this index for another object of the same layer with the same items (a
        served layer's new total): every fact and cache is shared, none depends on it."""
        assert layer.items is self.layer.items and layer.key == self.layer.key
        index = copy.copy(self)
        index.layer = layer
        return index

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

    def position(self, path: str) -> int | None:
        """Return the slot of the item with this path, None when the layer has none."""
        if not self.count:
            return None
        paths = self.records.paths(self)
        rank = int(np.searchsorted(paths, path))
        if rank < self.count and paths[rank] == path:
            return int(self.by_path[rank])
        return None

    def layer_positions(self) -> np.ndarray:
        """Return each slot's position in ``layer.items`` (-1 for an empty slot)."""
        positions = np.full(self.size, -1, dtype=np.intp)
        positions[self.layer_slots] = np.arange(self.count, dtype=np.intp)
        return positions

    # -- shared records (resolver.records) -------------------------------------------------

    def gather(self, key: tuple, indices: np.ndarray) -> list:
        """Return the shared records ``key`` of some items, in the order given (a new list)."""
        return self.records.gather(self, key, indices)

    def path_records(self) -> np.ndarray:
        """Return the items' paths in path order (an object array; do not change it)."""
        return self.records.paths(self)

    def reference_lines(self, renderer) -> tuple[np.ndarray, np.ndarray]:
        """Return each item's reference line in the renderer's format, and their lengths."""
        return self.records.reference_lines(self, renderer)

    def reference_capacity(self, renderer, budget: int) -> int:
        """Return a number of this layer's reference lines that never fits in the budget."""
        return self.records.reference_capacity(self, renderer, budget)

    # -- relevance (resolver.postings) -----------------------------------------------------

    @property
    def postings(self) -> Postings:
        """Return the BM25 postings of the items, tokenizing them on first use."""
        postings = self._postings
        if postings is None:
            build = Postings.on_demand if self._fetched else Postings.build
            postings = self._postings = build(self.items, self.count, self._analysed)
            self._analysed = None
        return postings

    def bm25(self, terms: tuple[str, ...], corpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Score the corpus (item indices) against the query terms (``Postings.bm25``)."""
        return self.postings.bm25(terms, corpus)

    def matched_terms(self, terms: tuple[str, ...], items: np.ndarray) -> list[list[str]]:
        """Return the query terms in each of some items (``Postings.matched_terms``)."""
        return self.postings.matched_terms(terms, items)

    # -- itemFilter ------------------------------------------------------------------------

    def filter_lookup(self, field: str) -> dict[str, list[int]]:
        """Return canonical value -> item indices whose ``metadata[field]`` matches it."""
        lookup = self._filters.get(field)
        if lookup is None:
            lookup = {}
            for i, item in enumerate(self.items):
                if item is None:
                    continue
                value = item.metadata.get(field)
                if value.__class__ is str:  # its one canonical value
                    lookup.setdefault(value, []).append(i)
                    continue
                for text in set(canonical_values(value)):
                    lookup.setdefault(text, []).append(i)
            self._filters[field] = lookup
        return lookup

    # -- dates -----------------------------------------------------------------------------

    def field_dates(self, field: str) -> FieldDates:
        """Return each item's date in ``metadata[field]`` (currentness, SPEC §4.4)."""
        dates = self._field_dates.get(field)
        if dates is None:
            found = [_NO_DATE if item is None else item_date(item, field) for item in self.items]
            micros = np.fromiter((date[0] for date in found), np.int64, self.size)
            days = [date[1] for date in found]
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
                paras = paragraphs(item.body_text)
                cached = (cut(paras[0]) if paras else "", True)
                if item.body.__class__ is not str:
                    return cached  # its text is held elsewhere: so is what it derives
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

    def kept(self, key: tuple, make):
        """Return what ``make()`` gave for ``key`` the first time (request-independent facts
        the engine derives, e.g. shared unit texts); a derived index starts without them."""
        kept = self.__dict__.setdefault("_kept", {})
        found = kept.get(key)
        if found is None:
            found = kept[key] = make()
        return found


def item_date(item: Item, field: str) -> tuple[int, str | None]:
    """Return the item's date in ``metadata[field]`` as (microseconds, day); UNDATED if none."""
    value = item.metadata.get(field)
    if value.__class__ is str:
        return _text_date(value)
    return _date(value)


def _date(value) -> tuple[int, str | None]:
    parsed = parse_date(value)
    if parsed is None:
        return UNDATED, None
    return instant_microseconds(parsed[0]), format_day(parsed[0])


# A layer's date strings repeat (many items share a day), and a served layer's are read again
# with each request's fetched items: the result of an exact string is kept (a pure function).
_text_date = functools.lru_cache(maxsize=16_384)(_date)


def summary_is_derived(item: Item) -> bool:
    """Return whether the item's summary comes from its body (no stored summary, §4.6)."""
    stored = item.metadata.get("summary")
    return not (isinstance(stored, str) and stored.strip())

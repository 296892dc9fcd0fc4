"""The BM25 postings of one layer's items (SPEC §5), built once and shared by resolutions.

Per term: the slots of the items it occurs in (ascending) and its term frequency in each;
per slot: the document length. An empty slot (a removed item, see ``resolver.index``) has
length 0 and occurs in no posting. Scoring reads them with numpy, term by term.
"""

import math

import numpy as np

from resolver.analysis import relevance_tokens
from resolver.model import Item
from resolver.packed import PackedOnDemand, PackedSlots

K1 = 1.2
B = 0.75


def item_tokens(item: Item) -> list[str]:
    """Return the tokens of an item's document for relevance (``relevance_tokens``)."""
    return relevance_tokens(item.title, item.body_text)


# How a layer's postings are stored: slots and term frequencies as 32-bit integers (a layer
# has fewer than 2**31 slots, an item fewer than 2**31 tokens), half the memory of int64 and
# float64. Scoring gives the same bits: numpy computes ``idf * tfs`` and ``tfs + norm`` in
# float64 from the exact integer values, as it did from float64 ones.
SLOT = np.int32
TF = np.int32


class _TermsMapping:
    """What both term mappings answer from their ``get`` and ``__iter__``."""

    __slots__ = ()

    def __getitem__(self, term: str):
        found = self.get(term)
        if found is None:
            raise KeyError(term)
        return found

    def items(self):
        return ((term, self[term]) for term in self)


class FlatTerms(_TermsMapping):
    """A term -> ``(slots, tfs)`` mapping over two flat arrays (every posting, grouped by
    term): the views of a term's posting are made when it is asked for, so the layer holds
    one number per term rather than two arrays and a tuple (~250 bytes a term)."""

    __slots__ = ("bounds", "numbers", "slots", "tfs")

    def __init__(self, numbers: dict[str, int], bounds: np.ndarray, slots, tfs):
        self.numbers, self.bounds, self.slots, self.tfs = numbers, bounds, slots, tfs

    def get(self, term: str, default=None):
        number = self.numbers.get(term)
        if number is None:
            return default
        start, end = int(self.bounds[number]), int(self.bounds[number + 1])
        return self.slots[start:end], self.tfs[start:end]

    def __contains__(self, term) -> bool:
        return term in self.numbers

    def __len__(self) -> int:
        return len(self.numbers)

    def __iter__(self):
        return iter(self.numbers)

    def keys(self):
        return self.numbers.keys()

    @classmethod
    def of(cls, postings) -> "FlatTerms":
        """Return the flat form of (term, (slots, tfs)) pairs, in their order."""
        numbers: dict[str, int] = {}
        slot_parts, tf_parts, sizes = [], [], [0]
        for term, (term_slots, term_tfs) in postings:
            numbers[term] = len(numbers)
            slot_parts.append(np.asarray(term_slots, dtype=SLOT))
            tf_parts.append(np.asarray(term_tfs))
            sizes.append(len(term_slots))
        slots = np.concatenate(slot_parts) if slot_parts else np.zeros(0, SLOT)
        # Term frequencies patched in as float64 stay float64 (exact integers either way).
        tfs = np.concatenate(tf_parts) if tf_parts else np.zeros(0, TF)
        return cls(numbers, np.cumsum(sizes), slots, tfs)


class PatchedTerms(_TermsMapping):
    """Postings patched from others (``resolver.patching``): the postings of the terms the
    patches changed (None: the term occurs in no item any more) over a ``FlatTerms`` base,
    so a one-item edit copies its terms' postings, not a layer's vocabulary."""

    __slots__ = ("base", "changed")

    def __init__(self, base: FlatTerms, changed: dict):
        self.base, self.changed = base, changed

    def get(self, term: str, default=None):
        if term in self.changed:
            found = self.changed[term]
            return default if found is None else found
        return self.base.get(term, default)

    def __contains__(self, term) -> bool:
        return self.get(term) is not None

    def __iter__(self):
        changed = self.changed
        yield from (term for term in self.base if term not in changed)
        yield from (term for term, found in changed.items() if found is not None)

    def keys(self):
        return list(self)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class Postings:
    """Term postings, document lengths and their total over a layer's slots.

    ``terms`` maps a term to ``(slots, tfs)``: integer slots ascending (``SLOT``), and the
    term frequency in each (``TF``; patched postings may hold float64 ones: the formula
    computes in float64 either way). ``lengths`` holds each slot's document length
    (float64), ``total_length`` their sum, ``count`` the number of items (the slots that are
    not empty). Read-only once built: ``resolver.patching`` derives new postings rather than
    changing these.
    """

    def __init__(self, terms: dict, lengths: np.ndarray, total_length: int, count: int):
        self.terms = terms
        self.lengths = lengths
        self.total_length = total_length
        self.count = count
        self.size = len(lengths)
        self._norm: tuple[float, np.ndarray] | None = None
        self._term_parts: dict[str, np.ndarray] = {}  # whole-layer corpus only

    @classmethod
    def build(cls, items: list, count: int, analysed=None) -> "Postings":
        """Tokenize the items (None for an empty slot) and return their postings.

        ``analysed`` maps item paths to their term counts computed beforehand
        (``resolver.analysis.item_terms``, by the analyser of this version): packed
        (``pack_terms``, as stored), a dict, or JSON text (``encode_terms``). Those items are
        not tokenized again (a damaged packed one is). The postings are the same either way.
        """
        # Every slot's counts in one array and its terms in one list (``PackedSlots``): each
        # term gets a number; one stable sort by term number then groups the postings, items
        # ascending within a term (``FlatTerms``).
        gathered = PackedSlots.of(items, analysed)
        vocabulary: dict[str, int] = {}
        numbers = gathered.numbered(vocabulary)
        size = len(items)
        sizes = np.diff(gathered.bounds)
        slots = np.repeat(np.arange(size, dtype=SLOT), sizes)
        order = np.argsort(numbers, kind="stable")
        slots, tfs = slots[order], gathered.counts[order].astype(TF)
        bounds = np.searchsorted(numbers[order], np.arange(len(vocabulary) + 1))
        lengths = gathered.lengths()
        return cls(
            FlatTerms(vocabulary, bounds, slots, tfs),
            lengths,
            int(lengths.sum()),
            count,
        )

    @classmethod
    def on_demand(cls, items: list, count: int, analysed=None) -> "Postings":
        """Return the postings of a few items (a request's fetched material) whose term
        postings are built when a query first asks for the term, not for the whole
        vocabulary (``resolver.packed.PackedOnDemand``): the same postings, at the cost of
        the query's terms, and no Python object per stored term."""
        gathered = PackedSlots.of(items, analysed)
        lengths = gathered.lengths()
        return cls(PackedOnDemand(gathered), lengths, int(lengths.sum()), count)

    def matched_terms(self, terms: tuple[str, ...], items: np.ndarray) -> list[list[str]]:
        """Return, for each of some items, the query terms that occur in it, in query order.

        One vectorized search of each term's posting for all the items at once (a summary or
        a retrieve layer asks this for a handful of items; a search per item and term cost
        more than the scoring).
        """
        found: list[list[str]] = [[] for _ in range(len(items))]
        for term in terms:
            posting = self.terms.get(term)
            if posting is None or not len(posting[0]):
                continue
            term_ids = posting[0]
            # The few items in the posting's type: the posting itself is not converted.
            at = term_ids.searchsorted(np.asarray(items, dtype=term_ids.dtype))
            np.minimum(at, len(term_ids) - 1, out=at)
            for position in np.flatnonzero(term_ids[at] == items).tolist():
                found[position].append(term)
        return found

    def _length_norm(self, avgdl: float) -> np.ndarray:
        """Return ``k1·(1 − b + b·|d|/avgdl)`` per item, computed as SPEC §5 writes it."""
        if self._norm is not None and self._norm[0] == avgdl:
            return self._norm[1]
        norm = K1 * ((1 - B) + (B * self.lengths) / avgdl)
        self._norm = (avgdl, norm)
        return norm

    def bm25(self, terms: tuple[str, ...], corpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Score the corpus (item indices) against the query terms with BM25 (SPEC §5).

        Return ``(scores, hit)``: per item of the layer the unrounded score, and whether at
        least one query term occurs in it (items outside the corpus score 0, no hit); which
        terms occur, ``matched_terms`` answers for the few items a resolution lists.

        The per-posting arithmetic is the formula's, operation for operation, in float64.
        The terms' parts are summed by one ``np.bincount`` over the postings laid end to end
        in query-term order: it adds each posting to its item's sum in array order, starting
        from 0.0, so every score is bit-identical to the sequential sum of SPEC §5. Every
        part is positive (idf > 0 since n >= df, tf >= 1, a finite norm), so an item is a
        hit exactly when its score is not 0.
        """
        n = len(corpus)
        if not terms or not n:
            return self._no_scores()
        if n == self.count:
            total = self.total_length
            member = None
        else:
            total = int(self.lengths[corpus].sum())
            member = np.zeros(self.size, dtype=bool)
            member[corpus] = True
        if total == 0:
            return self._no_scores()
        avgdl = total / n
        norm = self._length_norm(avgdl)
        factor = K1 + 1
        slots, parts = [], []
        for term in terms:
            posting = self.terms.get(term)
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
            slots.append(term_ids)
            parts.append(part)
        if not slots:
            return self._no_scores()
        if len(slots) == 1:
            scores = np.zeros(self.size)
            scores[slots[0]] = parts[0]
        else:
            scores = np.bincount(
                np.concatenate(slots), weights=np.concatenate(parts), minlength=self.size
            )
        return scores, scores != 0

    def _no_scores(self) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(self.size), np.zeros(self.size, dtype=bool)

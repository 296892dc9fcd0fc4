"""Items' term counts gathered in their packed form, for the postings (``resolver.postings``).

Whatever an item's counts come as (stored packed, ``resolver.analysis.pack_terms``; a dict;
the older JSON text; or nothing, when its text is tokenized), the postings read them as one
string of every slot's terms and one array of every count: ``PackedSlots``. A packed item is
a slice of its bytes and a decoded string, with no Python object per term; a damaged one
(``resolver.analysis.packed_split`` says None, or a count below 1) is tokenized instead, so
the postings are those of its text either way.

``PackedOnDemand`` answers a term's posting (the slots it occurs in, ascending, and its
count in each) by searching that string: a request's fetched items (``Postings.on_demand``)
cost the terms its query asks for, not their vocabulary.
"""

import struct
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass

import numpy as np

from resolver.analysis import COUNTS, SEPARATOR, decode_terms, packed_split, relevance_tokens

_BUFFERS = (bytes, memoryview, bytearray)
# Slots whose terms ``PackedSlots.numbered`` splits at once.
NUMBERED_CHUNK = 2_048


def _dict_parts(tally: dict) -> tuple[str, bytes]:
    """Return a dict's terms joined by the separator and its counts as packed bytes."""
    joined = SEPARATOR.join(tally)
    if tally and (joined.count(SEPARATOR) != len(tally) - 1 or "" in tally):
        raise ValueError("a term is empty or holds the separator")
    return joined, struct.pack(f"<{len(tally)}i", *tally.values())


def _tokenized(item) -> tuple[str, bytes]:
    return _dict_parts(Counter(relevance_tokens(item.title, item.body_text)))


def _slot_parts(item, known) -> tuple[str, bytes]:
    """Return one slot's terms text and counts bytes (("", b"") for an empty slot)."""
    if item is None:
        return "", b""
    tally = known(item.path) if known is not None else None
    if tally is None:
        return _tokenized(item)
    if isinstance(tally, _BUFFERS):
        parts = packed_split(tally)
        return _tokenized(item) if parts is None else parts
    if tally.__class__ is str:  # the older JSON text
        tally = decode_terms(tally)
    return _dict_parts(tally)


@dataclass(frozen=True, slots=True)
class PackedSlots:
    """Every slot's term counts: ``texts[slot]`` its terms joined by the separator ("" for
    none), ``counts`` every count in slot order (int32), slot ``s``'s at
    ``counts[bounds[s]:bounds[s + 1]]`` (its terms' order)."""

    texts: list[str]
    counts: np.ndarray
    bounds: np.ndarray

    @classmethod
    def of(cls, items: list, analysed=None) -> "PackedSlots":
        """Gather the items' counts (None for an empty slot): ``analysed`` maps paths to
        their counts, packed (bytes-like), a dict, or JSON text; others are tokenized."""
        known = analysed.get if analysed else None
        texts, parts = [], []
        for item in items:
            joined, counts = _slot_parts(item, known)
            texts.append(joined)
            parts.append(counts)
        counts = np.frombuffer(b"".join(parts), dtype=COUNTS)
        if len(counts) and counts.min() < 1:  # a damaged stored row: tokenized instead
            for slot, item in enumerate(items):
                if item is not None and np.frombuffer(parts[slot], COUNTS).min(initial=1) < 1:
                    texts[slot], parts[slot] = _tokenized(item)
            counts = np.frombuffer(b"".join(parts), dtype=COUNTS)
        bounds = np.zeros(len(items) + 1, dtype=np.int64)
        np.cumsum([len(part) // COUNTS.itemsize for part in parts], out=bounds[1:])
        return cls(texts, counts, bounds)

    def lengths(self) -> np.ndarray:
        """Return each slot's document length (the sum of its counts), as float64."""
        summed = np.zeros(len(self.counts) + 1, dtype=np.int64)
        np.cumsum(self.counts, out=summed[1:])
        return (summed[self.bounds[1:]] - summed[self.bounds[:-1]]).astype(np.float64)

    def numbered(self, vocabulary: dict[str, int], chunk: int = NUMBERED_CHUNK) -> np.ndarray:
        """Return every slot's terms, in slot order (as many as ``counts``), as their numbers
        in ``vocabulary`` (a new term gets the next number, added to it). The terms are split
        ``chunk`` slots at a time: a whole layer's terms are never all Python strings at once
        (a 100k-article kb has millions: hundreds of MB at a worker's warm-up)."""
        numbers = np.empty(len(self.counts), dtype=np.int64)
        number, at, texts = vocabulary.setdefault, 0, self.texts
        for start in range(0, len(texts), chunk):
            joined = SEPARATOR.join(text for text in texts[start : start + chunk] if text)
            if joined:
                part = [number(term, len(vocabulary)) for term in joined.split(SEPARATOR)]
                numbers[at : at + len(part)] = part
                at += len(part)
        if at != len(numbers):
            raise AssertionError("the slots' terms and counts differ in number")
        return numbers


class PackedOnDemand:
    """A term -> ``(slots, tfs)`` mapping over ``PackedSlots``, each term's posting found on
    its first ``get`` by searching one string of every slot's terms (``Postings.on_demand``):
    int64 slots ascending, float64 counts. Read-only like a postings dict."""

    __slots__ = ("_bounds", "_counts", "_found", "_starts", "_text")

    def __init__(self, slots: PackedSlots):
        # Each slot's terms between separators; a term's occurrences are those of
        # SEPARATOR + term + SEPARATOR, which no other term and no two slots can make.
        self._text = SEPARATOR + SEPARATOR.join(slots.texts) + SEPARATOR
        starts, at = [], 1
        for text in slots.texts:
            starts.append(at)
            at += len(text) + 1
        self._starts = starts
        self._counts = slots.counts
        self._bounds = slots.bounds.tolist()
        self._found: dict[str, tuple | None] = {}

    def _posting(self, term: str):
        if not term or SEPARATOR in term:
            return None
        text, needle, starts = self._text, f"{SEPARATOR}{term}{SEPARATOR}", self._starts
        at = text.find(needle)
        if at < 0:
            return None
        slots, places = [], []
        count = text.count
        while at >= 0:
            slot = bisect_right(starts, at + 1) - 1
            slots.append(slot)
            # The term's place among its slot's terms: the separators before it in the slot.
            places.append(self._bounds[slot] + count(SEPARATOR, starts[slot], at + 1))
            at = text.find(needle, at + len(needle) - 1)
        return (
            np.array(slots, dtype=np.int64),
            self._counts[places].astype(np.float64),
        )

    def get(self, term: str, default=None):
        if term not in self._found:
            self._found[term] = self._posting(term)
        found = self._found[term]
        return default if found is None else found

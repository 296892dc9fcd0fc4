"""An item's analysed terms (SPEC §5), computed once when the item is written and stored.

``relevance_tokens(title, body)`` are the tokens of an item's relevance document
(``title + "\\n" + body``; the postings tokenize items through it), and ``item_terms`` counts
them: term -> term frequency, in order of first occurrence; the document length is the sum
of the counts.
A store keeps them with the item in their packed form (``pack_terms``: the counts as 32-bit
integers and the terms as one string, read back in bulk without a Python object per term;
``encode_terms``/``decode_terms`` is the older compact JSON object, still accepted) and gives
them back to the engine, which then builds a layer's BM25 postings without tokenizing its
text (``LayerIndex(layer, analysed=...)``). Terms computed by another version
of the analyser must not be given: ``ANALYSER_VERSION`` changes with any change to
tokenizing, stemming or the stopwords, and a store recomputes what carries an older stamp.
"""

import json
import struct

import numpy as np

from resolver.text import _stem_cache, stem, tokenize, words

# Bump with any change to resolver.text.tokenize (its pattern, normalization, stemmer or
# stopwords) or to what an item's relevance document is.
ANALYSER_VERSION = 1

# json.dumps builds an encoder per call when given arguments; one built once encodes the same.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def relevance_tokens(title: str | None, body: str | None) -> list[str]:
    """Return the tokens of an item's document for relevance: ``title + "\n" + body`` (§5)."""
    return tokenize((title or "") + "\n" + (body or ""))


def item_terms(title: str | None, body: str | None) -> dict[str, int]:
    """Return the term counts of an item's relevance document (SPEC §5).

    Exactly ``dict(Counter(relevance_tokens(title, body)))``: it runs once per item written
    (bulk ingest of a million tickets), so the stems are counted as they come, without the
    token list. Counting the distinct words first does not pay: most words of a ticket occur
    once.
    """
    lookup = _stem_cache.get
    terms: dict[str, int] = {}
    count = terms.get
    for word in words((title or "") + "\n" + (body or "")):
        term = lookup(word)
        if term is None:
            term = stem(word)
        if term:  # stopwords stem to ""
            terms[term] = count(term, 0) + 1
    return terms


def encode_terms(terms: dict[str, int]) -> str:
    """Return term counts as stored: a compact JSON object."""
    return _ENCODER.encode(terms)


def decode_terms(text: str) -> dict[str, int]:
    """Return the term counts ``encode_terms`` wrote."""
    return json.loads(text)


# The packed form (``pack_terms``), little-endian whatever the machine: the number of terms n
# and the byte length of their text (two uint32), their counts (n int32), then their text:
# the terms in UTF-8, in the counts' order, joined by SEPARATOR. A term never holds the
# separator (tokens are runs of ``[^\W_]``, ``resolver.text``).
SEPARATOR = "\n"
COUNTS = np.dtype("<i4")
_HEADER = struct.Struct("<II")


def pack_terms(terms: dict[str, int]) -> bytes:
    """Return term counts in their packed form (the order of ``terms`` kept)."""
    joined = SEPARATOR.join(terms)
    if terms and joined.count(SEPARATOR) != len(terms) - 1:
        raise ValueError("a term holds the separator of the packed form")
    counts = np.fromiter(terms.values(), dtype=COUNTS, count=len(terms))
    text = joined.encode()
    return _HEADER.pack(len(terms), len(text)) + counts.tobytes() + text


def packed_parts(packed) -> tuple[str, np.ndarray] | None:
    """Return the packed form's terms (joined by ``SEPARATOR``) and counts (an int32 array
    over the buffer), or None when it is damaged (``packed_split``)."""
    parts = packed_split(packed)
    if parts is None:
        return None
    return parts[0], np.frombuffer(parts[1], dtype=COUNTS)


def packed_split(packed) -> tuple[str, bytes] | None:
    """Return the packed form's terms (joined by ``SEPARATOR``) and its counts' bytes, or None
    when it is damaged: a length that is not its header's, its terms not UTF-8, not as many
    as its counts, or an empty one. Any bytes-like object (a driver's memoryview). The
    counts are not checked here (a caller checks many at once: each must be at least 1)."""
    size = len(packed)
    if size < _HEADER.size:
        return None
    n, length = _HEADER.unpack_from(packed)
    start = _HEADER.size + COUNTS.itemsize * n
    if start + length != size:
        return None
    try:
        joined = str(packed[start:], "utf-8")
    except UnicodeDecodeError:
        return None
    if n:
        if joined.count(SEPARATOR) != n - 1 or not _whole(joined):
            return None
    elif joined:
        return None
    return joined, packed[_HEADER.size : start]


def _whole(joined: str) -> bool:
    """Whether no term of a non-empty joined text is empty."""
    double = SEPARATOR + SEPARATOR
    return bool(joined) and not (
        double in joined or joined[0] == SEPARATOR or joined[-1] == SEPARATOR
    )


def unpack_terms(packed) -> dict[str, int] | None:
    """Return the term counts ``pack_terms`` packed (None when damaged: ``packed_parts``)."""
    parts = packed_parts(packed)
    if parts is None:
        return None
    joined, counts = parts
    if not len(counts):
        return {}
    if counts.min() < 1:
        return None
    return dict(zip(joined.split(SEPARATOR), counts.tolist(), strict=True))

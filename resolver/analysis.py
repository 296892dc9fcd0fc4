"""An item's analysed terms (SPEC §5), computed once when the item is written and stored.

``relevance_tokens(title, body)`` are the tokens of an item's relevance document
(``title + "\\n" + body``; the postings tokenize items through it), and ``item_terms`` counts
them: term -> term frequency, in order of first occurrence; the document length is the sum
of the counts.
A store keeps them with the item (``encode_terms``/``decode_terms``, a compact JSON object)
and gives them back to the engine, which then builds a layer's BM25 postings without
tokenizing its text (``LayerIndex(layer, analysed=...)``). Terms computed by another version
of the analyser must not be given: ``ANALYSER_VERSION`` changes with any change to
tokenizing, stemming or the stopwords, and a store recomputes what carries an older stamp.
"""

import json

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

"""An item's analysed terms are exactly the counted tokens of its relevance document.

The tokenizer splits an ASCII text by ``bytes.translate`` (``resolver.text.words``),
``item_terms`` counts the stems as they come, and ``encode_terms`` has a prebuilt JSON
encoder; stored terms carry ``ANALYSER_VERSION``, so all must give what the plain definitions
give, term for term, in the same order and byte for byte: the tokens of NFKC, casefold and the
word pattern on every text, ``dict(Counter(tokens))`` and
``json.dumps(terms, ensure_ascii=False, separators=(",", ":"))``.
"""

import json
import unicodedata
import uuid
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from resolver import text
from resolver.analysis import decode_terms, encode_terms, item_terms, relevance_tokens
from resolver.text import STOPWORDS, tokenize

# Words that stress the tokenizer: stopwords in any case, words sharing a stem, ligatures and
# compatibility characters (NFKC), ß and ẞ (casefold), combining marks, non-ASCII letters and
# digits, underscores (not word characters) and apostrophes.
WORDS = [
    *sorted(STOPWORDS)[:12],
    "The",
    "AND",
    "connect",
    "connected",
    "Connection",
    "CONNECTING",
    "connects",
    "refund",
    "refunds",
    "refunded",
    "ﬁle",
    "ﬂow",
    "files",
    "straße",
    "STRAẞE",
    "strasse",
    "café",
    "cafe\u0301",
    "naïve",
    "Σίσυφος",
    "ΣΊΣΥΦΟΣ",
    "Ⅻ",
    "ＡＢＣ",
    "x_y",
    "__init__",
    "42",
    "４２",
    "١٢٣",
    "don't",
    "İstanbul",
    "日本語",
]
SEPARATORS = [" ", "  ", "\n", "\n\n", "\t", ", ", ". ", "-", "_", "/", "\u00a0", "\u2003", "—"]


def reference_tokens(value: str) -> list[str]:
    """The tokenizer's definition (SPEC §5) with the regular expression on every text: NFKC,
    casefold, runs of ``[^\\W_]``, stemmed, stopwords dropped."""
    found = text._WORD_RE.findall(unicodedata.normalize("NFKC", value).casefold())
    return [token for token in map(text.stem, found) if token]


def reference(title, body) -> dict[str, int]:
    document = (title or "") + "\n" + (body or "")
    assert tokenize(document) == reference_tokens(document)
    return dict(Counter(reference_tokens(document)))


def reference_encoding(terms) -> str:
    return json.dumps(terms, ensure_ascii=False, separators=(",", ":"))


def assert_same_terms(title, body):
    terms = item_terms(title, body)
    assert type(terms) is dict
    assert list(terms.items()) == list(reference(title, body).items())
    assert encode_terms(terms) == reference_encoding(reference(title, body))


worded = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), max_size=40).map(
    lambda pairs: "".join(word + separator for word, separator in pairs)
)
texts = st.one_of(worded, st.text(), st.text(alphabet=st.characters(max_codepoint=127)))


@settings(max_examples=400)
@given(title=st.none() | texts, body=st.none() | texts)
def test_item_terms__are_the_counted_tokens_in_order_of_first_occurrence(title, body):
    assert_same_terms(title, body)


@given(terms=st.dictionaries(st.text(), st.integers() | st.booleans() | st.floats(allow_nan=False)))
def test_encode_terms__writes_what_json_dumps_writes(terms):
    assert encode_terms(terms) == reference_encoding(terms)
    assert decode_terms(encode_terms(terms)) == terms


def test_every_ascii_character__splits_words_as_the_tokenizer_does():
    """The ASCII path relies on NFKC being the identity on ASCII, casefold on ASCII being
    lower, and the word pattern matching [A-Za-z0-9] only."""
    every = "".join(map(chr, range(128)))
    assert unicodedata.normalize("NFKC", every) == every
    assert every.casefold() == every.lower()
    for character in every:
        assert_same_terms(None, f"Connect{character}connected{character}A{character}9")
        assert_same_terms(character, character * 3)
    assert_same_terms(every, every[::-1])


def test_words_sharing_a_stem__count_together_at_the_first_ones_place():
    assert list(item_terms("Connection", "refunds connected Connect connecting").items()) == [
        ("connect", 4),
        ("refund", 1),
    ]
    assert list(item_terms("Refund", "The refunds were refunded; REFUND ﬁle 42").items()) == [
        ("refund", 4),
        ("file", 1),
        ("42", 1),
    ]


def test_stopwords_and_empty_documents__have_no_terms():
    assert item_terms(None, None) == {}
    assert item_terms("", "") == {}
    assert item_terms("The", "and it is what it is") == {}


def test_a_word_not_yet_stemmed__is_stemmed_and_remembered():
    word = "zq" + uuid.uuid4().hex[:8] + "ing"
    assert word not in text._stem_cache
    assert_same_terms("a", f"{word.upper()} {word}")
    assert word in text._stem_cache


def test_item_terms__count_the_relevance_tokens():
    title, body = "Card declined", "The card was declined twice.\n\nCards: declined"
    terms = item_terms(title, body)
    assert sum(terms.values()) == len(relevance_tokens(title, body))


@given(st.text(alphabet=st.sampled_from(["a", "B", " ", "\t", "\n", "\u00a0", "é"]), max_size=30))
def test_collapse__any_text__one_space_between_words_and_the_text_itself_when_already_so(value):
    collapsed = text.collapse(value)

    assert collapsed == " ".join(value.split())
    # A title with nothing to collapse is kept, not copied (a held layer keeps it once).
    if collapsed == value:
        assert collapsed is value

"""The stemmer in use is the Snowball English algorithm, stem for stem.

``resolver.text`` asks ``snowballstemmer`` for the English stemmer, which hands out PyStemmer's
C implementation when it is installed (it is a dependency: ~13× faster on a word not yet
cached). Stored terms (``ANALYSER_VERSION``) and every relevance score depend on the stems, so
the C stemmer must give exactly the pure-Python Snowball stems: checked here on every word of
the conformance cases, the spec and its seed, the benchmark's vocabulary and random words.
"""

import re
import unicodedata
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from snowballstemmer.english_stemmer import EnglishStemmer

from resolver import text
from tests.perf import workloads

ROOT = Path(__file__).resolve().parents[2]
WORD = re.compile(r"[^\W_]+")
PURE = EnglishStemmer()


def words_of(value: str) -> set[str]:
    return set(WORD.findall(unicodedata.normalize("NFKC", value).casefold()))


def vocabulary() -> set[str]:
    words: set[str] = set()
    for path in [*ROOT.glob("tests/resolver/conformance/*.yaml"), *ROOT.glob("docs/*.md")]:
        words |= words_of(path.read_text(encoding="utf-8"))
    generator = workloads.TextGenerator(7)
    for _ in range(2_000):
        words |= words_of(generator.body((50, 130)))
    return words


def test_the_stemmer_in_use__is_the_c_snowball_stemmer():
    # PyStemmer is a dependency; without it stemming falls back to the slower pure Python.
    assert type(text._stemmer).__module__ == "Stemmer"


def test_every_word_of_cases_docs_and_the_benchmark__stems_as_pure_snowball():
    words = vocabulary()
    assert len(words) > 5_000

    differing = [w for w in sorted(words) if text._stemmer.stemWord(w) != PURE.stemWord(w)]

    assert differing == []


@settings(max_examples=2_000, deadline=None)
@given(
    word=st.text(
        alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyzéèàüößœ'ıİ0123456789"),
        min_size=1,
        max_size=24,
    )
)
def test_random_words__stem_as_pure_snowball(word):
    assert text._stemmer.stemWord(word) == PURE.stemWord(word)

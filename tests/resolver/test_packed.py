"""The packed form of items' term counts (``resolver.analysis.pack_terms``) and the postings
read from it (``resolver.packed``): any counts round-trip, a damaged value is refused (and its
item tokenized), and postings found on demand are the ones built for the whole layer."""

import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resolver.analysis import item_terms, pack_terms, packed_parts, unpack_terms
from resolver.model import Item
from resolver.packed import PackedOnDemand, PackedSlots
from resolver.postings import Postings
from tests.resolver.strategies import WORDS

# Terms as the analyser makes them: non-empty, no separator (any other character).
TERMS = st.text(
    alphabet=st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), min_size=1
)
COUNTS = st.dictionaries(TERMS, st.integers(min_value=1, max_value=2**31 - 1), max_size=60)


@settings(max_examples=300, deadline=None)
@given(COUNTS)
def test_pack_then_unpack__any_term_counts__equal_in_order(terms):
    packed = pack_terms(terms)
    assert isinstance(packed, bytes)
    back = unpack_terms(packed)
    assert back == terms and list(back) == list(terms)
    assert unpack_terms(memoryview(packed)) == terms  # a driver's buffer
    joined, counts = packed_parts(packed)
    assert joined.split("\n") == (list(terms) or [""]) and counts.tolist() == list(terms.values())


def test_pack__a_term_holding_the_separator__refused():
    with pytest.raises(ValueError):
        pack_terms({"a\nb": 1})


def _damaged(packed: bytes) -> dict[str, bytes]:
    n, length = struct.unpack_from("<II", packed)
    return {
        "empty": b"",
        "header only, cut": packed[:5],
        "cut short": packed[:-1],
        "a byte more": packed + b"x",
        "more terms than counts": struct.pack("<II", n - 1, length) + packed[8 + 4 : 8 + 4 * n]
        if n > 1
        else b"\0",
        "a count of 0": packed[:8] + b"\0\0\0\0" + packed[12:],
        "a negative count": packed[:8] + struct.pack("<i", -3) + packed[12:],
        "not UTF-8": packed[: 8 + 4 * n] + b"\xff" + packed[8 + 4 * n + 1 :],
        "an empty term": packed[: 8 + 4 * n]
        + b"\n"
        + packed[8 + 4 * n + 1 :]
        + b"",  # its first character made a separator: an empty first term
        "JSON text": b'{"refund": 1}',
    }


def test_unpack__damaged_values__none_and_never_raises():
    packed = pack_terms(item_terms("Refund card", "The refund of the card was late, late."))
    for name, value in _damaged(packed).items():
        assert unpack_terms(value) is None, name


def test_postings__damaged_stored_terms__the_items_are_tokenized():
    rng = random.Random(3)
    items = [
        Item(f"p{n}", rng.choice(WORDS), " ".join(rng.choice(WORDS) for _ in range(12)), {})
        for n in range(12)
    ]
    plain = Postings.build(items, len(items))
    packed = pack_terms(item_terms(items[0].title, items[0].body))
    for name, value in _damaged(packed).items():
        # every item given the damaged value: read as the first item's, it would be wrong
        analysed = {item.path: value for item in items}
        for build in (Postings.build, Postings.on_demand):
            built = build(items, len(items), analysed)
            assert built.lengths.tolist() == plain.lengths.tolist(), name
            for term, (slots, tfs) in plain.terms.items():
                assert built.terms.get(term)[0].tolist() == slots.tolist(), (name, term)
                assert built.terms.get(term)[1].tolist() == tfs.tolist(), (name, term)


ITEMS = st.lists(
    st.one_of(
        st.none(),  # an empty slot
        st.tuples(
            st.lists(st.sampled_from(WORDS), max_size=4),
            st.lists(st.sampled_from([*WORDS, "Ⅻ", "ﬁ", "x"]), max_size=30),
            st.sampled_from(["packed", "dict", "tokenized"]),
        ),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(ITEMS, st.lists(st.sampled_from([*WORDS, "x", "absent", ""]), max_size=8))
def test_postings_on_demand_and_built__packed_or_not__equal_the_tokenized_ones(drawn, asked):
    items, analysed = [], {}
    for n, slot in enumerate(drawn):
        if slot is None:
            items.append(None)
            continue
        title, body, how = " ".join(slot[0]), " ".join(slot[1]), slot[2]
        items.append(Item(f"p{n}", title, body, {}))
        if how == "packed":
            analysed[f"p{n}"] = pack_terms(item_terms(title, body))
        elif how == "dict":
            analysed[f"p{n}"] = item_terms(title, body)
    count = sum(item is not None for item in items)
    plain = Postings.build(items, count)
    built = Postings.build(items, count, analysed)
    on_demand = Postings.on_demand(items, count, analysed)
    assert built.terms.keys() == plain.terms.keys()
    for postings in (built, on_demand):
        assert postings.lengths.tolist() == plain.lengths.tolist()
        assert postings.total_length == plain.total_length
    for term in [*plain.terms.keys(), *asked]:
        expected = plain.terms.get(term)
        for postings in (built, on_demand):
            found = postings.terms.get(term)
            if expected is None:
                assert found is None, term
            else:
                assert found[0].tolist() == expected[0].tolist(), term
                assert found[1].tolist() == expected[1].tolist(), term


def test_on_demand__a_term_never_matches_across_items_or_parts_of_terms():
    items = [
        Item("a", "refund", "", {}),
        Item("b", "card", "", {}),
        Item("c", "refunds card", "", {}),
    ]
    on_demand = PackedOnDemand(PackedSlots.of(items))
    assert on_demand.get("refund card") is None
    assert on_demand.get("fund") is None
    assert on_demand.get("refund\ncard") is None
    slots, tfs = on_demand.get("card")
    assert slots.tolist() == [1, 2] and tfs.tolist() == [1.0, 1.0]


def test_postings_build__a_large_layer__its_terms_never_all_python_strings_at_once():
    # A worker's warm-up builds a held layer's postings from its stored terms: 10k items of 65
    # terms here (a 100k-article kb has ten times as many). Splitting every term into a string
    # at once cost ~114 bytes a term at the peak (~470 MB more of a worker at 1M tickets);
    # split in chunks of slots, the peak is the arrays' (~63 bytes a term measured).
    import tracemalloc

    rng = random.Random(7)
    vocabulary = [f"w{n}x" for n in range(20_000)]
    items, analysed = [], {}
    for n in range(10_000):
        items.append(Item(f"kb/{n}", "", "", {}))
        analysed[f"kb/{n}"] = pack_terms(
            {term: rng.randint(1, 4) for term in rng.sample(vocabulary, 65)}
        )
    terms = 65 * len(items)
    tracemalloc.start()
    try:
        built = Postings.build(items, len(items), analysed)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert int(built.lengths.sum()) == sum(
        sum(unpack_terms(value).values()) for value in analysed.values()
    )
    assert peak / terms < 90, f"{peak / terms:.0f} bytes a term at the peak"

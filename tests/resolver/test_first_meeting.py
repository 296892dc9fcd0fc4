"""The shortcuts of a served layer's first meeting (issue 35 item 2) decide as the full paths do.

``plain_item`` (an item entry of the common shape, ``_Builder.item``'s shortcut) against the
field-by-field checks, on generated entries, hostile ones included: the same item, the same
issues, the same paths seen, the same stop. The kept dates of strings, the one-value
itemFilter lookup and a fetched index's fragments written for the items gathered only, each
against what it replaces.
"""

import datetime as dt

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from resolver.index import LayerIndex, _date, item_date
from resolver.limits import MAX_METADATA_VALUES
from resolver.model import Item, Layer
from resolver.validation.entries import _Builder, plain_item
from resolver.validation.primitives import _Stop
from resolver.values import canonical_values
from tests.resolver.test_hostile_values import (
    CLEAN_SCALARS,
    CLEAN_TEXT,
    HOSTILE_METADATA,
    METADATA,
    NUMBERS,
    SCALARS,
    TEXT,
    date_strings,
)

SETTINGS = settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class Sly(str):
    """A string that says it is ASCII and holds no NUL, whatever it holds."""

    def isascii(self):
        return True

    def __contains__(self, other):
        return False


SLY = st.sampled_from([Sly("a"), Sly("a\x00"), Sly("path"), Sly("\ud800")])
BIG = st.sampled_from(["x" * 255, "x" * 256, "T" * 1000, "T" * 1001])
LONG = st.sampled_from(["B" * 1_000_000, "B" * 1_000_001])
PATHS = st.one_of(
    CLEAN_TEXT,
    TEXT,
    BIG,
    SLY,
    st.sampled_from(["seen", " a", "a ", "", "\t", "a\nb", "a\x00", "\udc00"]),
    NUMBERS,
    st.booleans(),
    st.none(),
    st.dates(),
)
TEXTS = st.one_of(st.none(), CLEAN_TEXT, TEXT, BIG, SLY, NUMBERS, st.booleans(), st.just([]))
FLAT = st.dictionaries(
    st.one_of(CLEAN_TEXT, TEXT, SLY, st.integers(0, 3)),
    st.one_of(CLEAN_SCALARS, SCALARS, SLY, st.lists(st.one_of(CLEAN_SCALARS, SLY), max_size=3)),
    max_size=5,
)
MANY = st.integers(MAX_METADATA_VALUES - 2, MAX_METADATA_VALUES + 2).flatmap(
    lambda n: st.sampled_from(
        [
            {"tags": list(range(n))},
            {"a": 1, "tags": ["x"] * (n - 1)},
            {f"k{i}": i for i in range(n)},
            {"tags": [], "more": list(range(n)), "and": None},
        ]
    )
)
METADATAS = st.one_of(
    st.none(), FLAT, METADATA, HOSTILE_METADATA, MANY, TEXT, NUMBERS, st.just([]), SLY
)
FIELDS = {"path": PATHS, "title": TEXTS, "body": st.one_of(TEXTS, LONG), "metadata": METADATAS}
EXTRA = st.sampled_from(["extra", "\x00", "\ud800", 1, Sly("path"), Sly("x")])


class Loose(dict):
    """A dict subclass: not of the common shape."""


META_KEYS = st.sampled_from(["customer_id", "updated", "status", "tags"])
PLAIN = {
    "path": st.one_of(
        *[st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9 /._-]{0,12}[a-z])?", fullmatch=True)] * 4, PATHS
    ),
    "title": st.one_of(st.none(), CLEAN_TEXT),
    "body": st.one_of(st.none(), CLEAN_TEXT),
    "metadata": st.one_of(
        st.none(),
        st.dictionaries(
            META_KEYS | CLEAN_TEXT,
            st.one_of(CLEAN_SCALARS, st.lists(CLEAN_SCALARS, max_size=3)),
            max_size=5,
        ),
    ),
}


@st.composite
def entries(draw):
    """An item entry: mostly of the common shape, with one or two values of the hostile
    kinds at times (or an extra key), now and then no dict at all."""
    entry = {}
    for name, values in PLAIN.items():
        if draw(st.sampled_from([True] * 5 + [False])):  # mostly present
            entry[name] = draw(values)
    for _ in range(draw(st.sampled_from([0, 0, 0, 0, 1, 2]))):
        name = draw(st.sampled_from([*FIELDS, "metadata-value", "extra"]))
        if name == "extra":
            entry[draw(EXTRA)] = draw(st.one_of(st.none(), TEXT))
        elif name == "metadata-value" and isinstance(entry.get("metadata"), dict):
            entry["metadata"][draw(st.one_of(META_KEYS, TEXT, SLY, st.integers(0, 3)))] = draw(
                st.one_of(SCALARS, SLY, METADATA, HOSTILE_METADATA, st.lists(SCALARS))
            )
        elif name in FIELDS:
            entry[name] = draw(FIELDS[name])
    shape = draw(st.sampled_from(["dict"] * 18 + ["other", "loose"]))
    if shape == "other":
        return draw(st.one_of(st.none(), TEXT, NUMBERS, st.just([entry])))
    if shape == "loose":
        return Loose(entry)
    return entry


SEEN = st.one_of(st.none(), st.just({}), st.just({"seen": "items[0]", "a": "items[1]"}))


def outcome(check, raw, seen, first_only):
    builder = _Builder(None, first_only=first_only)
    seen = None if seen is None else dict(seen)
    stopped = False
    try:
        item = check(builder)(raw, "layers[0].items[3]", seen)
    except _Stop:
        item, stopped = None, True
    return item, builder.issues, seen, stopped


@SETTINGS
@given(raw=entries(), seen=SEEN, first_only=st.booleans())
def test_item__shortcut_then_full_checks__decide_as_the_full_checks(raw, seen, first_only):
    fast = outcome(lambda b: b.item, raw, seen, first_only)
    full = outcome(lambda b: b.checked_item, raw, seen, first_only)
    plain = plain_item(raw, seen)
    event("plain" if plain is not None else "checked")
    assert fast == full
    if plain is not None and raw.get("metadata") is not None:
        assert fast[0].metadata is full[0].metadata is raw["metadata"]


@SETTINGS
@given(raw=entries(), seen=SEEN)
def test_plain_item__an_item__is_the_one_the_full_checks_build_without_issue(raw, seen):
    plain = plain_item(raw, None if seen is None else dict(seen))
    if plain is None:
        return
    item, issues, _, stopped = outcome(lambda b: b.checked_item, raw, seen, True)
    assert (item, issues, stopped) == (plain, [], False)
    assert item.title.__class__ is str and item.body.__class__ is str


def test_plain_item__common_entries__take_the_shortcut():
    entry = {
        "path": "T-1",
        "title": "Refund",
        "body": "Body é 😀",
        "metadata": {"customer_id": "C-1", "n": 2.5, "ok": True, "tags": ["a", 1], "d": None},
    }
    assert plain_item(entry, {}) == Item("T-1", "Refund", "Body é 😀", entry["metadata"])
    assert plain_item({"path": "p"}, None) == Item("p", "", "", {})
    for bad in (
        {**entry, "path": "T-1 "},
        {**entry, "title": "a\x00"},
        {**entry, "body": "\ud800"},
        {**entry, "metadata": {"k": "v\x00"}},
        {**entry, "metadata": {"k\x00": "v"}},
        {**entry, "metadata": {"k": {"nested": 1}}},
        {**entry, "metadata": {"tags": list(range(MAX_METADATA_VALUES + 1))}},
        {**entry, "extra": 1},
        Loose(entry),
    ):
        assert plain_item(bad, None) is None
    assert plain_item(entry, {"T-1": "items[0]"}) is None


@SETTINGS
@given(value=st.one_of(date_strings(), TEXT, CLEAN_SCALARS, SCALARS))
def test_item_date__kept_dates__are_the_parsed_ones(value):
    item = Item("p", "", "", {"updated": value})
    assert item_date(item, "updated") == item_date(item, "updated") == _date(value)


def index_of(metadatas, fetched=False) -> LayerIndex:
    items = tuple(
        Item(f"p{n:03d}", f"T{n}", "Body.", metadata) for n, metadata in enumerate(metadatas)
    )
    layer = Layer("tickets", "", "", "auto", (), (), (), (), items)
    return LayerIndex(layer, fetched=fetched)


@SETTINGS
@given(values=st.lists(st.one_of(CLEAN_SCALARS, SCALARS, FLAT, st.lists(SCALARS)), max_size=8))
def test_filter_lookup__as_each_items_canonical_values(values):
    lookup = index_of([{"customer_id": value} for value in values]).filter_lookup("customer_id")
    expected = {}
    for i, value in enumerate(values):
        for text in set(canonical_values(value)):
            expected.setdefault(text, []).append(i)
    assert lookup == expected
    assert list(lookup) == list(expected)


KEYS = [
    ("json", "path"),
    ("json", "ref", "not-retrieved", False),
    ("json", "materialized-ref", "overflow"),
    ("json", "unit", "updated", True),
    ("json", "unit", "updated", False),
]


@SETTINGS
@given(
    days=st.lists(st.one_of(st.none(), st.dates(dt.date(2020, 1, 1)).map(str)), min_size=1),
    picks=st.lists(st.lists(st.integers(0, 10**6), min_size=1, max_size=12), min_size=1),
)
def test_gather__a_fetched_index__gives_the_records_of_the_held_one(days, picks):
    metadatas = [{} if day is None else {"updated": day} for day in days]
    held, fetched = index_of(metadatas), index_of(metadatas, fetched=True)
    for key in KEYS:
        for pick in picks:  # the first gathers write the items gathered, later ones all
            indices = np.array([n % len(days) for n in pick], dtype=np.intp)
            assert fetched.gather(key, indices) == held.gather(key, indices)
    assert len(fetched.records.by_key) == (len(KEYS) if len(picks) > 2 else 0)

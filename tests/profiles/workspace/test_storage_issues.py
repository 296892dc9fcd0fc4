"""The storage check of items (what PostgreSQL cannot hold): its quick pass never hides an
issue the full check reports."""

import datetime as dt
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from profiles.workspace.validation import (
    _item_storable,
    _item_storage_issues,
    _item_storage_issues_in_full,
)

texts = st.text(alphabet=st.characters(codec=None, min_codepoint=0), max_size=8)
scalars = (
    texts
    | st.integers()
    | st.booleans()
    | st.none()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.dates()
    | st.datetimes()
)
metadata_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(texts | st.integers(), children, max_size=3)
    ),
    max_leaves=12,
)
items = st.fixed_dictionaries(
    {"path": texts},
    optional={
        "title": texts | st.integers(),
        "body": texts | st.floats() | st.lists(texts, max_size=2),
        "metadata": st.dictionaries(texts, metadata_values, max_size=4),
    },
)


@settings(max_examples=400, deadline=None)
@given(items)
def test_item_storage_issues__any_item__equal_the_full_check(item):
    if _item_storable(item):
        assert _item_storage_issues_in_full(item, "layers[0].items[0]") == []
    assert _item_storage_issues(item, "layers[0].items[0]") == _item_storage_issues_in_full(
        item, "layers[0].items[0]"
    )


def test_item_storage_issues__nul_lone_surrogate_or_infinity__are_reported():
    plain = {"path": "a.md", "title": "T", "metadata": {"tags": ["x"], "n": 1.5}}
    cases = [
        {**plain, "body": "a\x00b"},
        {**plain, "title": "\ud800"},
        {**plain, "metadata": {"tags": ["ok", "bad\x00"]}},
        {**plain, "metadata": {"nested": {"key\udc00": 1}}},
        {**plain, "metadata": {"score": math.inf}},
        {**plain, "metadata": {"scores": [1.0, [math.nan]]}},
    ]

    assert _item_storable(plain)
    assert _item_storable({**plain, "metadata": {"updated": dt.date(2026, 1, 2)}})
    for item in cases:
        assert not _item_storable(item), item
        assert _item_storage_issues(item, "x"), item

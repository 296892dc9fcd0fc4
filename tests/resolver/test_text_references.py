"""Items whose body is held elsewhere (``resolver.model.TextReference``).

A store may give an item's body as a reference that the engine reads only when a stage needs
the text: to render the item (its body, summary or excerpt) or to count its terms when none
were given. Every answer must be the one the same document gives with the texts in place,
byte for byte, and with the terms given, a resolution reads the texts of what it renders
only.
"""

import copy
import random

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resolver import ResolverError, compile_workspace
from resolver.analysis import encode_terms, item_terms
from resolver.model import TextReference
from resolver.sweep import budget_sweep
from tests.resolver.strategies import scenarios
from tests.resolver.test_conformance import CASE_FILES, run_case

SETTINGS = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class HeldText(TextReference):
    """A body held elsewhere; each read is logged by (path, text)."""

    __slots__ = ("_log", "_path", "_text")

    def __init__(self, text: str, path: str, log: list):
        self._text, self._path, self._log = text, path, log

    def text(self) -> str:
        self._log.append(self._path)
        return self._text

    def __eq__(self, other):
        return other.__class__ is HeldText and other._text == self._text

    def __hash__(self):
        return hash(self._text)


def held(document, log: list, *, share: float = 1.0, seed: int = 0) -> dict:
    """Return a copy of the document with the bodies of (a share of) its items held."""
    rng = random.Random(seed)
    document = copy.deepcopy(document)
    for layer in document.get("layers") or []:
        for item in layer.get("items") or []:
            body = item.get("body")
            if isinstance(body, str) and rng.random() < share:
                item["body"] = HeldText(body, item["path"], log)
    return document


def terms_of(document, *, share: float = 1.0, seed: int = 0) -> dict:
    """Return the stored terms of (a share of) the items, as a store gives them."""
    rng = random.Random(seed)
    return {
        layer["key"]: {
            item["path"]: encode_terms(item_terms(item.get("title"), item.get("body")))
            for item in layer.get("items") or []
            if rng.random() < share
        }
        for layer in document.get("layers") or []
    }


def outcome(call):
    try:
        return call()
    except ResolverError as exc:
        return ("error", type(exc).__name__, str(exc))


@pytest.mark.parametrize("case_file", CASE_FILES, ids=[f.stem for f in CASE_FILES])
def test_golden_case__bodies_held_elsewhere__matches_expectation(case_file):
    case = yaml.safe_load(case_file.read_text(encoding="utf-8"))
    log: list = []
    case = {**case, "workspace": held(case["workspace"], log)}
    assert run_case(case) is None, run_case(case)


@SETTINGS
@given(scenario=scenarios(), seed=st.integers(0, 1000))
def test_bodies_held_elsewhere__answer_as_the_texts_in_place(scenario, seed):
    document, request = scenario.document, scenario.request
    whole = compile_workspace(document)
    log: list = []
    elsewhere = compile_workspace(
        held(document, log, share=0.8, seed=seed),
        analysed=terms_of(document, share=0.7, seed=seed),
    )
    calls = {
        "resolve": lambda c: c.resolve(request),
        "json": lambda c: c.resolve_json(request).data,
        "summary": lambda c: c.resolve_json({**request, "detail": "summary"}).data,
        "sweep": lambda c: [
            budget_sweep(c, request, ceiling=2000).at(budget) for budget in (1, 50, 200, 2000)
        ],
    }
    for layer in document["layers"]:
        calls[f"ranking {layer['key']}"] = lambda c, key=layer["key"]: c.ranking(request, key)
    for name, call in calls.items():
        assert outcome(lambda call=call: call(elsewhere)) == outcome(
            lambda call=call: call(whole)
        ), name


@SETTINGS
@given(scenario=scenarios(), seed=st.integers(0, 1000))
def test_an_edited_item_held_elsewhere__patches_as_the_texts_in_place(scenario, seed):
    """An item edit patches the postings: the earlier version's terms are read through its
    reference (its text stays readable), the new one's from the text given."""
    document, request = scenario.document, scenario.request
    layers = [layer for layer in document["layers"] if layer.get("items")]
    if not layers:
        return
    rng = random.Random(seed)
    layer = rng.choice(layers)
    item = rng.choice(layer["items"])
    edited = {**item, "body": (item.get("body") or "") + " refund refunds delivered"}
    log: list = []
    elsewhere = compile_workspace(held(document, log), analysed=terms_of(document))
    whole = compile_workspace(document)
    for compiled in (elsewhere, whole):
        compiled.resolve(request)  # the postings exist before the edit
    patched = [
        c.with_layer_changes(layer["key"], upsert=[edited], token="t2") for c in (elsewhere, whole)
    ]
    assert outcome(lambda: patched[0].resolve(request)) == outcome(
        lambda: patched[1].resolve(request)
    )


def test_a_resolution_reads_the_texts_of_what_it_renders_only():
    items = [
        {
            "path": f"a-{n:04d}",
            "title": f"Article {n}",
            "body": f"Refunds for card {n}.\n\nThe refund of order {n} takes days.",
        }
        for n in range(2_000)
    ]
    document = {
        "version": 1,
        "consumers": [{"key": "chat"}],
        "layers": [{"key": "kb", "items": items}],
        "profiles": [
            {
                "key": "p",
                "consumer": "chat",
                "objective": "answer",
                "budget": 300,
                "rules": {"kb": {"mode": "retrieve", "facets": ["excerpt", "summary"]}},
            }
        ],
    }
    log: list = []
    compiled = compile_workspace(held(document, log), analysed=terms_of(document))
    # A fixed "now": two resolutions a second apart would differ in it alone.
    request = {"profile": "p", "input": {"message": "refund for card 7"}, "now": "2026-01-05"}
    resolution = compiled.resolve(request)
    rendered = resolution["layers"][0]["rendered"]["items"]
    assert 0 < len(rendered) < 50
    assert resolution == compile_workspace(document).resolve(request)
    # The rendered items, and the one whose text did not fit the budget.
    assert set(log) == {path for path in rendered} | set(log[-1:])
    assert len(set(log)) <= len(rendered) + 1

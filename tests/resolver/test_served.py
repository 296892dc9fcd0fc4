"""Served layers (``resolver.served``): a layer whose items a store fetches per request.

Every answer of a workspace compiled with its filtered layers served (their items fetched
for each request by a source) must be the answer of ``resolve(document, request)`` with every
item in place, byte for byte: the resolution JSON, its encoded form, the ranking and the
budget sweep. The sources here are plain functions over the document; the database's own is
tested in ``tests/profiles/workspace/test_served_layers.py``.
"""

import copy
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resolver import ResolverError, compile_workspace
from resolver.analysis import decode_terms, encode_terms, item_terms, pack_terms
from resolver.model import Item
from resolver.postings import Postings, item_tokens
from resolver.served import Fetched, Need
from resolver.sweep import budget_sweep
from resolver.values import canonical_values
from tests.resolver.strategies import WORDS, scenarios

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def served_of(document) -> dict[str, int]:
    return {
        layer["key"]: len(layer.get("items") or [])
        for layer in document["layers"]
        if layer.get("itemFilter")
    }


def document_source(document, *, seed: int, log: list | None = None):
    """A source over the document: the items matching the first filter field (a superset of
    the candidates when the layer filters on more), some with stored terms (packed as a store
    keeps them, a few as dicts, a few packed and damaged: the engine tokenizes those), plus,
    at random, items that do not match at all (a store may return a superset)."""
    layers = {layer["key"]: layer for layer in document["layers"]}

    def source(needs: list[Need]) -> dict[str, Fetched]:
        rng = random.Random(seed)
        out = {}
        for need in needs:
            if log is not None:
                log.append(need)
            field, value = need.filters[0]
            items = layers[need.layer].get("items") or []
            entries = [
                item
                for item in items
                if value in canonical_values((item.get("metadata") or {}).get(field))
                or rng.random() < 0.2
            ]
            terms = {}
            for entry in entries:
                draw = rng.random()
                if draw < 0.7:
                    counted = item_terms(entry.get("title"), entry.get("body"))
                    packed = pack_terms(counted)
                    terms[entry["path"]] = (
                        packed if draw < 0.5 else counted if draw < 0.65 else packed[:-1]
                    )
            out[need.layer] = Fetched(entries=entries, terms=terms)
        return out

    return source


def outcome(compiled, request, call):
    try:
        return call(compiled, request)
    except ResolverError as exc:
        return ("error", type(exc).__name__, str(exc))


def compiled_both_ways(document, seed: int):
    """Return the document compiled whole, and with its filtered layers served."""
    served = compile_workspace(
        document, served=served_of(document), source=document_source(document, seed=seed)
    )
    return compile_workspace(document), served


CALLS = {
    "resolve": lambda compiled, request: compiled.resolve(request),
    "resolve_json": lambda compiled, request: compiled.resolve_json(request).data,
    "summary": lambda compiled, request: (
        compiled.resolve_json({**request, "detail": "summary"}).data
    ),
}


@SETTINGS
@given(scenario=scenarios(), seed=st.integers(0, 1000))
def test_served_layers_answer_as_the_whole_document(scenario, seed):
    document = scenario.document
    whole, served = compiled_both_ways(document, seed)
    for name, call in CALLS.items():
        assert outcome(served, scenario.request, call) == outcome(whole, scenario.request, call), (
            name
        )


@SETTINGS
@given(scenario=scenarios(), seed=st.integers(0, 1000))
def test_rankings_sweeps_and_drafts_of_served_layers_are_the_whole_documents(scenario, seed):
    document = scenario.document
    whole, served = compiled_both_ways(document, seed)
    request = scenario.request
    for layer in document["layers"]:
        assert outcome(
            served, request, lambda c, r, key=layer["key"]: c.ranking(r, key)
        ) == outcome(whole, request, lambda c, r, key=layer["key"]: c.ranking(r, key))

    def sweep(compiled, request):
        result = budget_sweep(compiled, request, ceiling=2000)
        return [result.at(budget) for budget in (1, 50, 200, 2000)]

    assert outcome(served, request, sweep) == outcome(whole, request, sweep)
    profile = document["profiles"][scenario.profile_index]["key"]
    rules = {layer["key"]: {"mode": "retrieve", "maxItems": 1} for layer in document["layers"]}
    drafted = {**request, "profile": profile}
    for key in ("consumer", "objective", "environment"):
        drafted.pop(key, None)
    assert outcome(
        served.with_profile_draft(profile, rules=rules), drafted, CALLS["resolve"]
    ) == outcome(whole.with_profile_draft(profile, rules=rules), drafted, CALLS["resolve"])


@SETTINGS
@given(scenario=scenarios())
def test_a_served_layer_asks_only_for_what_the_request_reads(scenario):
    document = scenario.document
    log: list[Need] = []
    served = compile_workspace(
        document, served=served_of(document), source=document_source(document, seed=1, log=log)
    )
    try:
        needs = served.needs(scenario.request)
    except ResolverError:
        return
    outcome(served, scenario.request, CALLS["resolve"])
    assert log == needs
    request_input = scenario.request.get("input") or {}
    availability = scenario.request.get("availability") or {}
    for need in needs:
        layer = next(layer for layer in document["layers"] if layer["key"] == need.layer)
        # (an empty served layer is asked for too: it may hold items by the request's time)
        assert availability.get(layer["key"], layer.get("availability", "auto")) == "auto"
        assert [field for field, _ in need.filters] == sorted(layer["itemFilter"])
        for field, value in need.filters:
            assert request_input.get(layer["itemFilter"][field]) not in (None, "")
            assert isinstance(value, str)


def test_stored_terms_are_the_tokens_the_engine_counts():
    rng = random.Random(7)
    for _ in range(300):
        title = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(0, 6)))
        body = " ".join(rng.choice([*WORDS, "\n\n", "Ⅻ", "ﬁ"]) for _ in range(rng.randrange(0, 40)))
        stored = decode_terms(encode_terms(item_terms(title, body)))
        tokens = item_tokens(Item("p", title, body, {}))
        assert sum(stored.values()) == len(tokens)
        assert stored == {term: tokens.count(term) for term in dict.fromkeys(tokens)}


def test_a_served_layer_keeps_its_total_and_reads_no_items():
    document = {
        "version": 1,
        "consumers": [{"key": "bot"}],
        "layers": [
            {
                "key": "tickets",
                "itemFilter": {"customer_id": "customer_id"},
                "items": [
                    {"path": f"t{n}", "title": "refund", "metadata": {"customer_id": f"C{n % 3}"}}
                    for n in range(9)
                ],
            }
        ],
        "profiles": [
            {
                "key": "p",
                "consumer": "bot",
                "objective": "o",
                "budget": 500,
                "rules": {"tickets": {"mode": "retrieve"}},
            }
        ],
    }
    # The served layer's entry is never read: its items may be anything.
    stripped = copy.deepcopy(document)
    stripped["layers"][0]["items"] = "not read"
    served = compile_workspace(
        stripped, served={"tickets": 9}, source=document_source(document, seed=0)
    )
    request = {"profile": "p", "input": {"customer_id": "C1", "message": "refund"}}
    whole = compile_workspace(document).resolve(request)
    answer = served.resolve(request)
    assert answer == whole
    assert answer["layers"][0]["available"]["items"] == 9
    assert served.needs(request) == [Need("tickets", (("customer_id", "C1"),))]
    assert served.needs({"profile": "p", "input": {}}) == []
    # No source: a served workspace refuses rather than answering from nothing.
    bare = compile_workspace(stripped, served={"tickets": 9})
    try:
        bare.resolve(request)
    except RuntimeError:
        pass
    else:
        raise AssertionError("resolved a served layer without a source")


def test_postings_from_stored_terms__packed_text_or_counts__are_the_tokenized_ones():
    rng = random.Random(11)
    items = [
        Item(
            f"p{n}",
            " ".join(rng.choice(WORDS) for _ in range(3)),
            " ".join(rng.choice(WORDS) for _ in range(rng.randrange(0, 30))),
            {},
        )
        for n in range(40)
    ]
    stored = {item.path: encode_terms(item_terms(item.title, item.body)) for item in items[::2]}
    counted = {path: decode_terms(text) for path, text in stored.items()}
    packed = {path: pack_terms(terms) for path, terms in counted.items()}
    # Damaged packed rows (cut short, a count of 0) are tokenized: the same postings.
    damaged = {path: memoryview(value) for path, value in packed.items()}
    damaged["p0"] = packed["p0"][:-1]
    damaged["p2"] = packed["p2"][:8] + b"\0\0\0\0" + packed["p2"][12:]
    plain = Postings.build(items, len(items))
    for analysed in (stored, counted, packed, damaged):
        built = Postings.build(items, len(items), analysed)
        assert built.lengths.tolist() == plain.lengths.tolist()
        assert built.terms.keys() == plain.terms.keys()
        for term, (slots, tfs) in plain.terms.items():
            assert built.terms[term][0].tolist() == slots.tolist()
            assert built.terms[term][1].tolist() == tfs.tolist()
        on_demand = Postings.on_demand(items, len(items), analysed)
        assert on_demand.lengths.tolist() == plain.lengths.tolist()
        for term, (slots, tfs) in plain.terms.items():
            assert on_demand.terms.get(term)[0].tolist() == slots.tolist()
            assert on_demand.terms.get(term)[1].tolist() == tfs.tolist()
        assert on_demand.terms.get("absent-term") is None

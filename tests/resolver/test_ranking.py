"""``CompiledWorkspace.ranking``: rank, score and matched terms of every retrieved item of a
layer, the overflow references included (the resolution's references carry no score)."""

from pathlib import Path

import yaml

from resolver import compile_workspace

CASE_01 = next((Path(__file__).parent / "conformance").glob("01-*.yaml"))


def case_01(kb_max_items: int):
    case = yaml.safe_load(CASE_01.read_text(encoding="utf-8"))
    document = case["workspace"]
    profile = document["profiles"][0]
    profile["rules"]["kb"]["maxItems"] = kb_max_items
    return compile_workspace(document), case["request"]


def test_ranking__items_beyond_max_items__ranked_after_the_units_with_their_scores():
    compiled, request = case_01(kb_max_items=1)

    ranking = compiled.ranking(request, "kb")
    resolution = compiled.resolve(request)

    kb = next(record for record in resolution["layers"] if record["layer"] == "kb")
    units = [item["item"] for item in kb["materialized"]["items"]]
    beyond = [
        ref["item"]
        for ref in kb["materialized"]["references"]
        if ref["reason"] == "BEYOND_MAX_ITEMS"
    ]
    assert beyond, "the case must cut an item by maxItems"
    assert [entry["item"] for entry in ranking] == units + beyond
    assert [entry["rank"] for entry in ranking] == list(range(1, len(ranking) + 1))
    scores = [entry["score"] for entry in ranking]
    assert scores == sorted(scores, reverse=True) and scores[-1] > 0
    assert ranking[0]["score"] == kb["materialized"]["items"][0]["score"]
    assert ranking[0]["matchedTerms"] == kb["materialized"]["items"][0]["matchedTerms"]
    assert all(entry["matchedTerms"] for entry in ranking)


def test_ranking__resolution_unchanged_and_summary_request__same_full_ranking():
    compiled, request = case_01(kb_max_items=1)
    before = compiled.resolve(request)

    full = compiled.ranking(request, "kb")
    summary = compiled.ranking({**request, "detail": "summary"}, "kb")

    assert summary == full
    assert compiled.resolve(request) == before


def test_ranking__omitted_or_unknown_layer__empty():
    compiled, request = case_01(kb_max_items=1)
    document = yaml.safe_load(CASE_01.read_text(encoding="utf-8"))["workspace"]
    document["profiles"][0]["rules"]["kb"]["participation"] = "exclude"

    assert compile_workspace(document).ranking(request, "kb") == []
    assert compiled.ranking(request, "no-such-layer") == []


def test_ranking__some_paths__only_their_entries_with_the_full_ranks():
    compiled, request = case_01(kb_max_items=1)
    full = compiled.ranking(request, "kb")
    last, first = full[-1]["item"], full[0]["item"]

    some = compiled.ranking(request, "kb", paths=[last, "kb/no-such-item.md", first])

    assert some == [full[0], full[-1]]

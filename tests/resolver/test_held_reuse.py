"""What a compiled workspace keeps between resolutions changes no answer (issue 35).

Inline unit texts that do not depend on the request are rendered once per index and
rendering (``resolver.engine.share_texts``); a summary ranks only the hits above a sampled
threshold (``resolver.engine.rank_hits``). Each test compares a workspace that has answered
other requests first with a fresh one, or the shortcut with the plain ranking.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resolver import compile_workspace
from resolver.engine import SCORE_SAMPLE, rank_by_score, rank_hits
from resolver.report import json_text


def policies_document(*, facets, include_dates: bool, on_stale: str = "warn") -> dict:
    items = [
        {
            "path": f"p{n:02d}",
            "title": f"Policy {n}",
            "body": f"Refunds take {n} days.\n\nCards and wallets rule {n}.",
            "metadata": {"updated": f"2026-0{1 + n % 9}-15", "status": "on"},
        }
        for n in range(12)
    ]
    items[3]["metadata"].pop("updated")  # undated: UNKNOWN once currentness is assessed
    return {
        "version": 1,
        "consumers": [
            {"key": "md", "render": {"format": "markdown", "includeCurrentness": include_dates}},
            {"key": "xml", "render": {"format": "xml", "includeCurrentness": include_dates}},
        ],
        "layers": [{"key": "policies", "name": "Policies", "items": items}],
        "profiles": [
            {
                "key": consumer,
                "consumer": consumer,
                "objective": "o",
                "budget": 600,
                "rules": {
                    "policies": {
                        "participation": "include",
                        "mode": "inline",
                        "facets": facets,
                        "currentness": {
                            "maxAgeDays": 120,
                            "onStale": on_stale,
                            "onUnknown": "warn",
                        },
                    }
                },
            }
            for consumer in ("md", "xml")
        ],
    }


REQUESTS = [
    {"profile": profile, "input": {"message": message}, "now": now, "detail": detail}
    for profile in ("md", "xml")
    for message in ("refunds cards", "wallets rule")
    # Early in the year no policy is stale yet (texts shared); later some are (markers).
    for now in ("2026-01-20T00:00:00Z", "2026-10-01T00:00:00Z", "2026-01-20T00:00:00Z")
    for detail in ("full", "summary")
]


@pytest.mark.parametrize("include_dates", [False, True])
@pytest.mark.parametrize(
    "facets", [["summary"], ["body", "meta.status"], ["excerpt", "summary"], ["meta.status"]]
)
def test_unit_texts__reused_workspace__every_answer_as_a_fresh_one(facets, include_dates):
    # Given one workspace answering every request in turn (texts kept between them)
    document = policies_document(facets=facets, include_dates=include_dates)
    reused = compile_workspace(document)
    for request in REQUESTS:
        # When it resolves, and a freshly compiled workspace resolves the same request
        answer = reused.resolve_json(request).data
        fresh = compile_workspace(document).resolve(request)

        # Then the bytes are the same
        assert answer == json_text(fresh).encode(), request


def test_unit_texts__warned_items__marked_even_after_being_shared_unmarked():
    document = policies_document(facets=["summary"], include_dates=False)
    compiled = compile_workspace(document)
    early = REQUESTS[0]
    late = {**early, "now": "2026-10-01T00:00:00Z"}

    first = compiled.resolve(early)["output"]["text"]
    second = compiled.resolve(late)["output"]["text"]

    assert "Not current (updated 2026-01-15" not in first
    assert "Not current (updated 2026-01-15" in second


def test_unit_texts__shared_per_format__each_format_its_own_texts():
    document = policies_document(facets=["body"], include_dates=True, on_stale="exclude")
    compiled = compile_workspace(document)
    request = {"profile": "md", "input": {"message": "x"}, "now": "2026-01-20T00:00:00Z"}

    markdown = compiled.resolve(request)["output"]["text"]
    xml = compiled.resolve({**request, "profile": "xml"})["output"]["text"]

    assert markdown.startswith("## Policies") and "<item" not in markdown
    assert xml.startswith("<context>") and "### " not in xml


scores_st = st.lists(
    st.one_of(st.just(0.0), st.sampled_from([0.5, 1.25, 2.0]), st.floats(0.01, 30.0)),
    min_size=1,
    max_size=6 * SCORE_SAMPLE,
)


@settings(max_examples=60, deadline=None)
@given(scores_st, st.integers(1, 3000), st.randoms(use_true_random=False))
def test_rank_hits__any_scores__the_ranking_of_every_hit(values, needed, rng):
    # Given scores with many ties, zeros (no hit) and a path order of the slots
    scores = np.array(values, dtype=np.float64)
    hit = scores != 0
    order = list(range(len(scores)))
    rng.shuffle(order)
    path_rank = np.array(order, dtype=np.intp)

    # When the hits are ranked through the sampled threshold
    ranked = rank_hits(scores, hit, int(np.count_nonzero(hit)), needed, path_rank)

    # Then it is the ranking of all hits by score descending, then path rank
    expected = sorted(np.flatnonzero(hit).tolist(), key=lambda i: (-scores[i], order[i]))
    assert ranked.tolist() == expected[:needed]
    assert ranked.tolist() == rank_by_score(np.flatnonzero(hit), scores, needed, path_rank).tolist()


def test_rank_hits__large_layer_few_needed__takes_the_sampled_shortcut(monkeypatch):
    rng = np.random.default_rng(3)
    scores = np.where(rng.random(100_000) < 0.3, rng.integers(1, 400, 100_000) / 7, 0.0)
    hit = scores != 0
    path_rank = rng.permutation(100_000).astype(np.intp)
    listed = []
    flatnonzero = np.flatnonzero

    def counting(mask):
        listed.append(int(np.count_nonzero(mask)))
        return flatnonzero(mask)

    monkeypatch.setattr(np, "flatnonzero", counting)
    ranked = rank_hits(scores, hit, int(np.count_nonzero(hit)), 400, path_rank)
    monkeypatch.undo()

    expected = rank_by_score(np.flatnonzero(hit), scores, 400, path_rank)
    assert ranked.tolist() == expected.tolist()
    assert listed and max(listed) < 10_000, "every hit was listed"

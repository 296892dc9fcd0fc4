"""Smoke test of the benchmark: the builders are deterministic, the quick run reports every
row, and each peer computes what the resolver computes (so its timings compare).

Needs the optional ``bench`` dependency group; skipped when the peers are not installed.
"""

import json

import pytest

pytest.importorskip("numpy")
pytest.importorskip("bm25s")
pytest.importorskip("rank_bm25")
pytest.importorskip("priompt")

from tests.perf import bench, workloads

EXPECTED_ROWS = {
    "retrieve-vs-bm25s",
    "retrieve-vs-rank-bm25",
    "retrieve-summary-vs-bm25s",
    "retrieve-summary-bytes",
    "retrieve-dict",
    "retrieve-dict-dumped",
    "fit-2000-vs-priompt",
    "fit-8000-vs-priompt",
    "fit-32000-vs-priompt",
    "scaling-retrieve",
    "scaling-inline",
    "compile-per-10k",
    "compile-large-per-10k",
    "cold-per-10k",
    "cold-large-per-10k",
    "live-preview",
    *(
        f"incremental-{row}-{count}"
        for row in (
            "edit",
            "delete",
            "first-resolve",
            "compile-profiles",
            "compile-layer",
            "first-after-compile",
            "warm-resolve",
        )
        for count in bench.QUICK.incremental_items
    ),
}


def test_generate_items__same_seed__same_items_and_longer_runs_extend_shorter_ones():
    first = workloads.generate_items(60)

    assert workloads.generate_items(60) == first
    assert workloads.generate_items(90)[:60] == first
    assert workloads.generate_items(60, seed=workloads.SEED + 1) != first


def test_generate_items__bodies__hold_40_to_120_words_in_paragraphs():
    items = workloads.generate_items(200)

    word_counts = [len(item["body"].split()) for item in items]
    assert min(word_counts) >= 40
    assert max(word_counts) <= 120
    assert any("\n\n" in item["body"] for item in items)
    assert [item["path"] for item in items] == sorted(item["path"] for item in items)


def test_benchmark_query__six_words__every_term_occurs_in_the_corpus():
    items = workloads.generate_items(2_000)
    vocabulary = {token for tokens in bench.corpus_tokens(items) for token in tokens}

    terms = bench.query_terms(workloads.benchmark_query())

    assert len(terms) == 6
    assert set(terms) <= vocabulary


def test_retrieve_ranking__small_corpus__equals_bm25s_and_rank_bm25_paths_and_scores():
    # Given a layer of 400 items, tokenized for the peers with SPEC §5's tokenizer
    items = workloads.generate_items(400)
    message = workloads.benchmark_query()
    documents = bench.corpus_tokens(items)
    terms = bench.query_terms(message)
    compiled = bench.compile_workspace(workloads.pool_workspace(items, max_items=25))

    # When the resolver retrieves its top 25 and each peer ranks the whole layer
    ours = bench.our_top(compiled.resolve(workloads.request("retrieve", message)))

    # Then the peers rank the same items in the same order, with the same scores
    assert len(ours) == 25
    for peer in (bench.Bm25sPeer(documents, terms), bench.RankBm25Peer(documents, terms)):
        theirs = bench.peer_top(peer, items, len(ours))
        assert [path for path, _ in theirs] == [path for path, _ in ours], peer.name
        for (_, score), (_, peer_score) in zip(ours, theirs, strict=True):
            assert score == pytest.approx(peer_score, abs=1e-6), peer.name


@pytest.mark.parametrize("budget", [300, 1_000, 4_000])
def test_fit__small_layered_workspace__resolver_output_equals_priompt_render(budget):
    layers = workloads.layered_layers(layer_count=3, items_per_layer=20)
    compiled = bench.compile_workspace(workloads.layered_workspace(layers, budgets=[budget]))
    peer = bench.PriomptPeer(workloads.layered_markdown_units(layers))

    resolution = compiled.resolve(workloads.request(f"fit-{budget}"))

    admitted = sum(len(layer["rendered"]["items"]) for layer in resolution["layers"])
    assert 0 < admitted < 60
    assert resolution["output"]["text"] == peer.render(budget)


def test_bench_main__quick__prints_every_row_and_the_sanity_checks_hold(tmp_path, capsys):
    figures = tmp_path / "figures.json"

    exit_code = bench.main(["--quick", "--json", str(figures)])

    printed = capsys.readouterr().out
    report = json.loads(figures.read_text(encoding="utf-8"))
    assert exit_code == 0
    assert {row["id"] for row in report["rows"]} == EXPECTED_ROWS
    for row in report["rows"]:
        assert row["label"] in printed
        assert row["ours_ns"] > 0
    for peer in ("bm25s", "rank-bm25", "priompt"):
        assert f"  {peer}  " in printed
    assert printed.count("PASS") + printed.count("MISS") == 9
    assert report["checks"]
    assert all(report["checks"].values()), report["checks"]

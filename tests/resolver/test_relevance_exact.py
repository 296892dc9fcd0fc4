"""The vectorized engine stays exact: BM25 bit for bit (SPEC §5), orders and summaries (§4.5, §7.1).

The engine scores with numpy arrays and ranks with partial selections; these properties
compare it with the spec's sequential arithmetic written out plainly, on generated corpora.
"""

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resolver import compile_workspace
from resolver.engine import sorted_order
from resolver.index import LayerIndex
from resolver.text import query_terms, tokenize
from resolver.validation import build_workspace
from tests.resolver.test_summary import summary_of

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
VOCABULARY = "refund refunds card wallet login invoice dispute order late arrived the my".split()
words = st.lists(st.sampled_from(VOCABULARY), max_size=12).map(" ".join)


def sequential_bm25(documents: list[str], corpus: list[int], terms) -> dict[int, float]:
    """SPEC §5 as written: per document, the sum over query terms in query order."""
    tokens = {i: tokenize(documents[i]) for i in corpus}
    n = len(corpus)
    total = sum(len(tokens[i]) for i in corpus)
    if not terms or not n or total == 0:
        return {}
    avgdl = total / n
    scores = {}
    for i in corpus:
        score, matched = 0.0, False
        for term in terms:
            tf = tokens[i].count(term)
            if tf == 0:
                continue
            df = sum(1 for j in corpus if term in tokens[j])
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            score += idf * tf * (1.2 + 1) / (tf + 1.2 * (1 - 0.75 + 0.75 * len(tokens[i]) / avgdl))
            matched = True
        if matched:
            scores[i] = score
    return scores


def layer_document(items):
    return {
        "consumers": [{"key": "assistant"}],
        "layers": [{"key": "kb", "items": items}],
        "profiles": [{"key": "p", "consumer": "assistant", "objective": "o", "budget": 1}],
    }


@SETTINGS
@given(
    st.lists(st.tuples(words, words), min_size=1, max_size=40),
    words,
    st.data(),
)
def test_bm25__any_corpus_and_query__bit_identical_to_the_sequential_sum(texts, message, data):
    items = [{"path": f"d{n:03d}", "title": t, "body": b} for n, (t, b) in enumerate(texts)]
    workspace, issues = build_workspace(layer_document(items), first_only=True)
    assert not issues
    index = LayerIndex(workspace.layers[0])
    corpus = sorted(data.draw(st.sets(st.integers(0, len(items) - 1), min_size=1)))
    terms = query_terms(message)
    documents = [f"{item['title']}\n{item['body']}" for item in items]

    for chosen in (list(range(len(items))), corpus):
        scores, hit = index.bm25(terms, np.array(chosen, dtype=np.intp))
        expected = sequential_bm25(documents, chosen, terms)

        assert {i for i in range(len(items)) if hit[i]} == set(expected)
        assert {i: float(scores[i]) for i in expected} == expected  # exact, not approximate


@SETTINGS
@given(
    st.integers(20, 400),
    st.integers(0, 30),
    st.integers(1, 2000),
    st.sampled_from(["retrieve", "inline"]),
    st.sampled_from([None, "relevance", "recency", "path"]),
    st.randoms(use_true_random=False),
)
def test_summary__large_layer__equals_the_summary_derived_from_the_full_resolution(
    size, max_items, budget, mode, order, rng
):
    # Given a layer large enough for the partial ranking of a summary to apply
    items = [
        {
            "path": f"doc-{rng.randrange(10**6):06d}-{n}",
            "title": " ".join(rng.choices(VOCABULARY, k=rng.randrange(1, 4))),
            "body": " ".join(rng.choices(VOCABULARY, k=rng.randrange(0, 10))),
            "metadata": {"updated": f"2026-{rng.randrange(1, 13):02d}-01"}
            if rng.random() < 0.8
            else {},
        }
        for n in range(size)
    ]
    document = layer_document(items)
    rule = {"mode": mode, "maxItems": max_items}
    if order is not None:
        rule["order"] = order
    document["profiles"][0].update(budget=budget, rules={"kb": rule})
    workspace = compile_workspace(document)
    request = {"profile": "p", "input": {"message": "refund card late"}, "now": "2026-11-29"}

    full = workspace.resolve(request)
    summary = workspace.resolve({**request, "detail": "summary"})

    assert summary == summary_of(full)


@SETTINGS
@given(
    st.lists(st.tuples(words, words), min_size=1, max_size=30),
    words,
    st.integers(1, 70),
)
def test_matched_terms__any_query_length__the_query_terms_each_item_contains(
    texts, message, filler
):
    # Given a query that may have more distinct terms than the per-item term bits hold (64)
    message = " ".join([message, *(f"zq{n}x" for n in range(filler))])
    items = [{"path": f"d{n:03d}", "title": t, "body": b} for n, (t, b) in enumerate(texts)]
    items.append({"path": "zz", "title": "fill", "body": message})
    document = layer_document(items)
    document["profiles"][0]["budget"] = 100_000
    document["profiles"][0]["rules"] = {"kb": {"mode": "retrieve", "participation": "include"}}
    terms = query_terms(message)

    # When it is resolved
    resolution = compile_workspace(document).resolve(
        {"profile": "p", "input": {"message": message}, "now": "2026-11-29"}
    )

    # Then each retrieved item lists the query terms it contains, in query order
    documents = {item["path"]: f"{item['title']}\n{item['body']}" for item in items}
    listed = resolution["layers"][0]["materialized"]["items"]
    assert listed
    for record in listed:
        tokens = set(tokenize(documents[record["item"]]))
        assert record["matchedTerms"] == [term for term in terms if term in tokens]


@SETTINGS
@given(
    st.lists(st.integers(-3, 3) | st.integers(-(2**62), 2**62), max_size=80),
    st.booleans(),
    st.randoms(use_true_random=False),
)
def test_sorted_order__keys_with_ties__the_order_of_a_stable_sort_by_key_then_tie(
    keys, own_tie, random
):
    keys = np.array(keys, dtype=np.int64)
    if own_tie:
        tie = np.array(random.sample(range(3 * len(keys) + 1), len(keys)), dtype=np.int64)
        expected = np.lexsort((tie, keys))
    else:
        tie, expected = None, np.argsort(keys, kind="stable")
    assert sorted_order(keys, tie).tolist() == expected.tolist()

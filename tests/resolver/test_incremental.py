"""Incremental recompile: a workspace changed item by item resolves as one compiled from scratch.

``CompiledWorkspace.with_layer_changes`` patches one layer's index (postings, lengths,
dates, filters, shared records) instead of re-indexing it, and ``compile_workspace`` reuses
unchanged layers by the caller's content token. Both must be invisible in every resolution.
"""

import copy
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resolver import WorkspaceError, compile_workspace
from tests.resolver.strategies import SEEDS, random_item, scenarios

SETTINGS = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


PROBES = {
    "probe-retrieve": {"participation": "include", "mode": "retrieve", "maxItems": 2},
    "probe-recency": {
        "participation": "include",
        "order": "recency",
        "facets": ["summary", "excerpt", "meta.updated"],
        "currentness": {"maxAgeDays": 100, "onStale": "warn", "onUnknown": "warn"},
    },
    "probe-on-demand": {"participation": "include", "mode": "on-demand", "maxTokens": 40},
}


def with_probes(document, layer_key):
    """Add profiles that select the layer in several ways, so every index part is used."""
    probed = copy.deepcopy(document)
    consumer = probed["consumers"][0]["key"]
    for key, rule in PROBES.items():
        probed["profiles"].append(
            {
                "key": key,
                "consumer": consumer,
                "objective": key,
                "budget": 300,
                "rules": {layer_key: rule},
            }
        )
    return probed


def requests(scenario):
    """Yield the scenario's request and the probes', full and summary, with two messages."""
    for profile in (None, *PROBES):
        for detail in ("full", "summary"):
            for message in (scenario.request.get("input") or {}).get("message"), "refund card":
                request = {**scenario.request, "detail": detail}
                if profile is not None:
                    for name in ("profile", "consumer", "objective", "environment"):
                        request.pop(name, None)
                    request["profile"] = profile
                request["input"] = {**(scenario.request.get("input") or {}), "message": message}
                yield request


def changed_document(document, layer_index, deletes, upserts):
    changed = copy.deepcopy(document)
    layer = changed["layers"][layer_index]
    layer["items"] = [item for item in layer["items"] if item["path"] not in deletes]
    for upsert in upserts:
        position = next(
            (n for n, item in enumerate(layer["items"]) if item["path"] == upsert["path"]), None
        )
        if position is None:
            layer["items"].append(upsert)
        else:
            layer["items"][position] = upsert
    return changed


@SETTINGS
@given(scenarios(), st.data())
def test_with_layer_changes__any_edit__resolves_like_a_compile_from_scratch(scenario, data):
    # Given a compiled workspace, resolved once (indexes are built lazily), and a random
    # edit of one of its layers
    layer_index = data.draw(st.integers(0, len(scenario.document["layers"]) - 1))
    layer = scenario.document["layers"][layer_index]
    document = with_probes(scenario.document, layer["key"])
    workspace = compile_workspace(document)
    for request in requests(scenario):
        workspace.resolve(request)
    paths = [item["path"] for item in layer["items"]]
    deletes = data.draw(st.lists(st.sampled_from(paths), unique=True)) if paths else []
    rng = random.Random(data.draw(SEEDS))
    edited = data.draw(st.lists(st.sampled_from(paths), unique=True)) if paths else []
    upserts = [{**random_item(rng, "x", "zqx"), "path": path} for path in edited]
    upserts += [random_item(rng, f"new{n}", "zqnx") for n in range(data.draw(st.integers(0, 3)))]

    # When it is applied incrementally
    patched = workspace.with_layer_changes(layer["key"], upsert=upserts, delete=deletes, token="t2")

    # Then every resolution equals that of the changed document compiled from scratch
    fresh = compile_workspace(changed_document(document, layer_index, set(deletes), upserts))
    for request in requests(scenario):
        assert patched.resolve(request) == fresh.resolve(request)
    assert patched.layer_tokens[layer["key"]] == "t2"


def test_with_layer_changes__invalid_item__raises_with_its_path_and_changes_nothing():
    workspace = compile_workspace(small_document())
    before = workspace.resolve(REQUEST)

    with pytest.raises(WorkspaceError) as raised:
        workspace.with_layer_changes("kb", upsert=[{"path": "b", "title": "x\x00"}])

    assert raised.value.path == "layers[0].items[1].title"
    assert workspace.resolve(REQUEST) == before


def test_with_layer_changes__unknown_path_deleted__raises():
    workspace = compile_workspace(small_document())

    with pytest.raises(WorkspaceError) as raised:
        workspace.with_layer_changes("kb", delete=["nope"])

    assert raised.value.path == "layers[0].items"


def test_with_layer_changes__other_layers__shared_as_the_same_objects():
    document = small_document()
    document["layers"].append({"key": "notes", "items": [{"path": "n", "body": "refund"}]})
    workspace = compile_workspace(document)

    patched = workspace.with_layer_changes("kb", upsert=[{"path": "c", "body": "card refund"}])

    assert patched.workspace.layers[1] is workspace.workspace.layers[1]
    assert patched.indexes[1] is workspace.indexes[1]
    assert patched.workspace.profiles is workspace.workspace.profiles


def test_compile_workspace__same_token__reuses_the_layer_object_and_its_index():
    document = small_document()
    first = compile_workspace(document, tokens={"kb": 1})
    changed = copy.deepcopy(document)
    changed["profiles"][0]["budget"] = 50

    second = compile_workspace(changed, previous=first, tokens={"kb": 1})
    draft = second.with_profile_draft("p", budget=70)

    assert second.workspace.layers[0] is first.workspace.layers[0]
    assert second.indexes[0] is first.indexes[0]
    assert draft.indexes[0] is first.indexes[0]
    assert draft.workspace.layers[0] is first.workspace.layers[0]


def test_compile_workspace__new_token__indexes_the_layer_again():
    document = small_document()
    first = compile_workspace(document, tokens={"kb": 1})
    changed = copy.deepcopy(document)
    changed["layers"][0]["items"][0]["body"] = "wallet"

    second = compile_workspace(changed, previous=first, tokens={"kb": 2})

    assert second.indexes[0] is not first.indexes[0]
    assert second.resolve(REQUEST) == compile_workspace(changed).resolve(REQUEST)


def test_compile_workspace__no_tokens_and_equal_layer__reuses_the_layer_object():
    first = compile_workspace(small_document())

    second = compile_workspace(small_document(), previous=first)

    assert second.workspace.layers[0] is first.workspace.layers[0]
    assert second.indexes[0] is first.indexes[0]


REQUEST = {"profile": "p", "input": {"message": "refund"}, "now": "2026-11-29"}


def small_document():
    return {
        "consumers": [{"key": "assistant"}],
        "layers": [
            {
                "key": "kb",
                "items": [
                    {"path": "a", "title": "Refunds", "body": "Refund to the card."},
                    {"path": "b", "title": "Wallet", "body": "Wallet refunds are instant."},
                ],
            }
        ],
        "profiles": [
            {
                "key": "p",
                "consumer": "assistant",
                "objective": "o",
                "budget": 100,
                "rules": {"kb": {"mode": "retrieve"}},
            }
        ],
    }

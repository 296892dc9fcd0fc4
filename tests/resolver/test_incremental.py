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

from resolver import ResolverError, WorkspaceError, compile_workspace
from tests.resolver.strategies import LAYER_KEYS, SEEDS, layers, random_item, rules, scenarios

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


@settings(SETTINGS, max_examples=50)
@given(scenarios(), st.data())
def test_incremental_edits__a_sequence__resolves_like_a_compile_from_scratch(scenario, data):
    # Given a compiled workspace, resolved once so that its indexes are built
    document = with_probes(scenario.document, scenario.document["layers"][0]["key"])
    workspace = compile_workspace(document, tokens={"unused": 0})
    for request in requests(scenario):
        workspace.resolve(request)
    rng = random.Random(data.draw(SEEDS))
    # When edits follow one another, each applied either by with_layer_changes or by a
    # compile of the changed document with the last compilation as previous (items deleted
    # leave empty slots, which later edits meet, until a compaction)
    for step in range(data.draw(st.integers(1, 6))):
        layer_index = data.draw(st.integers(0, len(document["layers"]) - 1))
        layer = document["layers"][layer_index]
        paths = [item["path"] for item in layer["items"]]
        deletes = data.draw(st.lists(st.sampled_from(paths), unique=True)) if paths else []
        edited = data.draw(st.lists(st.sampled_from(paths), unique=True)) if paths else []
        upserts = [{**random_item(rng, "x", f"zq{step}x"), "path": path} for path in edited]
        upserts += [
            random_item(rng, f"new{step}-{n}", f"zq{step}nx")
            for n in range(data.draw(st.integers(0, 3)))
        ]
        changed = changed_document(document, layer_index, set(deletes), upserts)
        if data.draw(st.booleans()):
            workspace = workspace.with_layer_changes(
                layer["key"], upsert=upserts, delete=deletes, token=f"t{step}"
            )
        else:
            token = data.draw(st.sampled_from([None, f"t{step}"]))
            workspace = compile_workspace(changed, previous=workspace, tokens={layer["key"]: token})
        document = changed

        # Then each step resolves as the changed document compiled from scratch
        fresh = compile_workspace(document)
        assert workspace.workspace == fresh.workspace
        for request in requests(scenario):
            assert workspace.resolve(request) == fresh.resolve(request)


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


# -- compile_workspace(previous=, tokens=) -------------------------------------------------


def outcome(workspace, request):
    """Return the resolution, or the error's wire shape (a changed document may refuse it)."""
    try:
        return workspace.resolve(request)
    except ResolverError as error:
        return error.as_dict()


def compiled_or_error(document, **options):
    try:
        return compile_workspace(document, **options), None
    except WorkspaceError as error:
        return None, (error.path, str(error))


def rename_rules(document, old, new):
    """Move every profile's rule for layer ``old`` to ``new`` (drop it when ``new`` is None)."""
    for profile in document["profiles"]:
        ruled = profile.get("rules") or {}
        if old in ruled:
            rule = ruled.pop(old)
            if new is not None:
                ruled[new] = rule


def change_profile(document, data, rng):
    profile = data.draw(st.sampled_from(document["profiles"]))
    profile["budget"] = data.draw(st.integers(1, 3000))
    keys = [layer["key"] for layer in document["layers"]]
    if keys and data.draw(st.booleans()):
        profile.setdefault("rules", {})[data.draw(st.sampled_from(keys))] = data.draw(rules())
    return set()


def change_consumer(document, data, rng):
    consumer = data.draw(st.sampled_from(document["consumers"]))
    render = consumer.setdefault("render", {})
    render["format"] = "xml" if render.get("format") != "xml" else "markdown"
    render["includeCurrentness"] = not render.get("includeCurrentness")
    return set()


def change_layer_fields(document, data, rng):
    layer = data.draw(st.sampled_from(document["layers"]))
    layer["name"] = data.draw(st.sampled_from(["Renamed", "", " Other \n name"]))
    layer["availability"] = data.draw(st.sampled_from(["auto", "unavailable", "unknown"]))
    return {layer["key"]}


def change_items(document, data, rng):
    layer = data.draw(st.sampled_from(document["layers"]))
    items = layer["items"]
    if items and data.draw(st.booleans()):
        del items[data.draw(st.integers(0, len(items) - 1))]
    if items and data.draw(st.booleans()):
        at = data.draw(st.integers(0, len(items) - 1))
        items[at] = {**random_item(rng, "x", "zqex"), "path": items[at]["path"]}
    if data.draw(st.booleans()):
        items.append(random_item(rng, "new", "zqnx"))
    return {layer["key"]}


def rename_layer(document, data, rng):
    layer = data.draw(st.sampled_from(document["layers"]))
    taken = {entry["key"] for entry in document["layers"]}
    new = next(key for key in (*LAYER_KEYS, "renamed") if key not in taken)
    rename_rules(document, layer["key"], new)
    layer["key"] = new
    return {new}


def delete_layer(document, data, rng):
    layer = data.draw(st.sampled_from(document["layers"]))
    document["layers"].remove(layer)
    rename_rules(document, layer["key"], None)
    return set()


def add_layer(document, data, rng):
    taken = {entry["key"] for entry in document["layers"]}
    new = next(key for key in (*LAYER_KEYS, "added") if key not in taken)
    counter = iter(range(5_000, 6_000))
    document["layers"].insert(
        data.draw(st.integers(0, len(document["layers"]))), data.draw(layers(new, counter))
    )
    return {new}


def move_layer(document, data, rng):
    layer = document["layers"].pop(data.draw(st.integers(0, len(document["layers"]) - 1)))
    document["layers"].insert(data.draw(st.integers(0, len(document["layers"]))), layer)
    return set()


def rule_for_missing_layer(document, data, rng):
    profile = data.draw(st.sampled_from(document["profiles"]))
    profile.setdefault("rules", {})["missing"] = {"mode": "inline"}
    return set()


def duplicate_layer(document, data, rng):
    document["layers"].append(copy.deepcopy(data.draw(st.sampled_from(document["layers"]))))
    return set()


CHANGES = [
    change_profile,
    change_consumer,
    change_layer_fields,
    change_items,
    rename_layer,
    delete_layer,
    add_layer,
    move_layer,
    rule_for_missing_layer,
    duplicate_layer,
]


@SETTINGS
@given(scenarios(), st.data())
def test_compile_workspace__previous_and_tokens__equals_a_compile_from_scratch(scenario, data):
    # Given a workspace compiled with content tokens for some of its layers (not all: mixed
    # reuse by token and by comparison), resolved once so that its indexes are built
    probed_key = scenario.document["layers"][0]["key"]
    document = with_probes(scenario.document, probed_key)
    tokens = {
        layer["key"]: f"{layer['key']}-1"
        for layer in document["layers"]
        if data.draw(st.booleans())
    }
    first = compile_workspace(document, tokens=tokens)
    for request in requests(scenario):
        first.resolve(request)

    # When the document changes (one to three changes of any kind) and is compiled with the
    # first compilation as ``previous``; a changed layer gets a new token or none, an
    # unchanged one keeps its token, loses it or gets a new one
    changed = copy.deepcopy(document)
    rng = random.Random(data.draw(SEEDS))
    touched = set()
    for change in data.draw(st.lists(st.sampled_from(CHANGES), min_size=1, max_size=3)):
        if changed["layers"] or change in (change_profile, change_consumer, add_layer):
            touched |= change(changed, data, rng)
    new_tokens = {}
    for layer in changed["layers"]:
        key = layer["key"]
        choices = [None, f"{key}-2"]
        if key not in touched and key in tokens:
            choices.append(tokens[key])
        new_tokens[key] = data.draw(st.sampled_from(choices))
    second, error = compiled_or_error(changed, previous=first, tokens=new_tokens)

    # Then it equals the changed document compiled from scratch: the same first error, or
    # the same workspace and the same resolutions
    fresh, fresh_error = compiled_or_error(changed)
    assert error == fresh_error
    if fresh is None:
        return
    assert second.workspace == fresh.workspace
    for request in requests(scenario):
        assert outcome(second, request) == outcome(fresh, request)
    assert second.layer_tokens == {
        key: token for key, token in new_tokens.items() if token is not None
    }


def test_compile_workspace__same_token__does_not_read_the_layer_entry_again():
    # Given a compilation whose layer "kb" has token 1
    document = small_document()
    first = compile_workspace(document, tokens={"kb": 1})
    # When the profiles change and the layer entry is (wrongly) changed under the same token
    changed = copy.deepcopy(document)
    changed["profiles"][0]["budget"] = 50
    changed["layers"][0]["items"][0]["title"] = "x\x00"  # would be refused if it were read

    second = compile_workspace(changed, previous=first, tokens={"kb": 1})

    # Then the earlier layer is used as it was: the token is the caller's promise
    assert second.workspace.layers[0] is first.workspace.layers[0]
    assert second.workspace.profiles[0].budget == 50
    with pytest.raises(WorkspaceError):
        compile_workspace(changed, previous=first, tokens={"kb": 2})


def test_compile_workspace__metadata_equal_only_by_eq__builds_the_item_again():
    # Given a layer (no token) whose item matches an itemFilter by region "true"
    document = small_document()
    document["layers"][0]["itemFilter"] = {"region": "region"}
    document["layers"][0]["items"][0]["metadata"] = {"region": True}
    request = {**REQUEST, "input": {"message": "refund", "region": "true"}}
    first = compile_workspace(document)
    first.resolve(request)
    # When the value becomes 1, which == True but is the canonical string "1"
    changed = copy.deepcopy(document)
    changed["layers"][0]["items"][0]["metadata"] = {"region": 1}

    second = compile_workspace(changed, previous=first)

    # Then the item is built again: nothing matches any more, as from scratch
    assert second.resolve(request) == compile_workspace(changed).resolve(request)
    assert second.resolve(request)["layers"][0]["applicable"]["state"] == "NOT_APPLICABLE"


def test_compile_workspace__one_item_changed__keeps_the_other_item_objects():
    document = small_document()
    first = compile_workspace(document, tokens={"kb": 1})
    first.resolve(REQUEST)
    changed = copy.deepcopy(document)
    changed["layers"][0]["items"][0]["body"] = "Refund to the wallet."

    second = compile_workspace(changed, previous=first, tokens={"kb": 2})

    assert second.workspace.layers[0].items[1] is first.workspace.layers[0].items[1]
    assert second.workspace.layers[0].items[0] is not first.workspace.layers[0].items[0]
    assert second.resolve(REQUEST) == compile_workspace(changed).resolve(REQUEST)


def test_with_layer_changes__items_deleted_one_by_one__empty_slots_stay_bounded():
    # Given a 40-item layer
    document = small_document()
    document["layers"][0]["items"] = [
        {"path": f"p{n:02}", "title": f"Refund {n}", "body": f"refund card {n}"} for n in range(40)
    ]
    workspace = compile_workspace(document)
    workspace.resolve(REQUEST)
    for n in range(30):
        # When its items are deleted one at a time
        workspace = workspace.with_layer_changes("kb", delete=[f"p{n:02}"])
        document["layers"][0]["items"].pop(0)

        # Then the index never holds more empty slots than a quarter of its slots (they
        # are compacted), and every resolution is that of the document from scratch
        index = workspace.indexes[0]
        assert 4 * (index.size - index.count) <= index.size
        assert workspace.resolve(REQUEST) == compile_workspace(document).resolve(REQUEST)


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

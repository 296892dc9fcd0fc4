"""Invariants of the resolver over generated workspaces and requests (SPEC §1, §4, §6, §7)."""

import copy
import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resolver import compile_workspace, validate_workspace
from tests.resolver.strategies import filtered_out_markers, scenarios

PROPERTY_SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# Properties that resolve several times per example run fewer examples, to keep the file fast.
MULTI_RESOLUTION_SETTINGS = settings(PROPERTY_SETTINGS, max_examples=75)
OVERFLOW_REASONS = {"BEYOND_MAX_ITEMS", "LAYER_TOKEN_LIMIT"}


def resolve(scenario, document=None, request=None):
    workspace = compile_workspace(scenario.document if document is None else document)
    return workspace.resolve(scenario.request if request is None else request)


def as_json(resolution):
    return json.dumps(resolution, sort_keys=True, ensure_ascii=False)


def admitted_units(resolution):
    """Return every unit the budget admitted: content units and rendered overflow references."""
    units = {
        ("content", layer["layer"], item)
        for layer in resolution["layers"]
        for item in layer["rendered"]["items"]
    }
    units |= {
        ("overflow", reference["layer"], reference["item"])
        for reference in resolution["references"]
        if reference["rendered"] and reference["reason"] in OVERFLOW_REASONS
    }
    return units


def with_budget(document, profile_index, budget):
    changed = copy.deepcopy(document)
    changed["profiles"][profile_index]["budget"] = budget
    return changed


def shuffled(document, rng):
    """Return a copy of ``document`` whose unordered collections come in another order."""
    changed = copy.deepcopy(document)

    def reorder_mapping(mapping):
        keys = list(mapping)
        rng.shuffle(keys)
        return {key: mapping[key] for key in keys}

    rng.shuffle(changed["consumers"])
    rng.shuffle(changed["layers"])
    rng.shuffle(changed["profiles"])
    for layer in changed["layers"]:
        rng.shuffle(layer["items"])
        if "itemFilter" in layer:
            layer["itemFilter"] = reorder_mapping(layer["itemFilter"])
        for item in layer["items"]:
            item["metadata"] = reorder_mapping(item["metadata"])
    for profile in changed["profiles"]:
        profile["rules"] = reorder_mapping(profile["rules"])
    return changed


@PROPERTY_SETTINGS
@given(scenarios())
def test_generated_workspace__validated__has_no_issues(scenario):
    assert validate_workspace(scenario.document) == []


@PROPERTY_SETTINGS
@given(scenarios())
def test_resolution__any_request__estimate_within_budget_and_remaining_is_the_difference(scenario):
    resolution = resolve(scenario)

    budget = resolution["budget"]
    assert budget["estimatedTokens"] <= budget["limit"]
    assert budget["limit"] == scenario.document["profiles"][scenario.profile_index]["budget"]
    assert budget["remaining"] == budget["limit"] - budget["estimatedTokens"]


@PROPERTY_SETTINGS
@given(scenarios())
def test_output__any_request__estimate_is_ceil_of_a_quarter_of_its_length(scenario):
    resolution = resolve(scenario)

    output = resolution["output"]
    if resolution["status"] == "BLOCKED":
        assert output is None
        return
    text = output["text"]
    assert output["estimatedTokens"] == math.ceil(len(text) / 4)
    assert resolution["budget"]["estimatedTokens"] == output["estimatedTokens"]
    assert resolution["budget"]["characters"] == len(text)
    if not admitted_units(resolution):
        assert text == ""
    else:
        assert text.endswith("\n")


@PROPERTY_SETTINGS
@given(scenarios())
def test_status__any_request__blocked_exactly_when_there_are_blockers(scenario):
    resolution = resolve(scenario)

    assert (resolution["status"] == "BLOCKED") == bool(resolution["blockers"])
    if resolution["status"] == "RENDERING_INCOMPLETE":
        assert resolution["warnings"]
    if resolution["status"] == "RESOLVED":
        assert resolution["warnings"] == []
    assert sorted(layer["layer"] for layer in resolution["layers"]) == sorted(
        layer["key"] for layer in scenario.document["layers"]
    )


@PROPERTY_SETTINGS
@given(scenarios())
def test_budget_by_layer__any_request__matches_each_layers_admitted_block(scenario):
    resolution = resolve(scenario)

    by_layer = resolution["budget"]["byLayer"]
    admitting = {layer["layer"] for layer in resolution["layers"] if layer["rendered"]["items"]}
    assert set(by_layer) == admitting
    for layer in resolution["layers"]:
        rendered = layer["rendered"]
        if layer["layer"] in by_layer:
            entry = by_layer[layer["layer"]]
            assert entry["characters"] == rendered["characters"] > 0
            assert entry["estimatedTokens"] == math.ceil(entry["characters"] / 4)
        else:
            assert rendered["characters"] == 0
    if resolution["output"] is not None:
        assert sum(entry["characters"] for entry in by_layer.values()) <= len(
            resolution["output"]["text"]
        )


@PROPERTY_SETTINGS
@given(scenarios())
def test_item_filter__any_request__non_matching_items_appear_nowhere(scenario):
    resolution = resolve(scenario)

    hidden = filtered_out_markers(scenario)
    leaked_units = {
        unit
        for unit in admitted_units(resolution)
        | {("reference", ref["layer"], ref["item"]) for ref in resolution["references"]}
        if any(marker in unit[2] for marker in hidden)
    }
    assert leaked_units == set()
    text = as_json(resolution)
    assert [marker for marker in sorted(hidden) if marker in text] == []
    if resolution["output"] is not None:
        assert [m for m in sorted(hidden) if m in resolution["output"]["text"]] == []


@MULTI_RESOLUTION_SETTINGS
@given(scenarios(), st.integers(1, 5000), st.integers(1, 5000))
def test_admission__budget_raised__keeps_every_admitted_unit(scenario, first, second):
    low, high = sorted((first, second))
    index = scenario.profile_index

    at_low = resolve(scenario, document=with_budget(scenario.document, index, low))
    at_high = resolve(scenario, document=with_budget(scenario.document, index, high))

    assert admitted_units(at_low) <= admitted_units(at_high)
    assert at_low["budget"]["estimatedTokens"] <= at_high["budget"]["estimatedTokens"]


@MULTI_RESOLUTION_SETTINGS
@given(scenarios(), st.randoms(use_true_random=False))
def test_resolution__document_order_shuffled__gives_identical_json(scenario, rng):
    original = resolve(scenario)

    again = resolve(scenario)
    reordered = resolve(scenario, document=shuffled(scenario.document, rng))

    assert as_json(again) == as_json(original)
    assert as_json(reordered) == as_json(original)


@MULTI_RESOLUTION_SETTINGS
@given(scenarios())
def test_resolution__any_request__mutates_neither_document_nor_request(scenario):
    document_before = copy.deepcopy(scenario.document)
    request_before = copy.deepcopy(scenario.request)

    workspace = compile_workspace(scenario.document)
    first = workspace.resolve(scenario.request)
    expected = as_json(first)
    first["layers"].clear()
    first["budget"]["byLayer"].clear()
    second = workspace.resolve(scenario.request)

    assert scenario.document == document_before
    assert scenario.request == request_before
    assert as_json(second) == expected

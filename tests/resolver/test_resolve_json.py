"""``CompiledWorkspace.resolve_json``: the bytes the API and the CLI write, built without dicts.

Its bytes must be exactly ``json_text(resolve(request)).encode()`` — the serialization the
API and the CLI used before — for every request: the golden cases, random workspaces and
requests (full and summary), and workspaces changed incrementally (the JSON fragments are
patched with the rest of a layer's index).
"""

import dataclasses
import random
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resolver import EncodedResolution, RequestError, WorkspaceError, compile_workspace
from resolver.report import GROWING_FIELDS, json_text
from tests.resolver.strategies import SEEDS, random_item, scenarios

HERE = Path(__file__).parent
CASE_FILES = sorted((HERE / "conformance").glob("*.yaml")) + sorted((HERE / "cases").glob("*.yaml"))
CASES = {path.stem: yaml.safe_load(path.read_text(encoding="utf-8")) for path in CASE_FILES}
RESOLUTION_CASES = [name for name, case in CASES.items() if "error" not in case["expect"]]
ERROR_CASES = [name for name, case in CASES.items() if "error" in case["expect"]]
SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def assert_encoded_like_resolve(workspace, request):
    """Assert that resolve_json gives json_text(resolve()) and the resolution's head."""
    resolution = workspace.resolve(request)

    encoded = workspace.resolve_json(request)

    assert isinstance(encoded, EncodedResolution)
    assert encoded.data == json_text(resolution).encode()
    assert encoded.head == {
        name: value for name, value in resolution.items() if name not in GROWING_FIELDS
    }


@pytest.mark.parametrize("detail", ["full", "summary"])
@pytest.mark.parametrize("name", RESOLUTION_CASES)
def test_resolve_json__golden_case__bytes_equal_json_text_of_resolve(name, detail):
    case = CASES[name]
    workspace = compile_workspace(case["workspace"])

    assert_encoded_like_resolve(workspace, {**case["request"], "detail": detail})


@pytest.mark.parametrize("name", ERROR_CASES)
def test_resolve_json__golden_error_case__raises_the_error_of_resolve(name):
    case = CASES[name]

    with pytest.raises((WorkspaceError, RequestError)) as raised:
        compile_workspace(case["workspace"]).resolve_json(case["request"])

    error = raised.value.as_dict()["error"]
    assert {key: error[key] for key in case["expect"]["error"]} == case["expect"]["error"]


@SETTINGS
@given(scenarios(), st.sampled_from(["full", "summary"]))
def test_resolve_json__any_request__bytes_equal_json_text_of_resolve(scenario, detail):
    workspace = compile_workspace(scenario.document)
    request = {**scenario.request, "detail": detail}

    # Twice: the first call builds the fragments, the second reads them
    assert_encoded_like_resolve(workspace, request)
    assert_encoded_like_resolve(workspace, request)


@settings(SETTINGS, max_examples=60)
@given(scenarios(), st.data())
def test_resolve_json__after_incremental_edits__bytes_equal_json_text_of_resolve(scenario, data):
    # Given a workspace whose fragments are built (one resolve_json of each detail)
    workspace = compile_workspace(scenario.document)
    requests = [{**scenario.request, "detail": detail} for detail in ("full", "summary")]
    for request in requests:
        workspace.resolve_json(request)
    layer = data.draw(st.sampled_from(scenario.document["layers"]))
    paths = [item["path"] for item in layer["items"]]
    rng = random.Random(data.draw(SEEDS))

    # When items are deleted, edited (non-ASCII titles, quotes and all) and added
    deletes = data.draw(st.lists(st.sampled_from(paths), unique=True)) if paths else []
    edited = data.draw(st.lists(st.sampled_from(paths), unique=True)) if paths else []
    upserts = [{**random_item(rng, "x", "zqex"), "path": path} for path in edited]
    upserts += [random_item(rng, f'new "{n}" é', "zqnx") for n in range(2)]
    changed = workspace.with_layer_changes(layer["key"], upsert=upserts, delete=deletes)

    # Then the bytes are still those of json_text(resolve())
    for request in requests:
        assert_encoded_like_resolve(changed, request)


def test_resolve_json__large_retrieve_layer__bytes_equal_json_text_of_resolve():
    # Given a 3,000-item retrieve layer: thousands of references in two lists, runs of
    # consecutive items (taken as slices) and scattered ones (gathered)
    items = [
        {
            "path": f"doc-{n:05d}",
            "title": f'Item "{n}" — café\u2028',
            "body": "refund card" if n % 3 else "wallet",
            "metadata": {"updated": f"2026-{1 + n % 12:02d}-01"},
        }
        for n in range(3000)
    ]
    workspace = compile_workspace(
        {
            "consumers": [{"key": "assistant", "render": {"includeCurrentness": True}}],
            "layers": [{"key": "kb", "items": items}],
            "profiles": [
                {
                    "key": "answer",
                    "consumer": "assistant",
                    "objective": "answer-ticket",
                    "budget": 400,
                    "rules": {"kb": {"mode": "retrieve", "maxItems": 7}},
                }
            ],
        }
    )
    request = {"profile": "answer", "input": {"message": "refund"}, "now": "2026-11-29"}

    assert_encoded_like_resolve(workspace, request)
    assert len(workspace.resolve(request)["references"]) == 2993


def test_resolve_json__string_that_looks_like_a_list_placeholder__still_exact():
    # Given a profile whose name starts with U+0000 — refused by validation (SPEC §2.2), so
    # built here past it — which the encoder could mistake for a list placeholder
    case = CASES[RESOLUTION_CASES[0]]
    workspace = compile_workspace(case["workspace"])
    profile = workspace.resolve(case["request"])["profile"]["key"]
    tampered = workspace.with_profile_draft(profile)
    tampered.profiles[profile] = dataclasses.replace(tampered.profiles[profile], name="\x000")

    # Then the bytes are still json_text of the resolution (the encoder falls back)
    assert_encoded_like_resolve(tampered, case["request"])

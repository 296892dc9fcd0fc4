"""SPEC §7.1: a summary is the full resolution with the lists that grow with the layer cut.

The engine builds a summary directly (the cut lists are never built); these tests derive the
summary from the full resolution by the spec's wording and compare the two for equality.
"""

import copy
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from resolver import RequestError, WorkspaceError, cli, compile_workspace
from tests.resolver.strategies import scenarios

HERE = Path(__file__).parent
CASE_FILES = sorted((HERE / "conformance").glob("*.yaml")) + sorted((HERE / "cases").glob("*.yaml"))
CASES = {path.stem: yaml.safe_load(path.read_text(encoding="utf-8")) for path in CASE_FILES}
# A case expects a resolution or an error: the two are parametrized apart at collection.
RESOLUTION_CASES = [name for name, case in CASES.items() if "error" not in case["expect"]]
ERROR_CASES = [name for name, case in CASES.items() if "error" in case["expect"]]
REASONS = ("ON_DEMAND", "LAYER_TOKEN_LIMIT", "BEYOND_MAX_ITEMS", "NOT_RETRIEVED", "BUDGET_TRIMMED")


def summary_of(full: dict) -> dict:
    """Return the summary SPEC §7.1 describes, derived from a full resolution."""
    summary = copy.deepcopy(full)
    rendered_refs = {(r["layer"], r["item"]) for r in full["references"] if r["rendered"]}
    summary["references"] = [r for r in summary["references"] if r["rendered"]]
    for layer in summary["layers"]:
        materialized, rendered = layer["materialized"], layer["rendered"]
        layer["counts"] = {
            "items": len(materialized["items"]),
            "references": len(materialized["references"]),
            "trimmed": len(rendered["trimmed"]),
        }
        shown = set(rendered["items"])
        materialized["items"] = [unit for unit in materialized["items"] if unit["item"] in shown]
        materialized["references"] = [
            ref
            for ref in materialized["references"]
            if (layer["layer"], ref["item"]) in rendered_refs
        ]
        rendered["trimmed"] = []
    summary["currentnessExcluded"] = []
    counts = {reason: 0 for reason in REASONS}
    for reference in full["references"]:
        counts[reference["reason"]] += 1
    summary["referenceCounts"] = {reason: n for reason, n in counts.items() if n}
    summary["detail"] = "summary"
    return summary


def resolve_both(workspace, request):
    full = workspace.resolve(request)
    summary = workspace.resolve({**request, "detail": "summary"})
    return full, summary


@pytest.mark.parametrize("name", RESOLUTION_CASES)
def test_summary__golden_case__equals_the_summary_derived_from_the_full_resolution(name):
    case = CASES[name]
    request = {key: value for key, value in case["request"].items() if key != "detail"}
    workspace = compile_workspace(case["workspace"])

    full, summary = resolve_both(workspace, request)

    assert summary == summary_of(full)


@pytest.mark.parametrize("name", ERROR_CASES)
def test_summary__golden_error_case__same_error_as_the_full_request(name):
    case = CASES[name]
    request = case["request"]
    if isinstance(request, dict) and "detail" not in request:
        request = {**request, "detail": "summary"}  # a case about detail keeps its own

    with pytest.raises((WorkspaceError, RequestError)) as raised:
        compile_workspace(case["workspace"]).resolve(request)

    error = raised.value.as_dict()["error"]
    assert {key: error[key] for key in case["expect"]["error"]} == case["expect"]["error"]


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenarios())
def test_summary__any_request__equals_the_summary_derived_from_the_full_resolution(scenario):
    workspace = compile_workspace(scenario.document)

    full, summary = resolve_both(workspace, scenario.request)

    assert summary == summary_of(full)


def test_full_resolution__detail_full_or_null__equals_the_default_and_does_not_echo_it():
    case = CASES[RESOLUTION_CASES[0]]
    workspace = compile_workspace(case["workspace"])
    request = {key: value for key, value in case["request"].items() if key != "detail"}

    default = workspace.resolve(request)

    assert workspace.resolve({**request, "detail": "full"}) == default
    assert workspace.resolve({**request, "detail": None}) == default
    assert "detail" not in default and "referenceCounts" not in default


@pytest.mark.parametrize("detail", ["brief", "", 1, ["summary"]])
def test_request__detail_neither_full_nor_summary__is_invalid_at_detail(detail):
    case = CASES[RESOLUTION_CASES[0]]
    workspace = compile_workspace(case["workspace"])

    with pytest.raises(RequestError) as raised:
        workspace.resolve({**case["request"], "detail": detail})

    assert (raised.value.code, raised.value.path) == ("INVALID_REQUEST", "detail")


def test_summary__large_retrieve_layer__lists_only_what_is_rendered():
    # Given a 2,000-item retrieve layer where most items are references of some kind
    items = [
        {"path": f"doc-{n:05d}", "title": f"Item {n}", "body": "refund card" if n % 3 else "wallet"}
        for n in range(2000)
    ]
    workspace = compile_workspace(
        {
            "consumers": [{"key": "assistant"}],
            "layers": [{"key": "kb", "items": items}],
            "profiles": [
                {
                    "key": "answer",
                    "consumer": "assistant",
                    "objective": "answer-ticket",
                    "budget": 300,
                    "rules": {"kb": {"mode": "retrieve", "maxItems": 5}},
                }
            ],
        }
    )
    request = {"profile": "answer", "input": {"message": "refund"}, "now": "2026-11-29"}

    full, summary = resolve_both(workspace, request)

    # Then the summary lists only the rendered references, with the full counts beside them
    assert len(full["references"]) == 1995
    assert all(reference["rendered"] for reference in summary["references"])
    assert summary["referenceCounts"] == {"BEYOND_MAX_ITEMS": 1328, "NOT_RETRIEVED": 667}
    assert summary["layers"][0]["counts"] == {"items": 5, "references": 1995, "trimmed": 0}
    assert summary["output"] == full["output"]


def test_cli__detail_summary_flag__prints_the_summary(tmp_path, capsys):
    case = CASES[RESOLUTION_CASES[0]]
    workspace_file = tmp_path / "workspace.json"
    workspace_file.write_text(json.dumps(case["workspace"]), encoding="utf-8")
    request = {key: value for key, value in case["request"].items() if key != "detail"}

    code = cli.main(
        ["resolve", str(workspace_file), "--request", json.dumps(request), "--detail", "summary"]
    )

    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == summary_of(compile_workspace(case["workspace"]).resolve(request))


def layer_reasons_of(full: dict) -> dict:
    """Return each layer's references counted by reason, from a full resolution's list."""
    counts = {layer["layer"]: {} for layer in full["layers"]}
    for reference in full["references"]:
        layer = counts[reference["layer"]]
        layer[reference["reason"]] = layer.get(reference["reason"], 0) + 1
    return counts


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenarios())
def test_reference_counts_by_layer__any_request__the_full_resolution_s_by_layer(scenario):
    workspace = compile_workspace(scenario.document)
    full = workspace.resolve(scenario.request)

    summary, counts = workspace.resolve_with_reference_counts(
        {**scenario.request, "detail": "summary"}
    )

    assert counts == layer_reasons_of(full)
    assert summary == summary_of(full)

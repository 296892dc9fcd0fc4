"""Golden cases (SPEC §9): the shared conformance set and our own cases, through the Python API."""

from pathlib import Path

import pytest
import yaml

from resolver import RequestError, WorkspaceError, compile_workspace

HERE = Path(__file__).parent
CASE_FILES = sorted((HERE / "conformance").glob("*.yaml")) + sorted((HERE / "cases").glob("*.yaml"))


def match(expected, actual, path="$"):
    """Return None when ``expected`` is a subset of ``actual`` (SPEC §9), else where it differs."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{path}: expected an object, got {actual!r}"
        for key, value in expected.items():
            if key not in actual:
                return f"{path}.{key}: missing"
            problem = match(value, actual[key], f"{path}.{key}")
            if problem:
                return problem
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return f"{path}: expected {expected!r}, got {actual!r}"
        for n, (e, a) in enumerate(zip(expected, actual, strict=True)):
            problem = match(e, a, f"{path}[{n}]")
            if problem:
                return problem
        return None
    if expected != actual:
        return f"{path}: expected {expected!r}, got {actual!r}"
    return None


def engine_resolve(workspace, request: dict) -> dict:
    return compile_workspace(workspace).resolve(request)


def run_case(case: dict, resolve=engine_resolve) -> str | None:
    """Resolve one case and return None when it matches its expectation, else the difference.

    ``resolve(workspace, request)`` answers (default: the engine on the case's document; the
    database's path is tested with its own, tests/profiles/workspace/test_served_layers.py)."""
    expect = dict(case["expect"])
    try:
        resolution = resolve(case["workspace"], case["request"])
    except (WorkspaceError, RequestError) as exc:
        if "error" not in expect:
            return f"unexpected error {exc.code} at {exc.path!r}: {exc.message}"
        return match(expect["error"], exc.as_dict()["error"], "$.error")
    if "error" in expect:
        return f"expected error {expect['error']}, got status {resolution['status']}"
    layers = expect.pop("layers", None)
    order = expect.pop("layerOrder", None)
    problem = match(expect, resolution)
    if problem:
        return problem
    by_key = {record["layer"]: record for record in resolution["layers"]}
    if order is not None and order != list(by_key):
        return f"$.layerOrder: expected {order}, got {list(by_key)}"
    for key, expected_layer in (layers or {}).items():
        if key not in by_key:
            return f"$.layers.{key}: missing"
        problem = match(expected_layer, by_key[key], f"$.layers.{key}")
        if problem:
            return problem
    return None


@pytest.mark.parametrize("case_file", CASE_FILES, ids=[f.stem for f in CASE_FILES])
def test_golden_case__resolved_through_the_api__matches_expectation(case_file):
    case = yaml.safe_load(case_file.read_text(encoding="utf-8"))
    assert run_case(case) is None, run_case(case)


def test_conformance_copy__compared_with_shared__is_current():
    shared = HERE.parents[2] / "shared" / "conformance"
    if not shared.is_dir():
        pytest.skip("../shared is not present in this clone")
    theirs = {f.name: f.read_bytes() for f in shared.glob("*.yaml")}
    ours = {f.name: f.read_bytes() for f in (HERE / "conformance").glob("*.yaml")}
    assert ours == theirs, "tests/resolver/conformance is stale: re-copy ../shared/conformance"

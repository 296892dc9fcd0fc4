"""The budget sweep equals resolving at each budget (resolver/sweep.py).

One pass of the stages gives what every budget admits; these tests resolve the same request
at many budgets (the breakpoints, one below each, random ones) and compare what was admitted,
the estimate and the status, unit by unit.
"""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from resolver import RequestError, WorkspaceError, compile_workspace
from resolver import reasons as R
from resolver.sweep import CONTENT, REFERENCE, budget_sweep, default_ceiling, sweep_json
from tests.resolver.strategies import scenarios

OVERFLOW = (R.LAYER_TOKEN_LIMIT, R.BEYOND_MAX_ITEMS)


def admitted_by_resolution(resolution: dict) -> dict:
    """Return (layer, role) -> the admitted item paths, in order, of a real resolution."""
    admitted: dict[tuple[str, str], list[str]] = {}
    for layer in resolution["layers"]:
        # An on-demand layer lists its admitted reference lines as rendered items too.
        if layer["decision"]["kind"] == R.INLINE and layer["rendered"]["items"]:
            admitted[(layer["layer"], CONTENT)] = list(layer["rendered"]["items"])
    for reference in resolution["references"]:
        if not reference["rendered"]:
            continue
        role = CONTENT if reference["reason"] == R.ON_DEMAND else REFERENCE
        assert role == CONTENT or reference["reason"] in OVERFLOW
        admitted.setdefault((reference["layer"], role), []).append(reference["item"])
    return admitted


def admitted_by_sweep(sweep, budget: int) -> dict:
    point = sweep.at(budget)
    admitted = {}
    for segment in sweep.segments:
        shown = max(0, min(len(segment.paths), point.admitted - segment.start))
        if shown:
            admitted.setdefault((segment.layer, segment.role), []).extend(segment.paths[:shown])
    return admitted


def budgets_to_check(sweep, extra: list[int]) -> list[int]:
    points = set(extra)
    for breakpoint in sweep.breakpoints()[:40]:
        points.update({breakpoint, breakpoint - 1})
    return sorted(b for b in points if 1 <= b <= sweep.ceiling)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    scenario=scenarios(),
    ceiling=st.integers(1, 4000),
    extra=st.lists(st.integers(1, 4000), max_size=4),
)
def test_sweep__any_workspace_and_budget__equals_resolving_at_that_budget(scenario, ceiling, extra):
    # Given a valid workspace and a request for one of its profiles
    try:
        compiled = compile_workspace(scenario.document)
        sweep = budget_sweep(compiled, scenario.request, ceiling=ceiling)
    except (WorkspaceError, RequestError):
        return
    # When the same request is resolved at each budget up to the ceiling
    checked = budgets_to_check(sweep, extra)
    for budget in checked:
        draft = compiled.with_profile_draft(sweep.profile, budget=budget)
        resolution = draft.resolve(scenario.request)
        point = sweep.at(budget)
        # Then the sweep predicted what it admits, its estimate and its status exactly
        assert admitted_by_sweep(sweep, budget) == admitted_by_resolution(resolution), budget
        assert point.estimated_tokens == resolution["budget"]["estimatedTokens"]
        assert point.status == resolution["status"]
        assert list(point.blockers) == resolution["blockers"]
        assert list(point.warnings) == resolution["warnings"]


@st.composite
def required_scenarios(draw):
    """A scenario whose profile makes some layers required: RENDERING_INCOMPLETE and
    REQUIRED_CONTEXT_OVER_BUDGET are rare otherwise."""
    scenario = draw(scenarios())
    profile = scenario.document["profiles"][scenario.profile_index]
    try:  # mostly layers the profile selects: a required layer it omits blocks at any budget
        layers = compile_workspace(scenario.document).resolve(scenario.request)["layers"]
    except (WorkspaceError, RequestError):
        layers = []
    keys = [layer["layer"] for layer in layers if layer["decision"]["kind"] != R.OMITTED]
    if not keys or draw(st.integers(0, 4)) == 0:
        keys = [layer["key"] for layer in scenario.document["layers"]]
    chosen = draw(st.lists(st.sampled_from(keys), min_size=1, unique=True)) if keys else []
    rules = dict(profile.get("rules") or {})
    for key in chosen:
        rules[key] = {**(rules.get(key) or {}), "required": True}
    profile["rules"] = rules
    return scenario


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=required_scenarios(), extra=st.lists(st.integers(1, 3000), max_size=3))
def test_sweep__required_layers__status_equals_resolving_at_that_budget(scenario, extra):
    test_sweep__any_workspace_and_budget__equals_resolving_at_that_budget.hypothesis.inner_test(
        scenario=scenario, ceiling=3000, extra=extra
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario=required_scenarios())
def test_sweep__required_budgets__are_where_the_status_changes(scenario):
    try:
        compiled = compile_workspace(scenario.document)
        sweep = budget_sweep(compiled, scenario.request, ceiling=3000)
    except (WorkspaceError, RequestError):
        return
    starts, complete = sweep.required_from()
    if starts is not None:
        assert sweep.at(starts).status != R.BLOCKED
        if starts > 1:
            assert sweep.at(starts - 1).status == R.BLOCKED
    if complete is not None:
        assert not sweep.at(complete).warnings and sweep.at(complete).status != R.BLOCKED
        if complete > 1:
            below = sweep.at(complete - 1)
            assert below.status == R.BLOCKED or below.warnings
    summary = sweep_json(sweep)
    assert summary["units"] == sweep.total
    assert summary["complete"] == (summary["listedUnits"] == summary["units"])


def test_sweep__budget_above_the_ceiling__is_refused():
    document = {
        "version": 1,
        "consumers": [{"key": "bot"}],
        "layers": [{"key": "kb", "items": [{"path": "a", "title": "A", "body": "x " * 400}]}],
        "profiles": [{"key": "p", "consumer": "bot", "objective": "o", "budget": 50}],
    }
    sweep = budget_sweep(compile_workspace(document), {"profile": "p"}, ceiling=60)
    # The one item needs more than 60 tokens: nothing is listed, and the sweep says so.
    assert not sweep.complete and sweep.total == 1 and len(sweep.lengths) == 0
    assert sweep.at(60).admitted == 0
    with pytest.raises(ValueError, match="ceiling"):
        sweep.at(61)
    assert default_ceiling(50) == 1_000 and default_ceiling(10**6) == 200_000

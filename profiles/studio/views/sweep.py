"""The editor's budget sweep: which units go in or out at every budget, for the sample input.

One pass of the engine (``resolver.sweep``) gives the whole sweep; the slider only picks the
budget shown. The partials live in ``profiles/_budget_sweep.html`` (``#sweep``: the slider,
the chart and its table; ``#sweep-at``: what the slider's budget admits).
"""

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from profiles.resolution.sweep import profile_budget_sweep
from profiles.studio.draft import draft_from_post
from profiles.studio.lookups import profile_or_404
from profiles.studio.throttling import throttled
from profiles.workspace import cache
from profiles.workspace.parameters import whole_number
from profiles.workspace.permissions import READ_CONFIG, RESOLVE, capability_required
from resolver import RequestError, WorkspaceError
from resolver.sweep import CONTENT, BudgetSweep

# Units named one by one when the slider moves away from the profile's budget.
NAMED_UNITS = 10

# The chart: one row of this height (px, the SVG's units) per run, a bar of BAR_HEIGHT in it;
# the budget axis has about this many ticks, at round numbers.
ROW_HEIGHT = 20
BAR_HEIGHT = 12
TICKS = 6

ROLE_LABELS = {
    (CONTENT, True): "items",
    (CONTENT, False): "references (on demand)",
}


def _percent(budget: int | None, ceiling: int) -> float:
    return round(100 * min(budget if budget is not None else ceiling, ceiling) / ceiling, 2)


def sweep_runs(sweep: BudgetSweep, at: int) -> list[dict]:
    """Return each run of the admission sequence as the chart and its table show it."""
    point = sweep.at(at)
    rows = []
    for segment in sweep.segments:
        last = segment.start + len(segment.paths) - 1
        first_in, all_in = sweep.least_budget(segment.start), sweep.least_budget(last)
        shown = max(0, min(len(segment.paths), point.admitted - segment.start))
        start = _percent(first_in, sweep.ceiling)
        rows.append(
            {
                "layer": segment.layer,
                "name": segment.name,
                "role": ROLE_LABELS.get((segment.role, segment.inline), "overflow references"),
                "required": segment.required,
                "units": len(segment.paths),
                "first_in": first_in,
                "all_in": all_in,
                "admitted": shown,
                "x": start,
                "y": ROW_HEIGHT * len(rows) + (ROW_HEIGHT - BAR_HEIGHT) // 2,
                "width": max(0.5, round(_percent(all_in, sweep.ceiling) - start, 2)),
            }
        )
    return rows


def budget_ticks(ceiling: int) -> list[dict]:
    """Return the budget axis's ticks: 0 and round multiples (1, 2 or 5 × 10^k) up to the
    ceiling, each with its position in percent of the chart's width."""
    raw = max(1, ceiling / TICKS)
    magnitude = 10 ** (len(str(int(raw))) - 1)
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    return [
        {"value": value, "x": _percent(value, ceiling)} for value in range(0, ceiling + 1, step)
    ]


def _units_between(sweep: BudgetSweep, low: int, high: int) -> list[dict]:
    """Return the first units admitted at position ``low`` up to (not including) ``high``."""
    units = []
    for segment in sweep.segments:
        first = max(low, segment.start)
        last = min(high, segment.start + len(segment.paths), first + NAMED_UNITS - len(units))
        for position in range(first, last):
            path = segment.paths[position - segment.start]
            units.append(
                {"layer": segment.layer, "item": path, "budget": sweep.least_budget(position)}
            )
        if len(units) == NAMED_UNITS:
            break
    return units


def sweep_context(sweep: BudgetSweep, at: int) -> dict:
    """Return what the sweep partials show at the slider's budget ``at``."""
    at = min(max(1, at), sweep.ceiling)
    point = sweep.at(at)
    own = sweep.at(min(sweep.budget, sweep.ceiling))
    required_start, required_complete = sweep.required_from()
    low, high = sorted((own.admitted, point.admitted))
    return {
        "sweep": sweep,
        "at": at,
        "point": point,
        "runs": sweep_runs(sweep, at),
        "marker": _percent(at, sweep.ceiling),
        "budget_marker": _percent(sweep.budget, sweep.ceiling),
        "required_start": required_start,
        "required_complete": required_complete,
        "everything": sweep.least_budget(sweep.total - 1) if sweep.total else 1,
        "gained": _units_between(sweep, low, high) if point.admitted > own.admitted else [],
        "lost": _units_between(sweep, low, high) if point.admitted < own.admitted else [],
        "difference": abs(point.admitted - own.admitted),
        "breakpoints": len(sweep.breakpoints()),
        "chart_height": ROW_HEIGHT * max(1, len(sweep.segments)),
        "bar_height": BAR_HEIGHT,
        "row_height": ROW_HEIGHT,
        "ticks": budget_ticks(sweep.ceiling),
    }


@capability_required(RESOLVE, READ_CONFIG)
@require_POST
@throttled("preview")
def profile_preview_sweep(request, key):
    """Return the budget sweep of the posted draft (``sweep_at``: the budget the slider shows;
    ``part=at``: only what that budget admits, the slider itself is not replaced: the figures
    in place of the last ones, the chart and its table out of band)."""
    profile = profile_or_404(key)
    cached = cache.workspace_get()
    draft = draft_from_post(request.POST, cached.document, profile.key)
    if not draft.is_valid():
        return HttpResponse('<p class="muted">Fix the highlighted fields first.</p>')
    try:
        sweep = profile_budget_sweep(
            profile_key=profile.key,
            request=draft.sample.as_request(),
            rule_overrides=draft.rule_overrides(),
            budget_override=draft.budget_value(),
            compiled=cached.compiled,
        )
    except (RequestError, WorkspaceError):
        return HttpResponse('<p class="muted">Fix the highlighted fields first.</p>')
    at = whole_number(request.POST.get("sweep_at", "")) or sweep.budget
    context = {"profile": profile, **sweep_context(sweep, at)}
    if request.POST.get("part") == "at":
        context["oob"] = True  # the chart and table go out of band; the figures in place
        return render(request, "profiles/_budget_sweep.html#sweep-at", context)
    return render(request, "profiles/_budget_sweep.html#sweep", context)

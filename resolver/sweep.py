"""The budget sweep: what one request admits at every budget, from one pass of the stages.

Every stage before admission (4.1–4.6) is independent of the budget when the request is
resolved in full detail (only a summary reads the budget, to rank no more references than
could fit). Admission (4.7, ``resolver.engine.admit``) walks one fixed sequence, the content
units of each layer in admission order and then the overflow references of each, and stops
at the first unit whose addition would make the whole output's estimate exceed the budget.
The length of the output after the k-th unit, ``L[k]``, depends only on the units before it
(``OutputMeter``), and it grows with k. So a budget B admits exactly the first
``#{k : estimate(L[k]) <= B}`` units, and the admitted set for *every* budget follows from the
sequence of lengths: ``budget_sweep`` computes it once, replaying admission with no budget.

The replay stops once the output would pass ``ceiling`` tokens (a long layer need not be
rendered beyond what any budget on the slider could admit): everything this module answers
is exact for budgets up to the ceiling, and says ``complete`` when the whole sequence fits.
The status at a budget is the one of SPEC §4.8 (``resolver.report.status_findings``), from
the same counts. tests/resolver/test_sweep.py compares it with real resolutions.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from resolver import reasons as R
from resolver.clock import system_clock
from resolver.compiled import CompiledWorkspace
from resolver.engine import layer_head, select_and_materialize, unit_text
from resolver.render import OutputMeter
from resolver.request import parse_request
from resolver.text import estimate
from resolver.trace import Context, LayerTrace, leading

CONTENT = "content"  # a layer's content unit: an inline item, or an on-demand reference line
REFERENCE = "reference"  # an overflow reference (over the layer's maxTokens, beyond maxItems)


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of the admission sequence: the content units or the overflow of one layer."""

    layer: str
    name: str
    role: str  # CONTENT or REFERENCE
    required: bool
    inline: bool  # content units are item blocks (else reference lines)
    order: int  # the layer's position in render order
    start: int  # position of its first unit in the sequence
    paths: "UnitPaths"  # its units' item paths, in admission order (looked up when read)


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """What a resolution at one budget admits (SPEC §4.7–4.8)."""

    budget: int
    admitted: int  # units of the sequence admitted
    estimated_tokens: int  # of the whole output
    status: str
    blockers: tuple[dict, ...]
    warnings: tuple[dict, ...]
    by_layer: dict  # layer key -> {"content": n, "references": n} admitted


@dataclass(frozen=True)
class BudgetSweep:
    """The admission sequence of one request, with the output length after each unit."""

    profile: str
    budget: int  # the profile's own budget
    ceiling: int
    segments: tuple[Segment, ...]
    lengths: np.ndarray  # characters of the output after each listed unit (increasing)
    total: int  # units in the whole sequence (lengths may list fewer: the ceiling)
    # Required layers with nothing to admit (blocked at any budget): (render order, finding).
    fixed_blockers: tuple[tuple[int, dict], ...]

    @property
    def complete(self) -> bool:
        """Whether every unit of the sequence fits within the ceiling."""
        return len(self.lengths) == self.total

    def least_budget(self, position: int) -> int | None:
        """Return the least budget that admits the unit at ``position`` (None: above the
        ceiling)."""
        if position >= len(self.lengths):
            return None
        return estimate(int(self.lengths[position]))

    def admitted_count(self, budget: int) -> int:
        """Return how many units of the sequence a resolution at ``budget`` admits."""
        if budget > self.ceiling:
            raise ValueError(f"budget {budget} is above the sweep's ceiling {self.ceiling}")
        # estimate(length) <= budget exactly when length <= 4 * budget.
        return int(np.searchsorted(self.lengths, 4 * budget, side="right"))

    def at(self, budget: int) -> SweepPoint:
        """Return what resolving this request at ``budget`` admits, and its status."""
        count = self.admitted_count(budget)
        by_layer: dict[str, dict[str, int]] = {}
        blockers = list(self.fixed_blockers)  # (render order, finding)
        warnings = []
        for segment in self.segments:
            shown = max(0, min(len(segment.paths), count - segment.start))
            entry = by_layer.setdefault(segment.layer, {CONTENT: 0, REFERENCE: 0})
            entry[segment.role] += shown
            if segment.role == CONTENT and segment.required:
                if shown == 0:
                    over = {"code": R.REQUIRED_CONTEXT_OVER_BUDGET, "layer": segment.layer}
                    blockers.append((segment.order, {**over, "detail": None}))
                elif shown < len(segment.paths):
                    incomplete = {"code": R.RENDERING_INCOMPLETE, "layer": segment.layer}
                    warnings.append((segment.order, {**incomplete, "detail": None}))
        blockers = [finding for _, finding in sorted(blockers, key=lambda b: b[0])]
        warnings = [finding for _, finding in sorted(warnings, key=lambda w: w[0])]
        status = R.BLOCKED if blockers else R.RENDERING_INCOMPLETE if warnings else R.RESOLVED
        tokens = estimate(int(self.lengths[count - 1])) if count else 0
        return SweepPoint(
            budget=budget,
            admitted=count,
            estimated_tokens=tokens,
            status=status,
            blockers=tuple(blockers),
            warnings=tuple(warnings),
            by_layer=by_layer,
        )

    def breakpoints(self) -> list[int]:
        """Return the budgets (up to the ceiling) at which one or more units go in, ascending."""
        return sorted({estimate(int(length)) for length in self.lengths})

    def required_from(self) -> tuple[int | None, int | None]:
        """Return the least budgets at which no required layer is over budget (below it the
        status is BLOCKED) and at which every required content unit fits (below it,
        RENDERING_INCOMPLETE); each None when no budget up to the ceiling does it, (1, 1)
        when nothing is required. A required layer with nothing to admit blocks at every
        budget: then both are None."""
        if self.fixed_blockers:
            return None, None
        starts, ends = [0], [0]
        for segment in self.segments:
            if segment.role == CONTENT and segment.required:
                starts.append(segment.start)
                ends.append(segment.start + len(segment.paths) - 1)
        if len(starts) == 1:
            return 1, 1
        first, last = self.least_budget(max(starts)), self.least_budget(max(ends))
        return (max(1, first) if first is not None else None), (
            max(1, last) if last is not None else None
        )


def budget_sweep(
    compiled: CompiledWorkspace, request: dict, *, ceiling: int, clock=system_clock
) -> BudgetSweep:
    """Return the budget sweep of a SPEC §3 request: one pass of the stages, no budget.

    Raises what ``CompiledWorkspace.resolve`` raises for the request. ``ceiling`` (tokens,
    at least 1) bounds the budgets answered: the replay stops past it.
    """
    if ceiling < 1:
        raise ValueError("the ceiling must be at least 1")
    parsed = parse_request(
        {**request, "detail": "full"}, layer_keys=compiled.layer_keys, clock=clock
    )
    profile = compiled.select_profile(parsed)
    consumer = compiled.consumers[profile.consumer]
    indexes = compiled.for_request(parsed).indexes
    traces, ctx = select_and_materialize(indexes, profile, parsed, consumer)
    fixed = []
    for position, trace in enumerate(traces):
        if trace.rule.required and (not trace.selected or not len(trace.units)):
            detail = trace.reason if not trace.selected else R.NO_CONTENT
            finding = {"code": R.MISSING_REQUIRED_CONTEXT, "layer": trace.layer.key}
            fixed.append((position, {**finding, "detail": detail}))
    positions = {id(t): n for n, t in enumerate(traces)}
    ordered = [t for t in traces if t.selected and t.rule.required]
    ordered += [t for t in traces if t.selected and not t.rule.required]
    replay = _Replay(ctx, 4 * ceiling)
    segments = []
    for trace in ordered:
        segments.append(_segment(trace, positions[id(trace)], CONTENT, replay.total, trace.units))
        replay.run(trace, trace.units, content=True)
    for trace in ordered:
        overflow = np.concatenate([trace.limited, trace.beyond])
        segments.append(_segment(trace, positions[id(trace)], REFERENCE, replay.total, overflow))
        replay.run(trace, overflow, content=False)
    return BudgetSweep(
        profile=profile.key,
        budget=profile.budget,
        ceiling=ceiling,
        segments=tuple(s for s in segments if len(s.paths)),
        lengths=np.asarray(replay.lengths, dtype=np.int64),
        total=replay.total,
        fixed_blockers=tuple(fixed),
    )


class UnitPaths(Sequence):
    """The item paths of a run of units, read from the layer's paths only when asked for
    (a run of 100,000 references costs nothing until its first paths are shown)."""

    __slots__ = ("_indices", "_paths")

    def __init__(self, paths: list[str], indices: np.ndarray):
        self._paths, self._indices = paths, indices

    def __len__(self) -> int:
        return len(self._indices)

    def __getitem__(self, at):
        if isinstance(at, slice):
            return [self._paths[i] for i in self._indices[at].tolist()]
        return self._paths[int(self._indices[at])]


def _segment(trace: LayerTrace, order: int, role: str, start: int, indices) -> Segment:
    return Segment(
        order=order,
        layer=trace.layer.key,
        name=trace.layer.display_name,
        role=role,
        required=trace.rule.required,
        inline=trace.inline,
        start=start,
        paths=UnitPaths(trace.index.paths, np.asarray(indices, dtype=np.intp)),
    )


class _Replay:
    """``resolver.engine.admit`` without a budget: the output length after each unit, up to
    ``limit`` characters (a unit that would pass it ends the listing)."""

    def __init__(self, ctx: Context, limit: int):
        self.ctx = ctx
        self.meter = OutputMeter(ctx.renderer)
        self.limit = limit
        self.lengths: list[int] = []
        self.total = 0  # units of the sequence, listed or not
        self.stopped = False

    def run(self, trace: LayerTrace, indices, *, content: bool) -> None:
        self.total += len(indices)
        if self.stopped or not len(indices):
            return
        if content and trace.inline:
            head = len(layer_head(trace, self.ctx))
            for n, i in enumerate(leading(indices)):
                cost = self.meter.cost_item(head, n, len(unit_text(trace, self.ctx, i)))
                if self.meter.length + cost > self.limit:
                    self.stopped = True
                    return
                self.meter.add_item(cost, n)
                self.lengths.append(self.meter.length)
            return
        _, lengths = trace.index.reference_lines(self.ctx.renderer)
        costs = lengths[np.asarray(indices, dtype=np.intp)] + 1
        costs[0] = self.meter.cost_reference(int(costs[0]) - 1)
        totals = np.cumsum(costs)
        count = int(np.searchsorted(totals, self.limit - self.meter.length, side="right"))
        if count:
            self.lengths.extend((self.meter.length + totals[:count]).tolist())
            self.meter.add_references(count, int(totals[count - 1]))
        if count < len(indices):
            self.stopped = True


def default_ceiling(budget: int) -> int:
    """The ceiling the studio sweeps to: twice the profile's budget, at least 1,000 tokens,
    at most 200,000 (a slider beyond that shows nothing a person can read)."""
    return max(1_000, min(200_000, 2 * budget))


def sweep_json(sweep: BudgetSweep, *, units_shown: int = 200) -> dict:
    """Return the sweep as plain JSON-able objects: each layer's run with the budgets at
    which its first and last unit go in, the first ``units_shown`` units, and the budgets at
    which the required content starts and stops fitting."""
    start, complete = sweep.required_from()
    runs = []
    for segment in sweep.segments:
        last = segment.start + len(segment.paths) - 1
        runs.append(
            {
                "layer": segment.layer,
                "name": segment.name,
                "role": segment.role,
                "required": segment.required,
                "units": len(segment.paths),
                "firstIn": sweep.least_budget(segment.start),
                "allIn": sweep.least_budget(last),
            }
        )
    units = []
    for segment in sweep.segments:
        shown = min(units_shown, len(sweep.lengths)) - segment.start
        for n, path in enumerate(segment.paths[: max(0, shown)]):
            position = segment.start + n
            units.append(
                {
                    "position": position + 1,
                    "layer": segment.layer,
                    "item": path,
                    "role": segment.role,
                    "required": segment.required,
                    "leastBudget": sweep.least_budget(position),
                }
            )
    return {
        "profile": sweep.profile,
        "budget": sweep.budget,
        "ceiling": sweep.ceiling,
        "complete": sweep.complete,
        "units": sweep.total,
        "listedUnits": len(sweep.lengths),
        "requiredStartsFitting": start,
        "requiredFitsCompletely": complete,
        "everythingFits": sweep.least_budget(sweep.total - 1) if sweep.total else 1,
        "breakpoints": len(sweep.breakpoints()),
        "runs": runs,
        "firstUnits": units,
    }

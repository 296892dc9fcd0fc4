"""A resolution's working state: what each stage decided about one layer (``LayerTrace``).

Shared by the stages (resolver/engine.py) and the JSON report (resolver/report.py).
"""

from dataclasses import dataclass, field

import numpy as np

from resolver import reasons as R
from resolver.index import MICROSECONDS_PER_DAY, UNKNOWN_FLAG, LayerIndex
from resolver.model import Layer, Profile, Rule
from resolver.render import Renderer
from resolver.request import Request

EMPTY = np.empty(0, dtype=np.intp)
EMPTY.flags.writeable = False


def no_items() -> np.ndarray:
    return EMPTY


@dataclass(slots=True)
class LayerTrace:
    """Everything decided about one layer, stage by stage.

    Lists of items are numpy arrays of item indices (positions in the layer's items).
    """

    index: LayerIndex
    rule: Rule
    available: str = ""
    applicable: str = R.SKIPPED
    applicable_reason: str | None = None
    candidates: np.ndarray = field(default_factory=no_items)  # path order
    candidate_count: int = 0
    currentness_state: str = R.SKIPPED
    current: int = 0
    stale: int = 0
    unknown: int = 0
    excluded: np.ndarray = field(default_factory=no_items)  # excluded by currentness, path order
    warned: int = 0
    flags: np.ndarray | None = None  # per item: STALE_FLAG / UNKNOWN_FLAG when kept by warn
    kind: str = R.OMITTED
    reason: str = ""
    detail: str | None = None
    scores: np.ndarray | None = None  # per item, unrounded (when relevance was computed)
    hit: np.ndarray | None = None  # per item: at least one query term occurs
    # Materialized: content units are inline items, or for an on-demand decision reference
    # lines; overflow references are the token-limited, then the beyond maxItems ones.
    # Admission takes a prefix of each list (it stops at the first misfit).
    units: np.ndarray = field(default_factory=no_items)
    limited: np.ndarray = field(default_factory=no_items)
    beyond: np.ndarray = field(default_factory=no_items)
    not_retrieved: np.ndarray = field(default_factory=no_items)
    # Full lengths: a summary builds only the prefix of ``beyond`` that the budget could
    # admit, and no ``not_retrieved`` list (SPEC §7.1 reports their counts).
    beyond_count: int = 0
    not_retrieved_count: int = 0
    texts: dict[int, str] = field(default_factory=dict)  # rendered unit texts
    head: str = ""
    admitted_units: int = 0
    admitted_overflow: int = 0
    block_characters: int = 0

    @property
    def inline(self) -> bool:
        return self.kind == R.INLINE

    @property
    def layer(self) -> Layer:
        return self.index.layer

    @property
    def selected(self) -> bool:
        return self.kind != R.OMITTED


@dataclass(frozen=True, slots=True)
class Context:
    """What every stage may read about the request."""

    profile: Profile
    request: Request
    terms: tuple[str, ...]
    renderer: Renderer
    include_dates: bool
    now_micros: int


def leading(indices: np.ndarray):
    """Yield item indices as ints, converted in growing chunks.

    Admission and the maxTokens fit stop at the first unit that does not fit, so a loop over
    a 100,000-item layer usually converts only its first chunk.
    """
    start, step, size = 0, 16, len(indices)
    while start < size:
        yield from indices[start : start + step].tolist()
        start += step
        step = min(step * 2, 4096)


def age_days(ctx: Context, micros) -> np.ndarray | int:
    """Return floor((now − date) / 1 day) of instants in microseconds (exact integers)."""
    return (ctx.now_micros - micros) // MICROSECONDS_PER_DAY


def warning(trace: LayerTrace, ctx: Context, i: int) -> tuple[str, str] | None:
    """Return ``(flag, detail)`` of an item kept by a warn policy, None when it is current."""
    if trace.flags is None or not trace.flags[i]:
        return None
    policy = trace.rule.currentness
    if trace.flags[i] == UNKNOWN_FLAG:
        return R.UNKNOWN, f"no valid {policy.field} date"
    dates = trace.index.field_dates(policy.field)
    age = age_days(ctx, int(dates.micros[i]))
    detail = f"{policy.field} {dates.days[i]}, {age} days old; limit {policy.max_age_days} days"
    return R.STALE, detail


def admitted_overflow(trace: LayerTrace) -> tuple[np.ndarray, np.ndarray]:
    """Return the admitted prefixes of the token-limited and the beyond-maxItems references."""
    shown = trace.admitted_overflow
    limited = trace.limited[:shown]
    return limited, trace.beyond[: shown - len(limited)]

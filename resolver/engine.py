"""The stages of a resolution (SPEC §4), applied per layer by ``run_stages``.

The stages are functions named after the spec's stages, applied per layer in this order:
``assess_availability`` → ``assess_applicability`` → ``filter_currentness`` → ``decide`` →
``materialize`` → ``project`` (facet texts, on demand) → ``admit`` (budget, all layers) →
``render``; ``resolution_json`` (resolver/report.py) turns the traces into SPEC §7 JSON.
Each stage fills the ``LayerTrace`` of its layer (resolver/trace.py) from the layer's index;
the compiled workspace that holds the indexes and runs the stages is ``resolver.compiled``.
"""

import numpy as np

from resolver import reasons as R
from resolver.index import STALE_FLAG, UNDATED, UNKNOWN_FLAG, LayerIndex, instant_microseconds
from resolver.model import Consumer, Profile, Rule
from resolver.render import OutputMeter, Renderer
from resolver.request import Request
from resolver.text import cut, estimate, paragraphs, query_terms, tokenize
from resolver.trace import (
    EMPTY,
    Context,
    LayerTrace,
    admitted_overflow,
    age_days,
    leading,
    warning,
)
from resolver.values import display_value

# -- stages ----------------------------------------------------------------------------------


def assess_availability(trace: LayerTrace, ctx: Context) -> None:
    """4.1: UNAVAILABLE / UNKNOWN / EMPTY / MATERIAL_PRESENT."""
    layer = trace.layer
    availability = ctx.request.availability.get(layer.key, layer.availability)
    if availability == "unavailable":
        trace.available = R.UNAVAILABLE
    elif availability == "unknown":
        trace.available = R.UNKNOWN
    elif not layer.item_total:
        trace.available = R.EMPTY
    else:
        trace.available = R.MATERIAL_PRESENT


def material_check(trace: LayerTrace, ctx: Context) -> tuple[str | None, str | None]:
    """Return ``(missing input key, no-match reason)`` of checks 3–4 and set the candidates.

    The candidates are the items that pass the itemFilter (all items without one), whatever
    ``requiresInput`` says; a missing filter input lets no item participate.
    """
    layer = trace.layer
    inputs = ctx.request.inputs
    missing = next((key for key in layer.requires_input if key not in inputs), None)
    missing_filter = next((key for _, key in layer.item_filter if key not in inputs), None)
    if not layer.item_filter:
        trace.candidates = trace.index.by_path
        return missing, None
    if missing_filter is not None:
        trace.candidates = EMPTY
        return missing or missing_filter, None
    matching: set[int] | None = None
    for field_name, key in layer.item_filter:
        found = trace.index.filter_lookup(field_name).get(inputs[key], ())
        matching = set(found) if matching is None else matching.intersection(found)
        if not matching:
            break
    if matching:
        ids = np.fromiter(matching, dtype=np.intp, count=len(matching))
        trace.candidates = ids[np.argsort(trace.index.path_rank[ids])]
    else:
        trace.candidates = EMPTY
    if missing is not None:
        return missing, None
    return None, None if matching else R.NO_MATCHING_MATERIAL


def assess_applicability(trace: LayerTrace, ctx: Context) -> tuple[str | None, str | None]:
    """4.2: scope checks, then the material checks; return the material check's findings."""
    layer = trace.layer
    if trace.available != R.MATERIAL_PRESENT:
        trace.applicable, trace.applicable_reason = R.SKIPPED, None
        return None, None
    missing, no_match = material_check(trace, ctx)
    trace.candidate_count = len(trace.candidates)
    profile = ctx.profile
    if layer.objectives and profile.objective not in layer.objectives:
        trace.applicable, trace.applicable_reason = R.NOT_APPLICABLE, R.OBJECTIVE_OUT_OF_SCOPE
    elif layer.consumers and profile.consumer not in layer.consumers:
        trace.applicable, trace.applicable_reason = R.NOT_APPLICABLE, R.CONSUMER_OUT_OF_SCOPE
    elif missing is not None:
        trace.applicable, trace.applicable_reason = R.UNKNOWN, R.INPUT_NOT_PROVIDED + missing
    elif no_match is not None:
        trace.applicable, trace.applicable_reason = R.NOT_APPLICABLE, no_match
    elif layer.item_filter:
        fields = ",".join(name for name, _ in layer.item_filter)
        trace.applicable, trace.applicable_reason = R.APPLICABLE, R.MATCHED + fields
    else:
        trace.applicable, trace.applicable_reason = R.APPLICABLE, R.IN_SCOPE
    return missing, no_match


def filter_currentness(trace: LayerTrace, ctx: Context) -> None:
    """4.4: classify candidates as current, STALE or UNKNOWN; exclude or flag them."""
    policy = trace.rule.currentness
    if policy is None:
        trace.currentness_state = R.NOT_ASSESSED
        return
    trace.currentness_state = R.ASSESSED
    candidates = trace.candidates
    micros = trace.index.field_dates(policy.field).micros[candidates]
    undated = micros == UNDATED
    stale = ~undated & (age_days(ctx, np.where(undated, 0, micros)) > policy.max_age_days)
    trace.unknown = int(np.count_nonzero(undated))
    trace.stale = int(np.count_nonzero(stale))
    trace.current = len(candidates) - trace.unknown - trace.stale
    dropped = np.zeros(len(candidates), dtype=bool)
    flags = None
    for mask, on, flag in (
        (undated, policy.on_unknown, UNKNOWN_FLAG),
        (stale, policy.on_stale, STALE_FLAG),
    ):
        if not mask.any():
            continue
        if on == "exclude":
            dropped |= mask
        else:
            if flags is None:
                flags = np.zeros(trace.index.size, dtype=np.int8)
            flags[candidates[mask]] = flag
            trace.warned += int(np.count_nonzero(mask))
    trace.flags = flags
    if dropped.any():
        trace.excluded = candidates[dropped]
        trace.candidates = candidates[~dropped]


def decide(trace: LayerTrace, ctx: Context, missing, no_match) -> None:
    """4.3: the kernel decision, first matching row wins (row 7 after currentness)."""
    rule = trace.rule
    if rule.participation == "exclude":
        trace.kind, trace.reason = R.OMITTED, R.EXCLUDED_BY_PROFILE
    elif trace.available == R.UNAVAILABLE:
        trace.kind, trace.reason = R.OMITTED, R.LAYER_UNAVAILABLE
    elif trace.available == R.UNKNOWN:
        trace.kind, trace.reason = R.OMITTED, R.AVAILABILITY_UNKNOWN
    elif trace.available == R.EMPTY:
        trace.kind, trace.reason = R.OMITTED, R.LAYER_EMPTY
    elif rule.participation == "auto" and trace.applicable == R.UNKNOWN:
        trace.kind, trace.reason = R.OMITTED, R.APPLICABILITY_UNKNOWN
        trace.detail = trace.applicable_reason
    elif rule.participation == "auto" and trace.applicable == R.NOT_APPLICABLE:
        trace.kind, trace.reason = R.OMITTED, R.NOT_APPLICABLE
        trace.detail = trace.applicable_reason
    elif missing is not None:
        trace.kind, trace.reason = R.OMITTED, R.APPLICABILITY_UNKNOWN
        trace.detail = R.INPUT_NOT_PROVIDED + missing
    elif no_match is not None:
        trace.kind, trace.reason = R.OMITTED, R.NOT_APPLICABLE
        trace.detail = no_match
    else:
        filter_currentness(trace, ctx)
        if not len(trace.candidates):
            trace.kind, trace.reason = R.OMITTED, R.STALE_EXCLUDED
        else:
            trace.kind = R.ON_DEMAND_KIND if rule.mode == "on-demand" else R.INLINE
            include = rule.participation == "include"
            trace.reason = R.INCLUDED_BY_PROFILE if include else R.INCLUDED_APPLICABLE
        return
    trace.currentness_state = R.SKIPPED


def materialize(trace: LayerTrace, ctx: Context) -> None:
    """4.5: relevance, order, maxItems, maxTokens; the rest becomes references."""
    rule = trace.rule
    index = trace.index
    order = rule.effective_order
    summary = ctx.request.detail == "summary"
    share_texts(trace, ctx)
    ranked = trace.candidates  # path order
    total = len(ranked)
    # A summary reports only the count of the retrieved items, and ranks them by score and
    # path rank: they are left where bm25 marked them (only candidates are hits).
    in_place = summary and order == "relevance" and rule.mode == "retrieve"
    if rule.mode == "retrieve" or order == "relevance":
        trace.scores, trace.hit = index.bm25(ctx.terms, ranked)
        if in_place:
            total = int(np.count_nonzero(trace.hit))
        elif rule.mode == "retrieve":
            retrieved = trace.hit[ranked]
            if not summary:
                trace.not_retrieved = ranked[~retrieved]
            ranked = ranked[retrieved]
            total = len(ranked)
        if rule.mode == "retrieve":
            trace.not_retrieved_count = len(trace.candidates) - total
    beyond = total - rule.max_items if rule.max_items is not None else 0
    if order == "relevance":
        needed = total
        if summary and beyond > 0:
            # Only the kept items and the overflow references the budget could admit are
            # listed in a summary: rank just those (a partial selection).
            needed = rule.max_items + index.reference_capacity(ctx.renderer, ctx.profile.budget)
        if in_place:
            ranked = rank_hits(trace.scores, trace.hit, total, needed, index.path_rank)
        else:
            ranked = rank_by_score(ranked, trace.scores, needed)
    elif order == "recency":
        # Dated items by instant descending (exact microseconds), undated last, then path.
        micros = index.recency_dates(recency_field(rule)).micros[ranked]
        keys = np.where(micros == UNDATED, UNDATED, -micros)
        ranked = ranked[sorted_order(keys)]
    if beyond > 0:
        trace.beyond = ranked[rule.max_items :]
        trace.beyond_count = beyond
        ranked = ranked[: rule.max_items]
    if rule.max_tokens is not None and len(ranked):
        fits = _fit_layer_tokens(trace, ctx, ranked, rule.max_tokens)
        trace.limited = ranked[fits:]
        ranked = ranked[:fits]
    trace.units = ranked


def rank_by_score(
    ranked: np.ndarray, scores: np.ndarray, needed: int, path_rank: np.ndarray | None = None
) -> np.ndarray:
    """Return the first ``needed`` of some items by score descending, then path.

    ``ranked`` is in path order, or else ``path_rank`` gives each item's position in path
    order. Scores are non-negative floats, whose IEEE bit patterns order as the values do,
    so they are sorted as integers. With ``needed`` below the length, only the items scoring
    at least the ``needed``-th best score are sorted.
    """
    keys = scores[ranked].view(np.int64)
    if needed < len(ranked) // 2:
        threshold = np.partition(keys, len(keys) - needed)[len(keys) - needed]
        inside = keys >= threshold
        ranked, keys = ranked[inside], keys[inside]
    tie = None if path_rank is None else path_rank[ranked]
    return ranked[sorted_order(-keys, tie)][:needed]


# rank_hits estimates its threshold from about this many of a layer's scores.
SCORE_SAMPLE = 2048


def rank_hits(
    scores: np.ndarray, hit: np.ndarray, hits: int, needed: int, path_rank: np.ndarray
) -> np.ndarray:
    """Return ``rank_by_score`` of the ``hits`` items marked in ``hit`` (every item with a
    positive score), without listing them all when only a few are needed.

    A threshold is estimated from every ``stride``-th score: when at least ``needed`` items
    score at least as much as it, they hold the first ``needed`` of the hits (every one of
    those scores at least the ``needed``-th best score, which is not below the threshold),
    and ranking them alone gives the same answer. Otherwise every hit is ranked.
    """
    keys = scores.view(np.int64)  # non-negative floats order as their bit patterns
    stride = len(keys) // SCORE_SAMPLE
    if stride > 1 and needed < hits // 2:
        sample = keys[::stride]
        wanted = 2 * (needed // stride) + 16
        if wanted < len(sample):
            threshold = np.partition(sample, len(sample) - wanted)[len(sample) - wanted]
            if threshold > 0:
                above = keys >= threshold
                if np.count_nonzero(above) >= needed:
                    return rank_by_score(np.flatnonzero(above), scores, needed, path_rank)
    return rank_by_score(np.flatnonzero(hit), scores, needed, path_rank)


def sorted_order(keys: np.ndarray, tie: np.ndarray | None = None) -> np.ndarray:
    """Return the positions of ``keys`` (integers) in ascending order, equal keys by ``tie``.

    ``tie`` holds distinct non-negative integers (default: the positions, which makes this
    a stable sort). The same order as a stable sort by ``(key, tie)``, about twice as fast:
    an unstable sort of the keys alone, then a second sort of only the runs of equal keys,
    by (run, tie) packed in one integer.
    """
    order = np.argsort(keys)
    if len(order) < 2:
        return order
    ordered = keys[order]
    same = ordered[1:] == ordered[:-1]
    if not same.any():
        return order
    runs = np.empty(len(order), dtype=np.int64)
    runs[0] = 0
    np.cumsum(~same, out=runs[1:])
    tied = np.zeros(len(order), dtype=bool)
    tied[1:] = same
    tied[:-1] |= same
    at = np.flatnonzero(tied)
    members = order[at]
    ties = members if tie is None else tie[members]
    # runs < len(order) and ties < 2**31 (positions or path ranks): the product fits.
    packed = runs[at] * (int(ties.max()) + 1) + ties
    order[at] = members[np.argsort(packed)]
    return order


def _fit_layer_tokens(trace: LayerTrace, ctx: Context, ranked: np.ndarray, limit: int) -> int:
    """Return how many leading units keep the layer's own estimate within ``limit``."""
    renderer = ctx.renderer
    if not trace.inline:
        # Reference lines joined by "\n": the longest prefix whose length fits, at once.
        _, lengths = trace.index.reference_lines(renderer)
        totals = np.cumsum(lengths[ranked] + 1) - 1
        return int(np.searchsorted(totals, 4 * limit, side="right"))
    # The block alone: header, items and separators exactly as in the output.
    size = len(layer_head(trace, ctx)) + (len("\n</layer>") if renderer.xml else 2)
    separator = 1 if renderer.xml else 2
    first_separator = 1 if renderer.xml else 0
    for position, i in enumerate(leading(ranked)):
        size += len(unit_text(trace, ctx, i)) + (separator if position else first_separator)
        if estimate(size) > limit:
            return position
    return len(ranked)


def recency_field(rule: Rule) -> str:
    """Return the metadata field whose date orders a layer by recency (its currentness field)."""
    return rule.currentness.field if rule.currentness else "updated"


def layer_head(trace: LayerTrace, ctx: Context) -> str:
    if not trace.head:
        trace.head = ctx.renderer.layer_head(trace.layer.key, trace.layer.display_name)
    return trace.head


def project(trace: LayerTrace, ctx: Context, i: int) -> list[str]:
    """4.6: the non-empty facet texts of item i, in the rule's order."""
    item = trace.index.items[i]
    texts = []
    for facet in trace.rule.facets:
        if facet == "body":
            text = item.body_text.rstrip()
        elif facet == "summary":
            text = trace.index.summary(i)[0]
        elif facet == "excerpt":
            text = excerpt(trace, ctx, i)
        else:
            name = facet[5:]
            value = display_value(item.metadata.get(name))
            text = None if value is None else f"{name}: {value}"
        if text:
            texts.append(text)
    return texts


def excerpt(trace: LayerTrace, ctx: Context, i: int) -> str:
    """The first paragraph containing a query term, else the summary."""
    if ctx.terms:
        wanted = set(ctx.terms)
        for paragraph in paragraphs(trace.index.items[i].body_text):
            if wanted.intersection(tokenize(paragraph)):
                return cut(paragraph)
    return trace.index.summary(i)[0]


# At most this many inline unit texts of one index and rendering are shared by resolutions.
SHARED_TEXTS = 16_384


class SharedTexts(dict):
    """Inline unit texts shared by the resolutions of one index and rendering (item -> text)."""

    __slots__ = ()


def share_texts(trace: LayerTrace, ctx: Context) -> None:
    """Let an inline layer's unit texts be rendered once for every resolution when none
    depends on the request: no ``excerpt`` facet (it reads the query terms), no item kept by
    a warn policy (its marker counts the days to ``now``). They depend on the format, the
    rule's facets and whether (and which) dates are shown, which key them."""
    rule = trace.rule
    if not trace.inline or trace.flags is not None or "excerpt" in rule.facets:
        return
    dates = recency_field(rule) if ctx.include_dates else None
    shared = trace.index.kept(("texts", ctx.renderer.format, rule.facets, dates), SharedTexts)
    if len(shared) < SHARED_TEXTS:
        trace.texts = shared


def unit_text(trace: LayerTrace, ctx: Context, i: int, *, reference: bool = False) -> str:
    """Render item i's content unit (or, with ``reference``, its reference line) once."""
    index = trace.index
    if reference or not trace.inline:
        return index.reference_lines(ctx.renderer)[0][i]
    text = trace.texts.get(i)
    if text is None:
        date = None
        if ctx.include_dates:
            recency = index.recency_dates(recency_field(trace.rule))
            if recency.days[i] is not None:
                date = (recency.sources[i], recency.days[i])
        warned = warning(trace, ctx, i)
        text = ctx.renderer.item(
            ref=index.refs[i],
            title=index.titles[i],
            date=date,
            not_current=warned[1] if warned else None,
            texts=project(trace, ctx, i),
        )
        # An item whose text is held elsewhere is not kept in the shared texts (the index
        # keeps nothing derived from it either).
        if trace.texts.__class__ is not SharedTexts or index.items[i].body.__class__ is str:
            trace.texts[i] = text
    return text


def admission_order(traces: list[LayerTrace]) -> list[LayerTrace]:
    """4.7: the selected layers, required ones first, each group in render order."""
    selected = [t for t in traces if t.selected]
    return [t for t in selected if t.rule.required] + [t for t in selected if not t.rule.required]


def admit(traces: list[LayerTrace], ctx: Context) -> OutputMeter:
    """Admit units in sequence while the whole output's estimate stays within the budget.

    The admission sequence (4.7) is: the content units of each layer in admission order,
    then the overflow references of each. Admission stops at the first unit that does not
    fit. Runs of reference lines are admitted at once (their lengths do not depend on the
    request); inline items one by one, since each is rendered for this request.
    """
    budget = ctx.profile.budget
    meter = OutputMeter(ctx.renderer)
    ordered = admission_order(traces)
    for trace in ordered:
        if not trace.inline:
            trace.admitted_units = admit_references(trace, ctx, meter, trace.units)
            if trace.admitted_units < len(trace.units):
                return meter
            continue
        head = len(layer_head(trace, ctx))
        for i in leading(trace.units):
            cost = meter.cost_item(head, trace.admitted_units, len(unit_text(trace, ctx, i)))
            if estimate(meter.length + cost) > budget:
                return meter
            meter.add_item(cost, trace.admitted_units)
            trace.admitted_units += 1
    for trace in ordered:
        for overflow in (trace.limited, trace.beyond):
            admitted = admit_references(trace, ctx, meter, overflow)
            trace.admitted_overflow += admitted
            if admitted < len(overflow):
                return meter
        assert len(trace.beyond) == trace.beyond_count, "a summary ranked too few references"
    return meter


def admit_references(trace: LayerTrace, ctx: Context, meter: OutputMeter, indices) -> int:
    """Admit the longest prefix of a run of reference lines that fits; return its length."""
    if not len(indices):
        return 0
    _, lengths = trace.index.reference_lines(ctx.renderer)
    costs = lengths[indices] + 1
    costs[0] = meter.cost_reference(int(costs[0]) - 1)
    totals = np.cumsum(costs)
    # estimate(length) <= budget exactly when length <= 4 * budget.
    count = int(np.searchsorted(totals, 4 * ctx.profile.budget - meter.length, side="right"))
    if count:
        meter.add_references(count, int(totals[count - 1]))
    return count


def render(traces: list[LayerTrace], ctx: Context) -> str:
    """6: assemble the output from the admitted units, in render order."""
    renderer = ctx.renderer
    blocks = []
    lines = []
    for trace in traces:
        if not trace.selected:
            continue
        admitted = trace.units[: trace.admitted_units]
        reference_lines, lengths = trace.index.reference_lines(renderer)
        if trace.inline:
            if len(admitted):
                texts = [unit_text(trace, ctx, i) for i in admitted.tolist()]
                block = renderer.layer_block(layer_head(trace, ctx), texts)
                trace.block_characters = len(block)
                blocks.append(block)
        elif len(admitted):
            trace.block_characters = int(lengths[admitted].sum()) + len(admitted) - 1
            lines += reference_lines[admitted].tolist()
        for overflow in admitted_overflow(trace):
            if len(overflow):
                lines += reference_lines[overflow].tolist()
    return renderer.output(blocks, lines)


def run_stages(
    indexes: list[LayerIndex], profile: Profile, request: Request, consumer: Consumer
) -> tuple[list[LayerTrace], Context, str]:
    """Run the stages for a parsed request and its profile over the layers' indexes.

    Return the traces in render order, the context and the output text.
    """
    traces, ctx = select_and_materialize(indexes, profile, request, consumer)
    meter = admit(traces, ctx)
    text = render(traces, ctx)
    assert len(text) == meter.length, "output length arithmetic out of step with rendering"
    return traces, ctx, text


def select_and_materialize(
    indexes: list[LayerIndex], profile: Profile, request: Request, consumer: Consumer
) -> tuple[list[LayerTrace], Context]:
    """Run the stages before admission (availability, applicability, the decision, and the
    materialization of the selected layers); return the traces in render order and the
    context. Admission is the only stage that reads the budget (``resolver.sweep`` replays it
    for every budget from here)."""
    ctx = Context(
        profile=profile,
        request=request,
        terms=query_terms(request.message),
        renderer=Renderer(request.format or consumer.format),
        include_dates=consumer.include_currentness,
        now_micros=instant_microseconds(request.now),
    )
    traces = [LayerTrace(index, profile.rule_for(index.layer.key)) for index in indexes]
    traces.sort(key=lambda t: (-t.rule.priority, t.layer.key))
    for trace in traces:
        assess_availability(trace, ctx)
        missing, no_match = assess_applicability(trace, ctx)
        decide(trace, ctx, missing, no_match)
        if trace.selected:
            materialize(trace, ctx)
    return traces, ctx

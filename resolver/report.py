"""The resolution JSON (SPEC §7), produced in this one place from the layer traces."""

import json

import numpy as np

from resolver import reasons as R
from resolver.index import (
    MICROSECONDS_PER_DAY,
    REFERENCE_REASONS,
    STALE_FLAG,
    UNDATED,
    UNKNOWN_FLAG,
)
from resolver.text import estimate
from resolver.trace import admitted_overflow, warning
from resolver.values import format_instant


def json_text(value, *, pretty: bool = False) -> str:
    """Serialize a resolution (or an error) exactly as the CLI, the API and ``manage.py`` do.

    Compact by default: the C encoder is several times faster than an indented dump, which
    matters for a resolution with thousands of references. ``pretty`` indents for people.
    """
    if pretty:
        return json.dumps(value, ensure_ascii=False, indent=2) + "\n"
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


def resolution_json(traces, ctx, text: str) -> dict:
    """Return the resolution of a request as plain JSON-able objects.

    With ``detail: summary`` (SPEC §7.1) the lists that grow with the layer are never built:
    only what is rendered is listed, with the full lengths in ``counts`` / ``referenceCounts``.
    """
    profile = ctx.profile
    summary = ctx.request.detail == "summary"
    blockers, warnings = status_findings(traces)
    status = R.BLOCKED if blockers else R.RENDERING_INCOMPLETE if warnings else R.RESOLVED
    tokens = estimate(len(text))
    by_layer = {}
    for trace in traces:
        if trace.selected and trace.admitted_units:
            by_layer[trace.layer.key] = {
                "characters": trace.block_characters,
                "estimatedTokens": estimate(trace.block_characters),
            }
    resolution = {
        "resolver": R.RESOLVER_ID,
        "profile": {
            "key": profile.key,
            "name": profile.name,
            "consumer": profile.consumer,
            "objective": profile.objective,
            "environment": profile.environment,
        },
        "now": format_instant(ctx.request.now),
        "status": status,
        "blockers": blockers,
        "warnings": warnings,
        "currentness": resolution_currentness(traces),
        "currentnessExcluded": [] if summary else currentness_excluded(traces, ctx),
        "budget": {
            "limit": profile.budget,
            "estimatedTokens": tokens,
            "remaining": profile.budget - tokens,
            "characters": len(text),
            "byLayer": by_layer,
        },
        "layers": [layer_record(trace, ctx, summary=summary) for trace in traces],
        "references": references(traces, rendered_only=summary),
        "output": None
        if blockers
        else {"format": ctx.renderer.format, "text": text, "estimatedTokens": tokens},
    }
    if summary:
        resolution["referenceCounts"] = reference_counts(traces)
        resolution["detail"] = "summary"
    return resolution


def status_findings(traces) -> tuple[list, list]:
    """4.8: blockers and warnings of the required layers, in render order."""
    blockers, warnings = [], []
    for trace in traces:
        if not trace.rule.required:
            continue
        key = trace.layer.key
        if not trace.selected:
            blockers.append(
                {"code": R.MISSING_REQUIRED_CONTEXT, "layer": key, "detail": trace.reason}
            )
        elif not len(trace.units):
            blockers.append(
                {"code": R.MISSING_REQUIRED_CONTEXT, "layer": key, "detail": R.NO_CONTENT}
            )
        elif trace.admitted_units == 0:
            blockers.append({"code": R.REQUIRED_CONTEXT_OVER_BUDGET, "layer": key, "detail": None})
        elif trace.admitted_units < len(trace.units):
            warnings.append({"code": R.RENDERING_INCOMPLETE, "layer": key, "detail": None})
    return blockers, warnings


def resolution_currentness(traces) -> str:
    flags = set()
    for trace in traces:
        if trace.inline and trace.flags is not None:
            flags.update(np.unique(trace.flags[trace.units[: trace.admitted_units]]).tolist())
    if STALE_FLAG in flags:
        return R.NOT_CURRENT
    if UNKNOWN_FLAG in flags:
        return R.UNKNOWN
    return R.CURRENT


def currentness_excluded(traces, ctx) -> list:
    """The items currentness excluded, by layer in render order, then path."""
    out = []
    for trace in traces:
        if not len(trace.excluded):
            continue
        key = trace.layer.key
        dates = trace.index.field_dates(trace.rule.currentness.field)
        paths = trace.index.paths
        for i in trace.excluded.tolist():
            micros = int(dates.micros[i])
            if micros == UNDATED:
                reason, day, age = R.UNKNOWN, None, None
            else:
                reason, day = R.STALE, dates.days[i]
                age = (ctx.now_micros - micros) // MICROSECONDS_PER_DAY
            out.append(
                {"layer": key, "item": paths[i], "reason": reason, "date": day, "ageDays": age}
            )
    return out


def layer_record(trace, ctx, *, summary: bool = False) -> dict:
    """Return one layer's record; a summary lists only what is rendered, plus ``counts``."""
    rule = trace.rule
    layer = trace.layer
    record = {
        "layer": layer.key,
        "name": layer.display_name,
        "ruleSource": rule.source,
        "participation": rule.participation,
        "mode": rule.mode,
        "required": rule.required,
        "priority": rule.priority,
        "available": {"state": trace.available, "items": trace.index.count},
        "applicable": {
            "state": trace.applicable,
            "reason": trace.applicable_reason,
            "candidates": trace.candidate_count if trace.applicable != R.SKIPPED else 0,
        },
        "currentness": {
            "state": trace.currentness_state,
            "current": trace.current,
            "stale": trace.stale,
            "unknown": trace.unknown,
            "excluded": len(trace.excluded),
            "warned": trace.warned,
        },
        "decision": {"kind": trace.kind, "reason": trace.reason, "detail": trace.detail},
    }
    if not trace.selected:
        record["materialized"] = {"items": [], "references": []}
        record["projected"] = {"facets": [], "derived": {}}
        record["rendered"] = {"items": [], "trimmed": [], "characters": 0, "estimatedTokens": 0}
        if summary:
            record["counts"] = {"items": 0, "references": 0, "trimmed": 0}
        return record
    index = trace.index
    admitted = trace.admitted_units
    if summary:
        # Rendered overflow references are a prefix of limited + beyond; NOT_RETRIEVED never is.
        limited, beyond = admitted_overflow(trace)
        skipped = trace.not_retrieved[:0]
        units = trace.units[:admitted]
    else:
        limited, beyond, skipped = trace.limited, trace.beyond, trace.not_retrieved
        units = trace.units
    references = []
    for indices, reason in (
        (limited, R.LAYER_TOKEN_LIMIT),
        (beyond, R.BEYOND_MAX_ITEMS),
        (skipped, R.NOT_RETRIEVED),
    ):
        if len(indices):
            references += index.materialized_reference_records(indices, reason)
    record["materialized"] = {
        "items": materialized_items(trace, ctx, units),
        "references": references,
    }
    derived = {}
    if "summary" in rule.facets:
        derived["summary"] = index.derived_summaries(trace.units)
    if "excerpt" in rule.facets:
        derived["excerpt"] = len(trace.units)
    record["projected"] = {"facets": list(rule.facets), "derived": derived}
    record["rendered"] = {
        "items": index.path_list(trace.units[:admitted]),
        "trimmed": [] if summary else index.path_list(trace.units[admitted:]),
        "characters": trace.block_characters,
        "estimatedTokens": estimate(trace.block_characters),
    }
    if summary:
        record["counts"] = {
            "items": len(trace.units),
            "references": len(trace.limited) + trace.beyond_count + trace.not_retrieved_count,
            "trimmed": len(trace.units) - admitted,
        }
    return record


def materialized_items(trace, ctx, units: np.ndarray) -> list[dict]:
    """The given content units with their score, matched terms, date and not-current flag.

    Units without a score or a flag share the index's prepared records; the others (items
    with a query term, items kept by a warn policy) get a record of their own.
    """
    index = trace.index
    field = trace.rule.currentness.field if trace.rule.currentness else "updated"
    scores = trace.scores
    records = index.unit_records(units, field, scored=scores is not None)
    special = np.zeros(len(units), dtype=bool)
    if scores is not None:
        special |= trace.hit[units]
    if trace.flags is not None:
        special |= trace.flags[units] != 0
    positions = np.flatnonzero(special).tolist()
    if not positions:
        return records
    days = index.recency_dates(field).days
    chosen = units[positions].tolist()
    unit_scores = scores[chosen].tolist() if scores is not None else [None] * len(chosen)
    for position, i, score in zip(positions, chosen, unit_scores, strict=True):
        flagged = warning(trace, ctx, i)
        hit = scores is not None and bool(trace.hit[i])
        records[position] = {
            "item": index.paths[i],
            "score": None if score is None else round(score, 6),
            "matchedTerms": index.matched_terms(ctx.terms, i) if hit else [],
            "date": days[i],
            "notCurrent": flagged[0] if flagged else None,
        }
    return records


def references(traces, *, rendered_only: bool = False) -> list:
    """Every reference of the selected layers, grouped by layer in render order.

    Within a layer: content units (trimmed inline items, or on-demand references), then
    overflow (token-limited before beyond-maxItems), then the items not retrieved. With
    ``rendered_only`` (a summary) the references that are not rendered are never built.
    """
    out: list[dict] = []
    for trace in traces:
        if not trace.selected:
            continue
        admitted = trace.admitted_units
        units = trace.units
        shown_limited, shown_beyond = admitted_overflow(trace)
        parts = [
            (units[:admitted], R.ON_DEMAND, True) if not trace.inline else None,
            (units[admitted:], R.ON_DEMAND if not trace.inline else R.BUDGET_TRIMMED, False),
            (shown_limited, R.LAYER_TOKEN_LIMIT, True),
            (trace.limited[len(shown_limited) :], R.LAYER_TOKEN_LIMIT, False),
            (shown_beyond, R.BEYOND_MAX_ITEMS, True),
            (trace.beyond[len(shown_beyond) :], R.BEYOND_MAX_ITEMS, False),
            (trace.not_retrieved, R.NOT_RETRIEVED, False),
        ]
        for part in parts:
            if part is None:
                continue
            indices, reason, rendered = part
            if len(indices) and (rendered or not rendered_only):
                out += trace.index.reference_records(indices, reason, rendered)
    return out


def reference_counts(traces) -> dict:
    """SPEC §7.1: the number of entries of the full ``references`` list per reason."""
    counts = dict.fromkeys(REFERENCE_REASONS, 0)
    for trace in traces:
        if not trace.selected:
            continue
        content = R.BUDGET_TRIMMED if trace.inline else R.ON_DEMAND
        counts[content] += len(trace.units) - (trace.admitted_units if trace.inline else 0)
        counts[R.LAYER_TOKEN_LIMIT] += len(trace.limited)
        counts[R.BEYOND_MAX_ITEMS] += trace.beyond_count
        counts[R.NOT_RETRIEVED] += trace.not_retrieved_count
    return {reason: count for reason, count in counts.items() if count}

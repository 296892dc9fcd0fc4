"""The resolution JSON (SPEC §7), produced in this one place from the layer traces."""

import json

from resolver import reasons as R
from resolver.text import estimate
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
        "currentnessExcluded": [] if summary else currentness_excluded(traces),
        "budget": {
            "limit": profile.budget,
            "estimatedTokens": tokens,
            "remaining": profile.budget - tokens,
            "characters": len(text),
            "byLayer": by_layer,
        },
        "layers": [layer_record(trace, ctx.terms, summary=summary) for trace in traces],
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
        elif not trace.units:
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
        if trace.inline and trace.warned:
            for i in trace.units[: trace.admitted_units]:
                if i in trace.warned:
                    flags.add(trace.warned[i][0])
    if R.STALE in flags:
        return R.NOT_CURRENT
    if R.UNKNOWN in flags:
        return R.UNKNOWN
    return R.CURRENT


def currentness_excluded(traces) -> list:
    out = []
    for trace in traces:
        items = trace.index.items
        for i, reason, day, age in sorted(trace.excluded, key=lambda e: items[e[0]].path):
            out.append(
                {
                    "layer": trace.layer.key,
                    "item": items[i].path,
                    "reason": reason,
                    "date": day,
                    "ageDays": age,
                }
            )
    return out


def layer_record(trace, terms: tuple[str, ...], *, summary: bool = False) -> dict:
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
        "available": {"state": trace.available, "items": trace.index.size},
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
            "warned": len(trace.warned),
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
    paths = trace.index.paths
    admitted = trace.admitted_units
    if summary:
        # Rendered overflow references are a prefix of limited + beyond; NOT_RETRIEVED never is.
        shown = trace.admitted_overflow
        limited = trace.limited[:shown]
        beyond = trace.beyond[: max(shown - len(trace.limited), 0)]
        skipped = []
        units = trace.units[:admitted]
    else:
        limited, beyond, skipped = trace.limited, trace.beyond, trace.not_retrieved
        units = trace.units
    record["materialized"] = {
        "items": materialized_items(trace, terms, units),
        "references": [{"item": paths[i], "reason": R.LAYER_TOKEN_LIMIT} for i in limited]
        + [{"item": paths[i], "reason": R.BEYOND_MAX_ITEMS} for i in beyond]
        + [{"item": paths[i], "reason": R.NOT_RETRIEVED} for i in skipped],
    }
    derived = {}
    if "summary" in rule.facets:
        derived["summary"] = sum(1 for i in trace.units if trace.index.summary_derived(i))
    if "excerpt" in rule.facets:
        derived["excerpt"] = len(trace.units)
    record["projected"] = {"facets": list(rule.facets), "derived": derived}
    record["rendered"] = {
        "items": [paths[i] for i in trace.units[:admitted]],
        "trimmed": [] if summary else [paths[i] for i in trace.units[admitted:]],
        "characters": trace.block_characters,
        "estimatedTokens": estimate(trace.block_characters),
    }
    if summary:
        record["counts"] = {
            "items": len(trace.units),
            "references": len(trace.limited) + len(trace.beyond) + len(trace.not_retrieved),
            "trimmed": len(trace.units) - admitted,
        }
    return record


def materialized_items(trace, terms: tuple[str, ...], units) -> list[dict]:
    """The given content units with their score, matched terms, date and not-current flag."""
    rule = trace.rule
    index = trace.index
    paths = index.paths
    days = index.recency_days(rule.currentness.field if rule.currentness else "updated")
    warned = trace.warned
    scores = trace.scores
    if scores is None:
        return [
            {
                "item": paths[i],
                "score": None,
                "matchedTerms": [],
                "date": days[i],
                "notCurrent": warned[i][0] if i in warned else None,
            }
            for i in units
        ]
    return [
        {
            "item": paths[i],
            "score": round(scores.get(i, 0.0), 6),
            "matchedTerms": index.matched_terms(terms, i) if i in scores else [],
            "date": days[i],
            "notCurrent": warned[i][0] if i in warned else None,
        }
        for i in units
    ]


def reference_records(trace, indices, reason: str, rendered: bool) -> list[dict]:
    """The reference records of some items of one layer, all with one reason and flag."""
    key = trace.layer.key
    index = trace.index
    refs, paths, titles = index.refs, index.paths, index.titles
    return [
        {
            "ref": refs[i],
            "layer": key,
            "item": paths[i],
            "title": titles[i],
            "reason": reason,
            "rendered": rendered,
        }
        for i in indices
    ]


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
        if trace.inline:
            if not rendered_only:
                out += reference_records(trace, trace.units[admitted:], R.BUDGET_TRIMMED, False)
        else:
            out += reference_records(trace, trace.units[:admitted], R.ON_DEMAND, True)
            if not rendered_only:
                out += reference_records(trace, trace.units[admitted:], R.ON_DEMAND, False)
        # Admitted overflow references are a prefix of limited + beyond.
        shown = trace.admitted_overflow
        limited, beyond = trace.limited, trace.beyond
        out += reference_records(trace, limited[:shown], R.LAYER_TOKEN_LIMIT, True)
        if not rendered_only:
            out += reference_records(trace, limited[shown:], R.LAYER_TOKEN_LIMIT, False)
        shown = max(shown - len(limited), 0)
        out += reference_records(trace, beyond[:shown], R.BEYOND_MAX_ITEMS, True)
        if not rendered_only:
            out += reference_records(trace, beyond[shown:], R.BEYOND_MAX_ITEMS, False)
            out += reference_records(trace, trace.not_retrieved, R.NOT_RETRIEVED, False)
    return out


def reference_counts(traces) -> dict:
    """SPEC §7.1: the number of entries of the full ``references`` list per reason."""
    counts = dict.fromkeys(
        (R.ON_DEMAND, R.LAYER_TOKEN_LIMIT, R.BEYOND_MAX_ITEMS, R.NOT_RETRIEVED, R.BUDGET_TRIMMED),
        0,
    )
    for trace in traces:
        if not trace.selected:
            continue
        content = R.BUDGET_TRIMMED if trace.inline else R.ON_DEMAND
        counts[content] += len(trace.units) - (trace.admitted_units if trace.inline else 0)
        counts[R.LAYER_TOKEN_LIMIT] += len(trace.limited)
        counts[R.BEYOND_MAX_ITEMS] += len(trace.beyond)
        counts[R.NOT_RETRIEVED] += len(trace.not_retrieved)
    return {reason: count for reason, count in counts.items() if count}

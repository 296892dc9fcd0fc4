"""What the studio shows of a resolution, in words: the decision timeline, the budget meter,
the status messages, "what changed" and history entries.

Everything is read from the SPEC §7 resolution JSON (usually its §7.1 summary, whose lists
are cut to what is rendered, with the full lengths in ``counts``): nothing here reaches into
the engine. Every list a page shows is bounded (``ROWS`` rows per stage), so a page costs in
proportion to what a person can read, not to the size of a layer.
"""

from typing import Any

from django.utils.html import format_html

import resolver.reasons as R
from profiles.authoring.rules import RULE_FIELD_BY_MODEL
from profiles.resolution.explain import explain, explain_fragment
from profiles.studio.item_rows import CUT_REASONS, ROWS

DECISION_KINDS = {R.INLINE: "inline", R.ON_DEMAND_KIND: "on request", R.OMITTED: "omitted"}


def _plural(number: int, word: str) -> str:
    return f"{number:,} {word}{'' if number == 1 else 's'}"


# --- the timeline -----------------------------------------------------------------------------


def Stage(name: str, state: str, code: str, sentence: str, tone: str = "neutral") -> dict:
    """Return one stage of a layer's timeline (a dict: templates look dict keys up fastest).

    ``tone`` is ok | warn | bad | neutral | skipped.
    """
    return {"name": name, "state": state, "code": code, "sentence": sentence, "tone": tone}


def layer_counts(record: dict) -> dict[str, int]:
    """Return the unit counts of a layer record (a full resolution or a summary)."""
    counts = record.get("counts")
    materialized, rendered = record["materialized"], record["rendered"]
    if counts is None:  # a full resolution lists everything
        counts = {
            "items": len(materialized["items"]),
            "references": len(materialized["references"]),
            "trimmed": len(rendered["trimmed"]),
        }
    currentness = record["currentness"]
    return {
        "units": counts["items"],
        "admitted": len(rendered["items"]),
        "trimmed": counts["trimmed"],
        "references": counts["references"],
        "not_current": currentness.get("excluded", 0) if currentness["state"] == R.ASSESSED else 0,
    }


def layer_reference_reasons(record: dict, reference_counts: dict | None = None) -> dict | None:
    """Return a layer's references counted by reason: from ``reference_counts`` (by layer key,
    as ``profile_resolve_with_reference_counts`` gives them) or, for a full resolution, from
    the record's own list; None for a summary record without them (it has the total only)."""
    if reference_counts is not None:
        return reference_counts.get(record["layer"], {})
    if "counts" in record:
        return None
    reasons: dict[str, int] = {}
    for reference in record["materialized"]["references"]:
        reasons[reference["reason"]] = reasons.get(reference["reason"], 0) + 1
    return reasons


def layer_stages(record: dict, reasons: dict | None = None) -> list[dict]:
    """Return the seven stages of one layer record, each with state, code and a sentence.

    ``reasons`` are the layer's references counted by reason (``layer_reference_reasons``),
    so that the items offered as references are counted apart from those not retrieved.
    """
    if reasons is None:
        reasons = layer_reference_reasons(record)
    stages = []
    available = record["available"]
    stages.append(
        Stage(
            "Available",
            available["state"],
            available["state"],
            format_html(
                "{} ({}).",
                explain(available["state"]).rstrip("."),
                _plural(available["items"], "item"),
            ),
            "ok" if available["state"] == R.MATERIAL_PRESENT else "bad",
        )
    )
    applicable = record["applicable"]
    if applicable["state"] == R.SKIPPED:
        stages.append(Stage("Applicable", R.SKIPPED, "", explain(R.SKIPPED), "skipped"))
    else:
        stages.append(
            Stage(
                "Applicable",
                applicable["state"],
                applicable["reason"] or "",
                format_html(
                    "{} {} of {} considered.",
                    explain(applicable["reason"]),
                    _plural(applicable["candidates"], "candidate"),
                    f"{available['items']:,}",
                ),
                {R.APPLICABLE: "ok", R.UNKNOWN: "warn"}.get(applicable["state"], "bad"),
            )
        )
    current = record["currentness"]
    if current["state"] == R.ASSESSED:
        sentence = format_html(
            "{} current, {} stale, {} undated; {} excluded, {} kept with a warning.",
            current["current"],
            current["stale"],
            current["unknown"],
            current["excluded"],
            current["warned"],
        )
        tone = "warn" if current["excluded"] or current["warned"] else "ok"
    else:
        sentence, tone = explain(current["state"]), "skipped"
    stages.append(Stage("Currentness", current["state"], current["state"], sentence, tone))
    decision = record["decision"]
    sentence = explain(decision["reason"])
    if decision.get("detail"):
        sentence = format_html("{} {}", sentence, explain(decision["detail"]))
    stages.append(
        Stage(
            "Decision",
            decision["kind"],
            decision["reason"],
            sentence,
            {R.INLINE: "ok", R.ON_DEMAND_KIND: "ok"}.get(decision["kind"], "bad"),
        )
    )
    if decision["kind"] == R.OMITTED:
        for name in ("Materialized", "Projected", "Rendered"):
            stages.append(Stage(name, R.SKIPPED, "", explain(R.SKIPPED), "skipped"))
        return stages
    counts = layer_counts(record)
    on_demand = decision["kind"] == R.ON_DEMAND_KIND
    units = _plural(counts["units"], "reference" if on_demand else "item")
    parts = [f"{units} kept"]
    if reasons is None:  # a summary's total: overflow and items not retrieved together
        if counts["references"]:
            parts.append(
                f"{_plural(counts['references'], 'other item')} offered as references "
                "or not retrieved"
            )
    else:
        # NOT_RETRIEVED references are reported, never offered (SPEC §4.5): counted apart.
        offered = sum(reasons.get(reason, 0) for reason in CUT_REASONS)
        if offered and not on_demand:
            parts.append(f"{_plural(offered, 'other item')} offered as references")
        if reasons.get(R.NOT_RETRIEVED):
            parts.append(f"{reasons[R.NOT_RETRIEVED]:,} not retrieved")
    stages.append(
        Stage(
            "Materialized",
            f"{counts['units']:,} kept",
            "",
            format_html("{}.", "; ".join(parts)),
            "ok" if counts["units"] else "warn",
        )
    )
    projected = record["projected"]
    stages.append(
        Stage(
            "Projected",
            ", ".join(projected["facets"]),
            "",
            format_html("Each inline item shows: {}.", ", ".join(projected["facets"]) or "—")
            if decision["kind"] == R.INLINE
            else "References show their title only.",
            "neutral",
        )
    )
    rendered = record["rendered"]
    admitted, trimmed = counts["admitted"], counts["trimmed"]
    if trimmed:
        sentence = format_html(
            "{} of {} admitted; {} {}",
            f"{admitted:,}",
            f"{admitted + trimmed:,}",
            f"{trimmed:,}",
            explain_fragment(R.BUDGET_TRIMMED),
        )
    else:
        sentence = format_html(
            "{} admitted, {} est. tokens.", _plural(admitted, "unit"), rendered["estimatedTokens"]
        )
    stages.append(
        Stage(
            "Rendered",
            f"{admitted:,} admitted",
            R.BUDGET_TRIMMED if trimmed else "",
            sentence,
            "warn" if trimmed else ("ok" if admitted else "warn"),
        )
    )
    return stages


def layer_timeline(resolution: dict, reference_counts: dict | None = None) -> list[dict]:
    """Return one entry per layer, in render order, with its stages and unit counts.

    ``reference_counts`` (by layer key, then reason) tell a summary's overflow references
    apart from its items not retrieved. The item rows of a layer are not here: the page
    loads them when the layer is opened (``layer_rows``), a stage at a time.
    """
    entries = []
    for record in resolution["layers"]:
        kind = record["decision"]["kind"]
        stages = layer_stages(record, layer_reference_reasons(record, reference_counts))
        entries.append(
            {
                "record": record,
                "key": record["layer"],
                "kind": kind,
                "kind_label": DECISION_KINDS.get(kind, ""),
                "stages": stages,
                "counts": layer_counts(record),
                "collapsed": omitted_line(record, stages) if kind == R.OMITTED else None,
            }
        )
    return entries


def omitted_line(record: dict, stages: list[dict]) -> dict:
    """Return the one line an omitted layer shows instead of its seven stages: why it was
    left out (the decision's reason and detail) and how many stages were not evaluated."""
    decision = record["decision"]
    sentence = explain(decision["reason"])
    if decision.get("detail"):
        sentence = format_html("{} {}", sentence, explain(decision["detail"]))
    return {
        "sentence": sentence,
        "skipped": sum(1 for stage in stages if stage["state"] == R.SKIPPED),
    }


# --- status, meter, output ----------------------------------------------------------------------


def status_messages(resolution: dict) -> list[dict]:
    """Return the blockers and warnings explained in words, in layer render order."""
    records = {record["layer"]: record for record in resolution["layers"]}
    messages = []
    for blocker in resolution["blockers"]:
        record = records.get(blocker["layer"], {})
        name = record.get("name", blocker["layer"])
        decision = record.get("decision") or {}
        if blocker["code"] == R.MISSING_REQUIRED_CONTEXT:
            cause = decision.get("detail") or blocker.get("detail")
            if blocker.get("detail") == R.NO_CONTENT:
                cause = R.NO_CONTENT
            text = format_html(
                "Blocked: the required layer <em>{}</em> is missing — {}.",
                name,
                explain_fragment(cause),
            )
        else:
            text = format_html(
                "Blocked: none of the required layer <em>{}</em> fits the budget of {} est. "
                "tokens.",
                name,
                resolution["budget"]["limit"],
            )
        messages.append({"kind": "blocker", "code": blocker["code"], "text": text})
    for warning in resolution["warnings"]:
        record = records.get(warning["layer"], {})
        counts = layer_counts(record) if record else {"admitted": 0, "trimmed": 0}
        text = format_html(
            "Incomplete: the required layer <em>{}</em> lost {} of {} units to the budget.",
            record.get("name", warning["layer"]),
            f"{counts['trimmed']:,}",
            f"{counts['admitted'] + counts['trimmed']:,}",
        )
        messages.append({"kind": "warning", "code": warning["code"], "text": text})
    return messages


def first_finding(resolution: dict) -> dict | None:
    """Return the first blocker (BLOCKED) or warning (RENDERING_INCOMPLETE) in words, or None
    for a resolved one: the profile list shows it beside the status."""
    messages = status_messages(resolution)
    return messages[0] if messages else None


# Colours of the budget meter's segments, cycled in layer render order.
SEGMENT_COLOURS = 8


def budget_meter(resolution: dict) -> dict:
    """Return the stacked bar of est. tokens per layer against the budget, and how many units
    the budget and the rules' limits left out (listed on demand)."""
    budget = resolution["budget"]
    limit, used = budget["limit"], budget["estimatedTokens"]
    scale = max(limit, used, 1)
    segments, offset = [], 0.0
    for record in resolution["layers"]:
        figures = budget["byLayer"].get(record["layer"])
        if not figures:
            continue
        width = 100.0 * figures["estimatedTokens"] / scale
        segments.append(
            {
                "layer": record["layer"],
                "name": record["name"],
                "tokens": figures["estimatedTokens"],
                "x": round(offset, 3),
                "width": round(width, 3),
                "colour": len(segments) % SEGMENT_COLOURS,
            }
        )
        offset += width
    rest = used - sum(segment["tokens"] for segment in segments)
    if rest > 0:
        segments.append(
            {
                "layer": "",
                "name": "references and separators",
                "tokens": rest,
                "x": round(offset, 3),
                "width": round(100.0 * rest / scale, 3),
                "colour": "rest",
            }
        )
    return {
        "limit": limit,
        "used": used,
        "remaining": budget["remaining"],
        "over": used > limit,
        "limit_x": round(100.0 * limit / scale, 3),
        "segments": segments,
        "trimmed_count": cut_count(resolution),
        "cuts": cut_counts(resolution),
        "characters": budget["characters"],
    }


def cut_counts(resolution: dict) -> dict[str, int]:
    """Return how many units are not in the text because the budget trimmed them
    (``budget``) and because the rules' maxItems/maxTokens cut them (``rules``), for a full
    resolution or a summary."""
    trimmed = sum(layer_counts(record)["trimmed"] for record in resolution["layers"])
    if "referenceCounts" in resolution:
        rendered = sum(
            1
            for ref in resolution["references"]
            if ref["rendered"] and ref["reason"] in CUT_REASONS
        )
        cut = sum(resolution["referenceCounts"].get(reason, 0) for reason in CUT_REASONS)
        return {"budget": trimmed, "rules": cut - rendered}
    cut = sum(
        1
        for ref in resolution["references"]
        if not ref["rendered"] and ref["reason"] in CUT_REASONS
    )
    return {"budget": trimmed, "rules": cut}


def cut_count(resolution: dict) -> int:
    """Return how many units were trimmed by the budget or cut by maxItems/maxTokens and are
    not in the text (a full resolution or a summary)."""
    return sum(cut_counts(resolution).values())


def reference_summary(resolution: dict) -> list[dict]:
    """Return how many references each reason produced that are not in the text."""
    counts = dict(resolution.get("referenceCounts") or {})
    if "referenceCounts" not in resolution:
        for ref in resolution["references"]:
            counts[ref["reason"]] = counts.get(ref["reason"], 0) + 1
    for ref in resolution["references"]:
        if ref["rendered"] and ref["reason"] in counts:
            counts[ref["reason"]] -= 1
    return [
        {"reason": reason, "count": count, "text": explain(reason)}
        for reason, count in counts.items()
        if count > 0
    ]


def exclusion_summary(resolution: dict) -> list[dict]:
    """Return the layers with items excluded as not current, with their counts."""
    return [
        {"layer": record["layer"], "name": record["name"], "count": count}
        for record in resolution["layers"]
        if (count := layer_counts(record)["not_current"])
    ]


def output_lines(resolution: dict) -> list[dict]:
    """Return the output text as lines, flagging the not-current ones."""
    output = resolution.get("output")
    if not output or not output["text"]:
        return []
    return [
        {"text": line, "not_current": line.startswith("Not current (") or ' not-current="' in line}
        for line in output["text"].split("\n")[:-1]
    ]


# --- what changed -------------------------------------------------------------------------------


def _context_units(resolution: dict) -> set[tuple[str, str]]:
    units = {
        (record["layer"], path)
        for record in resolution["layers"]
        for path in record["rendered"]["items"]
    }
    units |= {(ref["layer"], ref["item"]) for ref in resolution["references"] if ref["rendered"]}
    return units


def what_changed(saved: dict, draft: dict) -> dict:
    """Return the difference between the saved profile's resolution and the draft's (both
    full or both summaries: only what is rendered is compared)."""
    saved_layers = {record["layer"]: record for record in saved["layers"]}
    decisions, reason_only = [], 0
    for record in draft["layers"]:
        before = saved_layers.get(record["layer"])
        if before is None:
            continue
        old, new = before["decision"], record["decision"]
        if old["kind"] != new["kind"]:
            decisions.append(
                {"layer": record["layer"], "name": record["name"], "before": old, "after": new}
            )
        elif (old["reason"], old["detail"]) != (new["reason"], new["detail"]):
            # Only the reason differs (LAYER_UNAVAILABLE -> EXCLUDED_BY_PROFILE): the layer
            # is in or out of the text as before, so it is counted, not listed.
            reason_only += 1
    before_units, after_units = _context_units(saved), _context_units(draft)
    gained = sorted(f"{layer}/{path}" for layer, path in after_units - before_units)
    lost = sorted(f"{layer}/{path}" for layer, path in before_units - after_units)
    return {
        "decisions": decisions,
        "reason_only": reason_only,
        "gained": gained[:ROWS],
        "gained_more": max(0, len(gained) - ROWS),
        "lost": lost[:ROWS],
        "lost_more": max(0, len(lost) - ROWS),
        "tokens_before": saved["budget"]["estimatedTokens"],
        "tokens_after": draft["budget"]["estimatedTokens"],
        "status_before": saved["status"],
        "status_after": draft["status"],
        "empty": not decisions
        and before_units == after_units
        and saved["budget"]["estimatedTokens"] == draft["budget"]["estimatedTokens"]
        and saved["status"] == draft["status"],
    }


# --- history ---------------------------------------------------------------------------------

HISTORY_ACTIONS = {"+": "created", "~": "changed", "-": "deleted"}


def _shown(value: Any) -> str:
    return "—" if value is None else str(value)


def history_entry(record) -> dict:
    """Return one historical record of a profile or rule in words: when, who, what changed.

    ``record`` comes from ``profile_history_list_with_changes``: its ``changes`` and
    ``consumer_keys`` are loaded.
    """
    layer = getattr(record, "layer", None)
    subject = f"rule {layer.key}" if layer is not None else "profile"
    details = []
    for change in record.changes:
        if change.field in ("updated_at", "updated_by", "position"):
            continue
        old, new = change.old, change.new
        if change.field == "consumer":
            # A profile's consumer is stored by id: name it by its key.
            old = record.consumer_keys.get(old, old)
            new = record.consumer_keys.get(new, new)
        name = RULE_FIELD_BY_MODEL.get(change.field, change.field)
        details.append(f"{name}: {_shown(old)} → {_shown(new)}")
    return {
        "at": record.history_date,
        # No user: written by an import or a management command (e.g. the demo).
        "by": record.history_user.get_username() if record.history_user else "",
        "subject": subject,
        "action": HISTORY_ACTIONS[record.history_type],
        "details": details,
    }

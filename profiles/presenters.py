"""What the studio shows of a resolution, in words: reason sentences, the decision timeline,
the budget meter, "what changed", item rows and history entries.

Everything is read from the SPEC §7 resolution JSON (usually its §7.1 summary, whose lists
are cut to what is rendered, with the full lengths in ``counts``): nothing here reaches into
the engine. Every list a page shows is bounded (``ROWS`` rows per stage), so a page costs in
proportion to what a person can read, not to the size of a layer.
"""

import functools
from typing import Any

from django.utils.html import format_html

import resolver.reasons as R
from profiles.forms import RULE_FIELD_BY_MODEL

# Rows shown per stage before "show more"; the pages after the first hold PAGE rows.
ROWS = 20
PAGE = 100

# --- reason codes in words --------------------------------------------------------------------

# Every state and reason code of SPEC §4 (resolver.reasons), as a sentence fragment a newcomer
# can read. ``{arg}`` is the part after the colon of INPUT_NOT_PROVIDED:<key> / MATCHED:<fields>.
REASON_SENTENCES: dict[str, str] = {
    # Available (4.1)
    R.MATERIAL_PRESENT: "the layer has material to offer",
    R.EMPTY: "the layer has no items",
    R.UNAVAILABLE: "the layer is marked unavailable",
    R.UNKNOWN: "whether the layer is available is unknown",
    # Applicable (4.2)
    R.APPLICABLE: "the layer applies to this request",
    R.NOT_APPLICABLE: "the layer does not apply to this request",
    R.SKIPPED: "not evaluated: an earlier stage already decided",
    R.IN_SCOPE: "the layer's scope includes this consumer and objective",
    R.MATCHED.rstrip(":"): "items matched the request on {arg}",
    R.OBJECTIVE_OUT_OF_SCOPE: "the layer is not meant for this profile's objective",
    R.CONSUMER_OUT_OF_SCOPE: "the layer is not meant for this profile's consumer",
    R.INPUT_NOT_PROVIDED.rstrip(":"): "input {arg} was not provided",
    R.NO_MATCHING_MATERIAL: "no item matches the request's filter values",
    # Currentness (4.4)
    R.ASSESSED: "item dates were checked against the currentness limit",
    R.NOT_ASSESSED: "the rule sets no currentness limit",
    R.STALE: "older than the currentness limit",
    # Decision (4.3)
    R.EXCLUDED_BY_PROFILE: "the profile excludes this layer",
    R.LAYER_UNAVAILABLE: "the layer is unavailable",
    R.AVAILABILITY_UNKNOWN: "the layer's availability is unknown, so it is left out",
    R.LAYER_EMPTY: "the layer has no items",
    R.APPLICABILITY_UNKNOWN: "whether the layer applies cannot be told",
    R.STALE_EXCLUDED: "every candidate was excluded as not current",
    R.INCLUDED_BY_PROFILE: "the profile includes this layer",
    R.INCLUDED_APPLICABLE: "the layer applies and the profile lets it in",
    # References (4.5, 4.7)
    R.ON_DEMAND: "offered on request instead of inline",
    R.BEYOND_MAX_ITEMS: "beyond the rule's maxItems",
    R.LAYER_TOKEN_LIMIT: "over the layer's maxTokens",
    R.NOT_RETRIEVED: "not retrieved: no term of the message matches it",
    R.BUDGET_TRIMMED: "trimmed: the budget ran out",
    # Status (4.8)
    R.RESOLVED: "every required layer is fully rendered",
    R.RENDERING_INCOMPLETE: "a required layer was only partly rendered within the budget",
    R.BLOCKED: "a required layer is missing; no output is produced",
    R.MISSING_REQUIRED_CONTEXT: "the required layer is missing",
    R.REQUIRED_CONTEXT_OVER_BUDGET: "none of the required layer's content fits the budget",
    R.NO_CONTENT: "the layer was selected but has nothing to render",
    # Resolution currentness
    R.CURRENT: "every admitted item is current",
    R.NOT_CURRENT: "some admitted item is stale (kept with a warning)",
}

DECISION_KINDS = {R.INLINE: "inline", R.ON_DEMAND_KIND: "on request", R.OMITTED: "omitted"}
REFERENCE_REASONS = (R.ON_DEMAND, R.BEYOND_MAX_ITEMS, R.LAYER_TOKEN_LIMIT, R.NOT_RETRIEVED)


def reason_code(code: str | None) -> tuple[str, str]:
    """Split ``INPUT_NOT_PROVIDED:key`` into (``INPUT_NOT_PROVIDED``, ``key``)."""
    if not code:
        return "", ""
    head, _, arg = code.partition(":")
    return head, arg


@functools.lru_cache(maxsize=512)
def explain(code: str | None) -> str:
    """Return the sentence of a reason code, with its argument in <code> (escaped)."""
    head, arg = reason_code(code)
    if not head:
        return ""
    sentence = REASON_SENTENCES.get(head)
    if sentence is None:
        return format_html("{}", code)
    text = sentence[0].upper() + sentence[1:] + "."
    if "{arg}" not in text:
        return format_html("{}", text)
    before, after = text.split("{arg}", 1)
    return format_html("{}<code>{}</code>{}", before, arg.replace(",", ", "), after)


@functools.lru_cache(maxsize=512)
def explain_fragment(code: str | None) -> str:
    """Return the lower-case sentence fragment of a code (for "…: <fragment>")."""
    head, arg = reason_code(code)
    sentence = REASON_SENTENCES.get(head, code or "")
    if "{arg}" not in sentence:
        return format_html("{}", sentence)
    before, after = sentence.split("{arg}", 1)
    return format_html("{}<code>{}</code>{}", before, arg.replace(",", ", "), after)


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


def layer_stages(record: dict) -> list[dict]:
    """Return the seven stages of one layer record, each with state, code and a sentence."""
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
    if counts["references"] and not on_demand:
        parts.append(f"{_plural(counts['references'], 'other item')} offered as references")
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


def layer_timeline(resolution: dict) -> list[dict]:
    """Return one entry per layer, in render order, with its stages and unit counts.

    The item rows of a layer are not here: the page loads them when the layer is opened
    (``layer_rows``), a stage at a time.
    """
    entries = []
    for record in resolution["layers"]:
        kind = record["decision"]["kind"]
        entries.append(
            {
                "record": record,
                "key": record["layer"],
                "kind": kind,
                "kind_label": DECISION_KINDS.get(kind, ""),
                "stages": layer_stages(record),
                "counts": layer_counts(record),
            }
        )
    return entries


# --- item rows of one layer (from a full resolution) ------------------------------------------

ROW_FILTERS = {
    "all": "every item",
    "changed": "only what changed",
    "omitted": "only what is left out",
    "trimmed": "only what the budget trimmed",
}
# The groups of a layer's rows, in the order the page shows them.
ROW_GROUPS = {
    "admitted": "In the text",
    "trimmed": "Trimmed by the budget",
    R.ON_DEMAND: "Offered on request",
    R.BEYOND_MAX_ITEMS: "Beyond maxItems",
    R.LAYER_TOKEN_LIMIT: "Over maxTokens",
    R.NOT_RETRIEVED: "Not retrieved",
    "not-current": "Excluded as not current",
}
OMITTED_GROUPS = (
    "trimmed",
    R.BEYOND_MAX_ITEMS,
    R.LAYER_TOKEN_LIMIT,
    R.NOT_RETRIEVED,
    "not-current",
)


def _fates(resolution: dict, layer: str) -> dict[str, list[dict]]:
    """Return the rows of one layer grouped by fate (each row: the engine's item record)."""
    record = next((r for r in resolution["layers"] if r["layer"] == layer), None)
    groups: dict[str, list[dict]] = {name: [] for name in ROW_GROUPS}
    if record is None:
        return groups
    admitted = set(record["rendered"]["items"])
    trimmed = set(record["rendered"]["trimmed"])
    on_demand = record["decision"]["kind"] == R.ON_DEMAND_KIND
    rendered_refs = {
        ref["item"] for ref in resolution["references"] if ref["layer"] == layer and ref["rendered"]
    }
    for item in record["materialized"]["items"]:
        path = item["item"]
        if path in admitted:
            why = R.ON_DEMAND if on_demand else ""
            groups["admitted"].append({**item, "fate": "admitted", "why": why})
        elif path in trimmed:
            groups["trimmed"].append({**item, "fate": "trimmed", "why": R.BUDGET_TRIMMED})
        else:
            groups[R.ON_DEMAND].append({**item, "fate": "not rendered", "why": R.ON_DEMAND})
    for reference in record["materialized"]["references"]:
        rendered = reference["item"] in rendered_refs
        groups[reference["reason"]].append(
            {
                "item": reference["item"],
                "score": None,
                "matchedTerms": [],
                "date": None,
                "notCurrent": None,
                "fate": "reference" if rendered else "not rendered",
                "why": reference["reason"],
            }
        )
    groups["not-current"] = [
        {**entry, "fate": "excluded"}
        for entry in resolution["currentnessExcluded"]
        if entry["layer"] == layer
    ]
    return groups


def layer_rows(
    resolution: dict,
    layer: str,
    *,
    saved: dict | None = None,
    row_filter: str = "all",
) -> list[dict]:
    """Return the groups of one layer's rows: name, label, count and every row (unsliced).

    ``saved`` is the saved profile's full resolution of the same request, for the "changed"
    filter: a row changed when its item's fate differs from the saved one.
    """
    groups = _fates(resolution, layer)
    if row_filter == "changed" and saved is not None:
        before = {
            row["item"]: (name, row["fate"])
            for name, rows in _fates(saved, layer).items()
            for row in rows
        }
        groups = {
            name: [row for row in rows if before.get(row["item"]) != (name, row["fate"])]
            for name, rows in groups.items()
        }
        now = {row["item"] for rows in groups.values() for row in rows}
        draft_items = {row["item"] for rows in _fates(resolution, layer).values() for row in rows}
        gone = [item for item in before if item not in draft_items and item not in now]
        if gone:
            groups["gone"] = [
                {
                    "item": item,
                    "score": None,
                    "matchedTerms": [],
                    "date": None,
                    "notCurrent": None,
                    "fate": "no longer a candidate",
                    "why": "",
                }
                for item in gone
            ]
    elif row_filter == "omitted":
        groups = {name: rows for name, rows in groups.items() if name in OMITTED_GROUPS}
    elif row_filter == "trimmed":
        groups = {"trimmed": groups["trimmed"]}
    return [
        {
            "name": name,
            "label": ROW_GROUPS.get(name, "No longer candidates"),
            "count": len(rows),
            "rows": rows,
        }
        for name, rows in groups.items()
        if rows
    ]


def item_row(row: dict, titles: dict[str, str]) -> dict:
    """Return a row as the items table shows it (title, reason in words)."""
    why = row.get("why") or row.get("reason") or ""
    return {
        **row,
        "title": titles.get(row["item"]) or row["item"],
        "why": why if row["fate"] != "excluded" else "",
        "why_text": explain(why) if why and row["fate"] != "excluded" else "",
        "matched": ", ".join(row.get("matchedTerms") or ()),
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


# Colours of the budget meter's segments, cycled in layer render order.
SEGMENT_COLOURS = 8
CUT_REASONS = (R.BEYOND_MAX_ITEMS, R.LAYER_TOKEN_LIMIT)


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
        "characters": budget["characters"],
    }


def cut_count(resolution: dict) -> int:
    """Return how many units were trimmed by the budget or cut by maxItems/maxTokens and are
    not in the text (a full resolution or a summary)."""
    trimmed = sum(layer_counts(record)["trimmed"] for record in resolution["layers"])
    if "referenceCounts" in resolution:
        rendered = sum(
            1
            for ref in resolution["references"]
            if ref["rendered"] and ref["reason"] in CUT_REASONS
        )
        cut = sum(resolution["referenceCounts"].get(reason, 0) for reason in CUT_REASONS)
        return trimmed + cut - rendered
    return trimmed + sum(
        1
        for ref in resolution["references"]
        if not ref["rendered"] and ref["reason"] in CUT_REASONS
    )


def cut_units(resolution: dict) -> list[dict]:
    """Return every unit trimmed or cut and not in the text (needs a full resolution)."""
    return [
        {"layer": record["layer"], "item": path, "reason": R.BUDGET_TRIMMED}
        for record in resolution["layers"]
        for path in record["rendered"]["trimmed"]
    ] + [
        {"layer": ref["layer"], "item": ref["item"], "reason": ref["reason"]}
        for ref in resolution["references"]
        if not ref["rendered"] and ref["reason"] in CUT_REASONS
    ]


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
    decisions = []
    for record in draft["layers"]:
        before = saved_layers.get(record["layer"])
        if before is None:
            continue
        old, new = before["decision"], record["decision"]
        if (old["kind"], old["reason"], old["detail"]) != (
            new["kind"],
            new["reason"],
            new["detail"],
        ):
            decisions.append(
                {"layer": record["layer"], "name": record["name"], "before": old, "after": new}
            )
    before_units, after_units = _context_units(saved), _context_units(draft)
    gained = sorted(f"{layer}/{path}" for layer, path in after_units - before_units)
    lost = sorted(f"{layer}/{path}" for layer, path in before_units - after_units)
    return {
        "decisions": decisions,
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


def _consumer_keys(ids) -> dict:
    from profiles.models import Consumer

    return dict(Consumer.objects.filter(pk__in=[i for i in ids if i]).values_list("pk", "key"))


def history_entry(record) -> dict:
    """Return one historical record of a profile or rule in words: when, who, what changed."""
    layer = getattr(record, "layer", None)
    subject = f"rule {layer.key}" if layer is not None else "profile"
    details = []
    if record.history_type == "~":
        previous = record.prev_record
        if previous is not None:
            delta = record.diff_against(previous)
            changes = [
                change
                for change in delta.changes
                if change.field not in ("updated_at", "updated_by", "position")
            ]
            # A profile's consumer is stored by id: name it by its key.
            keys = _consumer_keys(
                [value for c in changes if c.field == "consumer" for value in (c.old, c.new)]
            )
            details = []
            for change in changes:
                old, new = change.old, change.new
                if change.field == "consumer":
                    old, new = keys.get(old, old), keys.get(new, new)
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

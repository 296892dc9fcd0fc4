"""A layer's item rows, grouped by what happened to each item, read from a full resolution.

The preview shows a summary; these rows load when a layer is opened: ``ROWS`` per group, then
pages of ``PAGE``, filtered to every item, what changed against the saved profile, what is
left out of the text, or what the budget trimmed.
"""

import resolver.reasons as R
from profiles.resolution.explain import explain

# Rows shown per group before "show more"; the pages after the first hold PAGE rows.
ROWS = 20
PAGE = 100
CUT_REASONS = (R.BEYOND_MAX_ITEMS, R.LAYER_TOKEN_LIMIT)

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


def ranked(rows: list[dict], ranking: list[dict]) -> list[dict]:
    """Return the rows with the rank, score and matched terms of their item in the layer's
    ranking (``CompiledWorkspace.ranking``): every retrieved row, cut by maxItems/maxTokens
    or not, gets them (the resolution's references carry none)."""
    ranks = {entry["item"]: entry for entry in ranking}
    return [
        {
            **row,
            "rank": entry["rank"],
            "score": entry["score"],
            "matchedTerms": entry["matchedTerms"],
        }
        if (entry := ranks.get(row["item"])) is not None and row["fate"] != "excluded"
        else row
        for row in rows
    ]


def score_text(score: float | None) -> str:
    """Return a score as the studio shows it: 3 decimals (the API keeps SPEC's 6), or "—"."""
    return "—" if score is None else f"{score:.3f}"


def item_row(row: dict, titles: dict[str, str]) -> dict:
    """Return a row as the items table shows it (title, rank, score, reason in words)."""
    why = row.get("why") or row.get("reason") or ""
    return {
        **row,
        "rank": row.get("rank"),
        "score_text": score_text(row.get("score")),
        "title": titles.get(row["item"]) or row["item"],
        "why": why if row["fate"] != "excluded" else "",
        "why_text": explain(why) if why and row["fate"] != "excluded" else "",
        "matched": ", ".join(row.get("matchedTerms") or ()),
    }


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

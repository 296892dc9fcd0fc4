"""Rows of entity changes and of an impact across profiles, as a change set's page and an
upload's preview show them (the same entries either way: ``EntityChange.as_dict()``).

A page lists at most ``ENTITY_ROWS`` entity changes and ``IMPACT_ROWS`` impact rows; the
counts above them stay exact, and the rest is said in words.
"""

import json

from profiles.models import ChangeRequest
from profiles.safechange.change_sets import change_set_diff, change_set_shown, change_set_stale
from profiles.safechange.impact import impact_gained_lost

ENTITY_ROWS = 200
IMPACT_ROWS = 200
OP_WORDS = {"create": "created", "update": "changed", "delete": "deleted"}


def shown(value) -> str:
    """Return a document value as a reviewer reads it (JSON; "—" for not given)."""
    if value is None:
        return "—"
    return json.dumps(value, ensure_ascii=False)


def entity_change_rows(changes: list[dict], *, limit: int = ENTITY_ROWS) -> dict:
    """Return the first ``limit`` entity changes as rows (``name``: key, or layer/path) and
    how many more there are."""
    rows = [
        {
            "kind": change["kind"],
            "op": change["op"],
            "op_words": OP_WORDS[change["op"]],
            "name": (
                f"{change['layer']}/{change['path']}" if change["kind"] == "item" else change["key"]
            ),
            "fields": [
                {"path": field["path"], "before": shown(field["from"]), "after": shown(field["to"])}
                for field in change.get("fields") or []
            ],
        }
        for change in changes[:limit]
    ]
    return {"rows": rows, "more": max(0, len(changes) - limit)}


def change_counts(changes: list[dict]) -> list[dict]:
    """Return how many entities of each kind are created, changed and deleted (kinds that
    change, in SPEC order)."""
    counts: dict = {}
    for change in changes:
        counts.setdefault(change["kind"], {"create": 0, "update": 0, "delete": 0})
        counts[change["kind"]][change["op"]] += 1
    return counts_rows(counts)


def counts_rows(counts: dict) -> list[dict]:
    """Return rows of ``{kind: {create, update, delete}}`` counts, kinds with any change."""
    return [
        {"kind": kind, **by_op}
        for kind in ("consumer", "layer", "item", "profile")
        if (by_op := counts.get(kind)) and any(by_op.values())
    ]


def impact_rows(impact: list[dict], *, limit: int = IMPACT_ROWS) -> dict:
    """Return the resolved impact entries as rows (with the refs gained and lost), how many
    more resolved ones are not shown and how many were not resolved (beyond the bound)."""
    resolved = [entry for entry in impact if not entry.get("skipped")]
    rows = []
    for entry in resolved[:limit]:
        gained, lost = impact_gained_lost(entry)
        rows.append({"entry": entry, "gained": gained, "lost": lost})
    return {
        "rows": rows,
        "more": max(0, len(resolved) - limit),
        "skipped": len(impact) - len(resolved),
        "changed": sum(1 for entry in impact if entry.get("changed")),
        "total": len(impact),
    }


def change_set_context(change_request: ChangeRequest, *, material: bool) -> dict:
    """Return what a change set's page shows: its entries with their field diffs, counts, the
    profiles it affects, its impact rows and the entities that moved since it was written.
    Without ``material`` (READ_MATERIAL) its item changes are withheld (``change_set_shown``);
    the counts stay whole."""
    is_open = change_request.status == ChangeRequest.Status.OPEN
    stale = change_set_stale(change_request) if is_open else []
    shown = change_set_shown(change_request, material=material, stale_entities=stale)
    return {
        "entries": entity_change_rows(shown.entity_changes),
        "counts": change_counts(change_set_diff(change_request)),
        "affected": list(change_request.affected_profiles),
        "impact": impact_rows(shown.impact),
        "stale_entities": shown.stale_entities,
        "stale": bool(stale),
        "items_withheld": shown.items_withheld,
    }

"""``CompiledWorkspace.prepare``: what a server builds before it serves (issue 20, item 4).

It builds, for the layers the profiles read, what their first resolutions would build on
first use (postings, filter lookups, dates), nothing for layers no profile reads, and
changes no answer."""

from resolver import compile_workspace

NOW = "2026-11-29T12:00:00Z"


def desk() -> dict:
    def items(prefix: str, count: int, **metadata) -> list[dict]:
        return [
            {
                "path": f"{prefix}-{n:03d}",
                "title": f"{prefix} {n} refund",
                "body": f"Refund number {n} for the card, parcel {n % 7} delayed.",
                "metadata": {"updated": f"2026-11-{1 + n % 28:02d}", **metadata},
            }
            for n in range(count)
        ]

    tickets = items("T", 30)
    for n, ticket in enumerate(tickets):
        ticket["metadata"]["customer_id"] = f"C-{n % 3}"
    return {
        "version": 1,
        "consumers": [{"key": "assistant", "name": "Assistant"}],
        "layers": [
            {"key": "policies", "name": "Policies", "items": items("P", 5)},
            {
                "key": "tickets",
                "name": "Tickets",
                "itemFilter": {"customer_id": "customer_id"},
                "items": tickets,
            },
            {"key": "kb", "name": "Knowledge base", "items": items("K", 20)},
            {"key": "history", "name": "History", "items": items("H", 10)},
            {"key": "notes", "name": "Notes", "items": items("N", 10)},
            {
                "key": "ops",
                "name": "Ops",
                "appliesTo": {"objectives": ["triage"]},
                "items": items("O", 10),
            },
        ],
        "profiles": [
            {
                "key": "support",
                "consumer": "assistant",
                "objective": "answer",
                "budget": 900,
                "rules": {
                    "policies": {"mode": "inline"},
                    "tickets": {
                        "mode": "retrieve",
                        "maxItems": 3,
                        "currentness": {"maxAgeDays": 20, "field": "updated"},
                    },
                    "kb": {"mode": "retrieve", "maxItems": 2},
                    "history": {"mode": "inline", "order": "recency", "maxItems": 2},
                    "notes": {"participation": "exclude"},
                },
            }
        ],
    }


def test_prepare__layers_the_profiles_read__built_before_any_request():
    compiled = compile_workspace(desk())
    index = {ix.layer.key: ix for ix in compiled.indexes}

    assert compiled.prepare() == 4  # policies, tickets, kb, history; not notes nor ops

    assert index["tickets"]._postings is not None
    assert index["kb"]._postings is not None
    assert set(index["tickets"]._filters) == {"customer_id"}
    assert set(index["tickets"]._field_dates) == {"updated"}
    assert set(index["history"]._recency) == {"updated"}
    # Inline in path order needs no postings; a layer no profile reads gets nothing.
    assert index["policies"]._postings is None
    assert index["history"]._postings is None
    for key in ("notes", "ops"):
        assert (index[key]._postings, index[key]._filters, index[key]._field_dates) == (
            None,
            {},
            {},
        )


def test_prepare__answers__byte_for_byte_those_of_a_workspace_never_prepared():
    prepared, lazy = compile_workspace(desk()), compile_workspace(desk())
    prepared.prepare()

    for customer in ("C-0", "C-1", "C-2", "C-9"):
        for message in ("refund for my card", "parcel delayed", ""):
            for detail in ("full", "summary"):
                request = {
                    "profile": "support",
                    "input": {"customer_id": customer, "message": message},
                    "now": NOW,
                    "detail": detail,
                }
                assert prepared.resolve_json(request).data == lazy.resolve_json(request).data

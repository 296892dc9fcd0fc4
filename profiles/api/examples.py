"""The OpenAPI examples of the resolution endpoints: requests, a resolution, their errors."""

from drf_spectacular.utils import OpenApiExample

from profiles.api.exceptions import REF_NOT_AVAILABLE_MESSAGE, error_body

NOW = "2026-11-29T12:00:00Z"

RESOLVE_REQUEST_EXAMPLES = [
    OpenApiExample(
        "By profile key",
        value={
            "profile": "support-answer",
            "input": {"message": "My refund never arrived", "customer_id": "C-1001"},
            "now": NOW,
        },
        request_only=True,
    ),
    OpenApiExample(
        "By consumer and objective",
        value={
            "consumer": "support-assistant",
            "objective": "answer-ticket",
            "input": {"message": "Where is my refund?", "customer_id": "C-1001"},
            "format": "xml",
            "availability": {"carrier-tracking": "unavailable"},
        },
        request_only=True,
    ),
    OpenApiExample(
        "From a saved scenario",
        value={"scenario": "Dana asks about a late refund"},
        request_only=True,
    ),
    OpenApiExample(
        "Summary: only what is rendered (recommended for applications)",
        value={
            "profile": "support-answer",
            "input": {"message": "My refund never arrived", "customer_id": "C-1001"},
            "detail": "summary",
        },
        request_only=True,
    ),
]

RESOLUTION_EXAMPLE = OpenApiExample(
    "A resolution (shortened)",
    value={
        "resolver": "ctxstudio/1",
        "profile": {
            "key": "support-answer",
            "name": "Support answer",
            "consumer": "support-assistant",
            "objective": "answer-ticket",
            "environment": None,
        },
        "now": NOW,
        "status": "RESOLVED",
        "blockers": [],
        "warnings": [],
        "currentness": "CURRENT",
        "currentnessExcluded": [],
        "budget": {
            "limit": 600,
            "estimatedTokens": 30,
            "remaining": 570,
            "characters": 118,
            "byLayer": {"tickets": {"characters": 118, "estimatedTokens": 30}},
        },
        "layers": [
            {
                "layer": "tickets",
                "name": "Customer tickets",
                "ruleSource": "profile",
                "participation": "auto",
                "mode": "inline",
                "required": False,
                "priority": 80,
                "available": {"state": "MATERIAL_PRESENT", "items": 4},
                "applicable": {
                    "state": "APPLICABLE",
                    "reason": "MATCHED:customer_id",
                    "candidates": 1,
                },
                "currentness": {
                    "state": "NOT_ASSESSED",
                    "current": 0,
                    "stale": 0,
                    "unknown": 0,
                    "excluded": 0,
                    "warned": 0,
                },
                "decision": {"kind": "inline", "reason": "INCLUDED_APPLICABLE", "detail": None},
                "materialized": {
                    "items": [
                        {
                            "item": "T-1001",
                            "score": None,
                            "matchedTerms": [],
                            "date": "2026-11-20",
                            "notCurrent": None,
                        }
                    ],
                    "references": [],
                },
                "projected": {"facets": ["body"], "derived": {}},
                "rendered": {
                    "items": ["T-1001"],
                    "trimmed": [],
                    "characters": 118,
                    "estimatedTokens": 30,
                },
            }
        ],
        "references": [],
        "output": {
            "format": "markdown",
            "text": "## Customer tickets\n\n### Refund not received\nThe refund was approved.\n",
            "estimatedTokens": 30,
        },
    },
    response_only=True,
    status_codes=["200"],
)

ERROR_EXAMPLES = [
    OpenApiExample(
        "Invalid request",
        value=error_body(
            "INVALID_REQUEST", "input.message: must be a string or null", "input.message"
        ),
        response_only=True,
        status_codes=["400"],
    ),
    OpenApiExample(
        "Unknown profile",
        value=error_body("PROFILE_NOT_FOUND", 'profile: no profile "nope"', "profile"),
        response_only=True,
        status_codes=["404"],
    ),
]

PREVIEW_EXAMPLES = [
    OpenApiExample(
        "Try a tighter budget and on-demand KB articles",
        value={
            "rules": {"kb": {"mode": "on-demand", "maxItems": 3}},
            "budget": 400,
            "input": {"message": "Where is my refund?", "customer_id": "C-1001"},
            "now": NOW,
        },
        request_only=True,
    ),
    OpenApiExample(
        "Summary of the saved rules",
        value={
            "input": {"message": "Where is my refund?", "customer_id": "C-1001"},
            "detail": "summary",
        },
        request_only=True,
    ),
]

EXPAND_EXAMPLES = [
    OpenApiExample(
        "Expand a reference of the resolution",
        value={
            "profile": "support-answer",
            "input": {"message": "Where is my refund?", "customer_id": "C-1001"},
            "now": NOW,
            "ref": "glossary/chargeback",
        },
        request_only=True,
    ),
    OpenApiExample(
        "The expanded item",
        value={
            "ref": "glossary/chargeback",
            "layer": "glossary",
            "item": "chargeback",
            "title": "Chargeback",
            "body": "A payment reversed by the card issuer.",
            "metadata": {"updated": "2026-10-01"},
        },
        response_only=True,
        status_codes=["200"],
    ),
    OpenApiExample(
        "Not available (whether or not it exists)",
        value=error_body("REF_NOT_AVAILABLE", REF_NOT_AVAILABLE_MESSAGE, "ref"),
        response_only=True,
        status_codes=["404"],
    ),
]

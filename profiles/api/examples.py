"""The OpenAPI examples of the resolution endpoints: requests, a resolution, their errors."""

from profiles.api.exceptions import REF_NOT_AVAILABLE_MESSAGE
from profiles.api.serializers.examples import error_example, request_example, response_example

NOW = "2026-11-29T12:00:00Z"
# The requests' sample inputs: a customer asks about a refund.
REFUND_LATE = {"message": "My refund never arrived", "customer_id": "C-1001"}
REFUND_WHERE = {"message": "Where is my refund?", "customer_id": "C-1001"}
SUPPORT_ANSWER = {"profile": "support-answer", "input": REFUND_LATE}

RESOLVE_REQUEST_EXAMPLES = [
    request_example("By profile key", {**SUPPORT_ANSWER, "now": NOW}),
    request_example(
        "By consumer and objective",
        {
            "consumer": "support-assistant",
            "objective": "answer-ticket",
            "input": REFUND_WHERE,
            "format": "xml",
            "availability": {"carrier-tracking": "unavailable"},
        },
    ),
    request_example("From a saved scenario", {"scenario": "Dana asks about a late refund"}),
    request_example(
        "Summary: only what is rendered (recommended for applications)",
        {**SUPPORT_ANSWER, "detail": "summary"},
    ),
]

RESOLUTION_EXAMPLE = response_example(
    "A resolution (shortened)",
    {
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
    200,
)

ERROR_EXAMPLES = [
    error_example(
        "Invalid request",
        400,
        "INVALID_REQUEST",
        "input.message: must be a string or null",
        "input.message",
    ),
    error_example(
        "Unknown profile", 404, "PROFILE_NOT_FOUND", 'profile: no profile "nope"', "profile"
    ),
]

PREVIEW_EXAMPLES = [
    request_example(
        "Try a tighter budget and on-demand KB articles",
        {
            "rules": {"kb": {"mode": "on-demand", "maxItems": 3}},
            "budget": 400,
            "input": REFUND_WHERE,
            "now": NOW,
        },
    ),
    request_example("Summary of the saved rules", {"input": REFUND_WHERE, "detail": "summary"}),
]

EXPAND_EXAMPLES = [
    request_example(
        "Expand a reference of the resolution",
        {
            "profile": "support-answer",
            "input": REFUND_WHERE,
            "now": NOW,
            "ref": "glossary/chargeback",
        },
    ),
    response_example(
        "The expanded item",
        {
            "ref": "glossary/chargeback",
            "layer": "glossary",
            "item": "chargeback",
            "title": "Chargeback",
            "body": "A payment reversed by the card issuer.",
            "metadata": {"updated": "2026-10-01"},
        },
        200,
    ),
    error_example(
        "Not available (whether or not it exists)",
        404,
        "REF_NOT_AVAILABLE",
        REF_NOT_AVAILABLE_MESSAGE,
        "ref",
    ),
]

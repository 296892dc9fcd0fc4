"""Reason codes in words: one sentence per state and reason code of SPEC §4, keyed by the
constants of ``resolver.reasons`` (a test checks that every code has one), so every page
words them the same way."""

import functools

from django.utils.html import format_html

import resolver.reasons as R

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


# The glossary's sections (the studio's "Reason codes" page), in SPEC §4's order; every code of
# REASON_SENTENCES is in exactly one (a test checks it).
GLOSSARY_SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Available", (R.MATERIAL_PRESENT, R.EMPTY, R.UNAVAILABLE, R.UNKNOWN)),
    (
        "Applicable",
        (
            R.APPLICABLE,
            R.NOT_APPLICABLE,
            R.SKIPPED,
            R.IN_SCOPE,
            R.MATCHED.rstrip(":"),
            R.OBJECTIVE_OUT_OF_SCOPE,
            R.CONSUMER_OUT_OF_SCOPE,
            R.INPUT_NOT_PROVIDED.rstrip(":"),
            R.NO_MATCHING_MATERIAL,
        ),
    ),
    ("Currentness", (R.ASSESSED, R.NOT_ASSESSED, R.STALE, R.CURRENT, R.NOT_CURRENT)),
    (
        "Decision",
        (
            R.EXCLUDED_BY_PROFILE,
            R.LAYER_UNAVAILABLE,
            R.AVAILABILITY_UNKNOWN,
            R.LAYER_EMPTY,
            R.APPLICABILITY_UNKNOWN,
            R.STALE_EXCLUDED,
            R.INCLUDED_BY_PROFILE,
            R.INCLUDED_APPLICABLE,
        ),
    ),
    (
        "References and trimming",
        (R.ON_DEMAND, R.BEYOND_MAX_ITEMS, R.LAYER_TOKEN_LIMIT, R.NOT_RETRIEVED, R.BUDGET_TRIMMED),
    ),
    (
        "Status",
        (
            R.RESOLVED,
            R.RENDERING_INCOMPLETE,
            R.BLOCKED,
            R.MISSING_REQUIRED_CONTEXT,
            R.REQUIRED_CONTEXT_OVER_BUDGET,
            R.NO_CONTENT,
        ),
    ),
)


# What the part after the colon of a code names, as the glossary shows it.
_ARGUMENT_NAMES = {R.MATCHED.rstrip(":"): "fields", R.INPUT_NOT_PROVIDED.rstrip(":"): "key"}


def glossary() -> list[dict]:
    """Return the glossary: one section per stage, each code with its sentence."""
    return [
        {
            "title": title,
            "codes": [
                {
                    "code": code,
                    "shown": f"{code}:{_ARGUMENT_NAMES[code]}" if code in _ARGUMENT_NAMES else code,
                    "text": explain(f"{code}:{_ARGUMENT_NAMES.get(code, '')}"),
                }
                for code in codes
            ],
        }
        for title, codes in GLOSSARY_SECTIONS
    ]


def is_reason_code(code: str | None) -> bool:
    """Tell whether a code (``INPUT_NOT_PROVIDED:key`` too) has a sentence in the glossary."""
    return reason_code(code)[0] in REASON_SENTENCES


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

"""Requests (SPEC §3): validation with the path of the offending field.

Every check here comes before the profile is selected, so a bad request is never answered
with PROFILE_NOT_FOUND; no message echoes a string that breaks the text rule.
"""

import datetime as dt
import math
from dataclasses import dataclass, field

from resolver.errors import INVALID_REQUEST, RequestError
from resolver.limits import TEXT_RULE_MESSAGE, violates_text_rule
from resolver.model import AVAILABILITIES, FORMATS
from resolver.values import canonical, parse_date

REQUEST_FIELDS = (
    "profile",
    "consumer",
    "objective",
    "environment",
    "input",
    "now",
    "format",
    "availability",
    "detail",
)
DETAILS = ("full", "summary")
MAX_INPUT_KEYS = 100
MAX_MESSAGE_CHARS = 20_000


@dataclass(frozen=True)
class Request:
    """A validated request: how the profile is selected, the input, the time and overrides."""

    profile: str | None
    consumer: str | None
    objective: str | None
    environment: str | None
    inputs: dict  # input key -> canonical string, only for provided keys
    message: str | None
    now: dt.datetime
    format: str | None
    availability: dict = field(default_factory=dict)
    detail: str = "full"  # SPEC §7.1: "summary" cuts the lists that grow with the layer


def _fail(path: str, message: str):
    raise RequestError(message, path=path, code=INVALID_REQUEST)


def _check_text(value, path: str) -> None:
    """Refuse a string with a NUL or a lone surrogate (SPEC §2.2 text rule, §3), not echoing it."""
    if isinstance(value, str) and violates_text_rule(value):
        _fail(path, TEXT_RULE_MESSAGE)


def _check_keys(mapping: dict, path: str) -> None:
    """Refuse an object whose key breaks the text rule; the error is at the object's path."""
    for key in mapping:
        if isinstance(key, str) and violates_text_rule(key):
            _fail(path, "a key " + TEXT_RULE_MESSAGE)


def _optional_string(raw: dict, name: str) -> str | None:
    value = raw.get(name)
    if value is None:
        return None
    _check_text(value, name)
    if not isinstance(value, str) or not value:
        _fail(name, "must be a non-empty string")
    return value


def parse_request(raw, *, layer_keys, clock) -> Request:
    """Validate a request dict and return a ``Request``; raise ``RequestError`` otherwise."""
    if not isinstance(raw, dict):
        _fail("", "the request must be an object")
    _check_keys(raw, "")
    for key in raw:
        if key not in REQUEST_FIELDS:
            _fail(str(key), "unknown field")
    profile = _optional_string(raw, "profile")
    consumer = _optional_string(raw, "consumer")
    objective = _optional_string(raw, "objective")
    environment = _optional_string(raw, "environment")
    if profile is not None:
        if consumer is not None or objective is not None or environment is not None:
            _fail("profile", "give either profile or consumer + objective, not both")
    elif consumer is None and objective is None:
        _fail("profile", "give either profile or consumer + objective")
    elif consumer is None:
        _fail("consumer", "is required with objective")
    elif objective is None:
        _fail("objective", "is required with consumer")

    inputs, message = _parse_input(raw.get("input"))

    now_raw = raw.get("now")
    if now_raw is None:
        now = clock()
        now = now.replace(tzinfo=dt.UTC) if now.tzinfo is None else now.astimezone(dt.UTC)
    else:
        _check_text(now_raw, "now")
        parsed = parse_date(now_raw)
        if parsed is None:
            _fail("now", "must be an ISO-8601 date or datetime")
        now = parsed[0]

    fmt = raw.get("format")
    _check_text(fmt, "format")
    if fmt is not None and fmt not in FORMATS:
        _fail("format", "must be one of " + ", ".join(FORMATS))

    availability = raw.get("availability")
    overrides = {}
    if availability is not None:
        if not isinstance(availability, dict):
            _fail("availability", "must be an object")
        _check_keys(availability, "availability")
        for key, state in availability.items():
            _check_text(state, f"availability.{key}")
            if key not in layer_keys:
                _fail(f"availability.{key}", f'layer "{key}" does not exist')
            if state not in AVAILABILITIES:
                _fail(f"availability.{key}", "must be one of " + ", ".join(AVAILABILITIES))
            overrides[key] = state

    detail = raw.get("detail")
    _check_text(detail, "detail")
    if detail is None:
        detail = "full"
    elif detail not in DETAILS:
        _fail("detail", "must be one of " + ", ".join(DETAILS))
    return Request(
        profile, consumer, objective, environment, inputs, message, now, fmt, overrides, detail
    )


def _parse_input(raw) -> tuple[dict, str | None]:
    if raw is None:
        return {}, None
    if not isinstance(raw, dict):
        _fail("input", "must be an object")
    if len(raw) > MAX_INPUT_KEYS:
        _fail("input", f"has {len(raw)} keys; at most {MAX_INPUT_KEYS} are allowed")
    _check_keys(raw, "input")
    inputs = {}
    message = None
    for key, value in raw.items():
        path = f"input.{key}"
        if not isinstance(key, str) or not key:
            _fail("input", "keys must be non-empty strings")
        _check_text(value, path)
        if key == "message":
            if value is not None and not isinstance(value, str):
                _fail(path, "must be a string or null")
            if value is not None and len(value) > MAX_MESSAGE_CHARS:
                _fail(path, f"must be at most {MAX_MESSAGE_CHARS} characters")
            message = value
        elif isinstance(value, (dict, list)):
            _fail(path, "must be a string, number, boolean or null")
        elif isinstance(value, float) and not math.isfinite(value):
            _fail(path, "must be a finite number")
        if value is None or value == "":
            continue
        text = canonical(value)
        if text is None:
            _fail(path, "must be a string, number, boolean or null")
        inputs[key] = text
    return inputs, message

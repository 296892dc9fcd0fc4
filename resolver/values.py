"""Canonical strings and dates (SPEC §3 "Dates", §4.2 "canonical strings")."""

import datetime as dt
import json
import math
import re

_DATE_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(Z|[+-]\d{2}:\d{2})?)?"
)
UTC = dt.UTC


def parse_date(value) -> tuple[dt.datetime, bool] | None:
    """Return ``(instant in UTC, is_date_only)`` for a date value, or None when it is not a date.

    A date is a ``date``/``datetime`` object (as YAML loads them) or a string of the form
    ``YYYY-MM-DD[(T| )HH:MM[:SS[.fraction]][Z|±HH:MM]]``; naive values are UTC. An instant
    whose UTC time falls outside years 1–9999, and year 0000 whatever the offset, is not a
    date (SPEC §3, v1.1); fractions beyond microseconds are dropped before that check.
    """
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC), False
        try:
            return value.astimezone(UTC), False
        except OverflowError:
            return None
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=UTC), True
    if not isinstance(value, str):
        return None
    m = _DATE_RE.fullmatch(value)
    if m is None:
        return None
    year, month, day, hour, minute, second, fraction, offset = m.groups()
    try:
        if hour is None:
            return dt.datetime(int(year), int(month), int(day), tzinfo=UTC), True
        micro = int((fraction or "0")[:6].ljust(6, "0"))
        tz = UTC
        if offset and offset != "Z":
            sign = -1 if offset[0] == "-" else 1
            hours, minutes = int(offset[1:3]), int(offset[4:6])
            if hours > 23 or minutes > 59:
                return None
            tz = dt.timezone(sign * dt.timedelta(hours=hours, minutes=minutes))
        instant = dt.datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second or 0), micro, tz
        ).astimezone(UTC)
    except (ValueError, OverflowError):  # no such day (or year 0000); outside years 1-9999
        return None
    return instant, False


def format_day(instant: dt.datetime) -> str:
    """Return ``YYYY-MM-DD`` of a UTC instant."""
    return f"{instant.year:04d}-{instant.month:02d}-{instant.day:02d}"


def format_instant(instant: dt.datetime) -> str:
    """Return ``YYYY-MM-DDTHH:MM:SSZ`` of a UTC instant, always with a four-digit year.

    (``strftime("%Y")`` does not pad years below 1000 on every platform.)
    """
    instant = instant.astimezone(UTC)
    return (
        f"{instant.year:04d}-{instant.month:02d}-{instant.day:02d}"
        f"T{instant.hour:02d}:{instant.minute:02d}:{instant.second:02d}Z"
    )


def canonical(value) -> str | None:
    """Return the canonical string of a scalar metadata or input value, None for null/objects."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value):
            return str(int(value))
        return repr(value)
    if isinstance(value, dt.datetime):
        parsed = parse_date(value)
        # An instant outside years 1-9999 UTC is no date: its text as given, like any string.
        return value.isoformat() if parsed is None else format_instant(parsed[0])
    if isinstance(value, dt.date):
        return value.isoformat()
    return None


def canonical_values(value) -> tuple[str, ...]:
    """Return the canonical strings a metadata value matches (any element of a list)."""
    if isinstance(value, list):
        out = []
        for element in value:
            text = canonical(element)
            if text is not None:
                out.append(text)
        return tuple(out)
    text = canonical(value)
    return () if text is None else (text,)


def _json_default(value):
    text = canonical(value)
    if text is None:
        raise TypeError(f"not serializable: {type(value).__name__}")
    return text


def display_value(value) -> str | None:
    """Return a metadata value as rendered by a ``meta.<field>`` facet, None when absent/null."""
    if value is None:
        return None
    if isinstance(value, dict):
        return json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_json_default
        )
    if isinstance(value, list):
        return ", ".join(
            "null" if element is None else (display_value(element) or "") for element in value
        )
    return canonical(value)

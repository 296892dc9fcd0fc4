"""The item form's metadata as key/value rows: what a row's text means, how a value is
written in a row, the rows posted and their errors (one per row, in words)."""

import json
import re

from resolver import ResolverError
from resolver.documents import load_json

BLANK_ROWS = 3
MAX_ROWS = 1000
JSON_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")


def value_text(value) -> str:
    """Return how a metadata value is written in a row: text as itself, other values as
    JSON (3, true, [1, 2]), and text that would read as JSON quoted ("3" as ``"3"``)."""
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError:
            return value  # plain text
    return json.dumps(value, ensure_ascii=False)


def value_of(text: str):
    """Return the value a row's text means: JSON when it is JSON (3, true, "3", [1, 2]),
    else the text itself; text that opens as JSON ({, [ or ") or is written as a number must
    be valid JSON (a number of 5,000 digits is refused, not kept as text)."""
    try:
        return load_json(text, allow_nan=False)
    except ResolverError:
        if text[:1] in ("{", "[", '"') or JSON_NUMBER.fullmatch(text):
            raise
        return text


def _row(index: int, key: str, value: str) -> dict:
    return {"index": index, "key": key, "value": value, "error": ""}


def rows_of(metadata: dict) -> list[dict]:
    """Return the rows of stored metadata, then ``BLANK_ROWS`` empty ones."""
    pairs = [(key, value_text(value)) for key, value in metadata.items()]
    pairs += [("", "")] * BLANK_ROWS
    return [_row(i, key, value) for i, (key, value) in enumerate(pairs)]


def rows_posted(data) -> list[dict]:
    """Return the rows a form posted (``metadata_rows`` of ``metadata_key_i``/``_value_i``)."""
    count = str(data.get("metadata_rows") or "0")
    count = min(int(count), MAX_ROWS) if count.isdecimal() else 0
    return [
        _row(i, data.get(f"metadata_key_{i}", ""), data.get(f"metadata_value_{i}", ""))
        for i in range(count)
    ]


def metadata_of_rows(rows: list[dict]) -> dict | None:
    """Return the metadata the rows give, or None when a row is wrong (its ``error`` says
    why: no name, a name already given, invalid JSON); empty rows are left out."""
    metadata: dict = {}
    first_row: dict[str, int] = {}
    for row in rows:
        key, text = row["key"].strip(), row["value"].strip()
        number = row["index"] + 1
        if not key and not text:
            continue
        if not key:
            row["error"] = f"row {number}: give the field a name"
        elif key in first_row:
            row["error"] = f"row {number}: “{key}” is already row {first_row[key]}"
        else:
            try:
                metadata[key] = value_of(text)
            except ResolverError as exc:
                row["error"] = f"row {number}: {exc.message}"
            first_row[key] = number
    if any(row["error"] for row in rows):
        return None
    return metadata

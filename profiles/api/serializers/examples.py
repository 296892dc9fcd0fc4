"""How the schema's examples are written: a request body's (``request_example``), an
answer's (``response_example``, for one status or any) and an error's (``error_example``,
its body made by ``error_body``); and the ``counts`` of entity changes an example shows."""

from drf_spectacular.utils import OpenApiExample

from profiles.api.exceptions import error_body
from profiles.workspace.entity_changes import KINDS, OPS


def request_example(name: str, value) -> OpenApiExample:
    return OpenApiExample(name, value=value, request_only=True)


def response_example(name: str, value, status: int | None = None) -> OpenApiExample:
    """Return the example of an answer (of the one ``status`` given)."""
    codes = None if status is None else [str(status)]
    return OpenApiExample(name, value=value, response_only=True, status_codes=codes)


def error_example(
    name: str, status: int, code: str, message: str, path: str = "", **extra
) -> OpenApiExample:
    return response_example(name, error_body(code, message, path, **extra), status)


def counts_example(**counted: dict[str, int]) -> dict[str, dict[str, int]]:
    """Return the ``counts`` of every kind and op: ``counted``'s (``item={"create": 12}``),
    0 for the others."""
    return {kind: {op: counted.get(kind, {}).get(op, 0) for op in OPS} for kind in KINDS}

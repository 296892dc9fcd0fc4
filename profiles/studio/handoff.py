"""The preview as an API call, for developers: the same request as curl, Python ``requests``
and JavaScript ``fetch``.

A saved profile is called at ``POST /api/v1/resolve``, a draft with unsaved edits at
``POST /api/v1/profiles/<key>/preview`` with exactly the edits that differ from the saved
profile; both with ``"detail": "summary"`` (what applications should send). The studio shows
the answer the call gets, resolved the same way.

The sample's ``now`` is left out unless the user pins it: an application resolves at the time
of its call, and a copied snippet that pins yesterday's clock answers differently tomorrow.
"""

import json as json_module
import shlex
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

TOKEN_VARIABLE = "CONTEXT_STUDIO_TOKEN"
SUMMARY = "summary"
PIN_NOW_FIELD = "handoff-pin-now"  # the checkbox that keeps the sample's ``now`` in the call
LINE_LENGTH = 88  # the Python snippet's, as ruff and black format code


@dataclass(frozen=True)
class ApiCall:
    url: str
    body: dict
    detail: str = SUMMARY  # the detail of the answer

    @property
    def pins_now(self) -> bool:
        return "now" in self.body

    @property
    def body_json(self) -> str:
        return json_module.dumps(self.body, ensure_ascii=False)


def rule_edits(saved_rules: dict, overrides: dict) -> dict:
    """Return only the layers whose draft rule differs from the saved one, as the API's
    ``rules`` (a field set to null goes back to the default; a layer set to null gets the
    default rule)."""
    edits: dict[str, Any] = {}
    for layer, override in overrides.items():
        saved = saved_rules.get(layer)
        if override is None:
            if saved is not None:
                edits[layer] = None
            continue
        given = {name: value for name, value in override.items() if value is not None}
        if saved is not None and given == saved:
            continue
        removed = {name: None for name in (saved or {}) if name not in given}
        edits[layer] = given | removed
    return edits


def api_call(
    request,
    *,
    profile: str,
    sample: dict,
    saved_rules: dict,
    overrides: dict,
    budget: int,
    saved_budget: int,
    pin_now: bool = False,
) -> ApiCall:
    """Return the API call that resolves exactly what the preview resolves — at the time of
    the call, or at the sample's ``now`` when ``pin_now``."""
    if not pin_now:
        sample = {name: value for name, value in sample.items() if name != "now"}
    edits = rule_edits(saved_rules, overrides)
    if not edits and budget == saved_budget:
        url = request.build_absolute_uri(reverse("api:resolve"))
        return ApiCall(url, {"profile": profile, **sample, "detail": SUMMARY})
    body: dict[str, Any] = {}
    if edits:
        body["rules"] = edits
    if budget != saved_budget:
        body["budget"] = budget
    url = request.build_absolute_uri(reverse("api:profile-preview", args=[profile]))
    return ApiCall(url, body | sample | {"detail": SUMMARY})


def snippets(call: ApiCall) -> dict[str, str]:
    """Return the call as a curl command, a Python ``requests`` call and a JavaScript fetch."""
    body_lines = json_module.dumps(call.body, ensure_ascii=False, indent=2)
    curl = "\n".join(
        [
            f"curl -s -X POST {shlex.quote(call.url)} \\",
            f'  -H "Authorization: Token ${TOKEN_VARIABLE}" \\',
            "  -H 'Content-Type: application/json' \\",
            f"  -d {shlex.quote(call.body_json)}",
        ]
    )
    python_body = python_literal(call.body, indent=4, used=len("    json="))
    python = "\n".join(
        [
            "import os",
            "",
            "import requests",
            "",
            f'token = os.environ["{TOKEN_VARIABLE}"]',
            "response = requests.post(",
            f"    {_python_inline(call.url)},",
            '    headers={"Authorization": f"Token {token}"},',
            f"    json={python_body},",
            "    timeout=30,",
            ")",
            "response.raise_for_status()",
            "resolution = response.json()",
            'print(resolution["status"], resolution["output"] and resolution["output"]["text"])',
        ]
    )
    javascript = "\n".join(
        [
            f"const response = await fetch({json_module.dumps(call.url)}, {{",
            '  method: "POST",',
            "  headers: {",
            f"    Authorization: `Token ${{process.env.{TOKEN_VARIABLE}}}`,",
            '    "Content-Type": "application/json",',
            "  },",
            "  body: JSON.stringify(" + body_lines.replace("\n", "\n  ") + "),",
            "});",
            "if (!response.ok) throw new Error(`HTTP ${response.status}`);",
            "const resolution = await response.json();",
        ]
    )
    return {"curl": curl, "python": python, "javascript": javascript}


def python_literal(value: Any, *, indent: int = 0, used: int = 0) -> str:
    """Return a JSON value as Python source, formatted as ruff or black would: on one line
    when it fits in ``LINE_LENGTH`` (``used`` columns are taken before it, a comma after),
    otherwise one item per line, indented by 4 more, each with a trailing comma."""
    flat = _python_inline(value)
    if used + len(flat) + 1 <= LINE_LENGTH or not isinstance(value, dict | list) or not value:
        return flat
    inner = " " * (indent + 4)
    if isinstance(value, dict):
        lines = ["{"]
        for key, item in value.items():
            head = f"{inner}{_python_inline(key)}: "
            lines.append(head + python_literal(item, indent=indent + 4, used=len(head)) + ",")
        lines.append(" " * indent + "}")
    else:
        lines = ["["]
        for item in value:
            lines.append(inner + python_literal(item, indent=indent + 4, used=len(inner)) + ",")
        lines.append(" " * indent + "]")
    return "\n".join(lines)


def _python_inline(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, str):
        return json_module.dumps(value, ensure_ascii=False)  # double quotes, valid Python
    if isinstance(value, dict):
        items = ", ".join(f"{_python_inline(k)}: {_python_inline(v)}" for k, v in value.items())
        return "{" + items + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_python_inline(item) for item in value) + "]"
    return repr(value)


def json(resolution: dict) -> str:
    """Return a resolution as indented JSON, for people to read."""
    return json_module.dumps(resolution, ensure_ascii=False, indent=2)

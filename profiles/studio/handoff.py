"""The preview as an API call, for developers: the same request as curl, Python ``requests``
and JavaScript ``fetch``.

A saved profile is called at ``POST /api/v1/resolve``, a draft with unsaved edits at
``POST /api/v1/profiles/<key>/preview`` with exactly the edits that differ from the saved
profile; both with ``"detail": "summary"`` (what applications should send). The studio shows
the answer the call gets, resolved the same way.
"""

import json as json_module
import pprint
import shlex
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

TOKEN_VARIABLE = "CONTEXT_STUDIO_TOKEN"
SUMMARY = "summary"


@dataclass(frozen=True)
class ApiCall:
    url: str
    body: dict
    detail: str = SUMMARY  # the detail of the answer

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
) -> ApiCall:
    """Return the API call that resolves exactly what the preview resolves."""
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
    python_body = pprint.pformat(call.body, indent=4, width=88, sort_dicts=False)
    python = "\n".join(
        [
            "import os",
            "",
            "import requests",
            "",
            "response = requests.post(",
            f"    {call.url!r},",
            f'    headers={{"Authorization": f"Token {{os.environ[{TOKEN_VARIABLE!r}]}}"}},',
            "    json=" + python_body.replace("\n", "\n    ") + ",",
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


def json(resolution: dict) -> str:
    """Return a resolution as indented JSON, for people to read."""
    return json_module.dumps(resolution, ensure_ascii=False, indent=2)

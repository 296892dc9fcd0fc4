"""The "Use this request from code" snippets: the sample's ``now`` only when the user pins it,
and a Python snippet formatted as ruff formats code (one line per item past 88 columns)."""

# ruff: noqa: F811 (the studio's editor fixtures, imported: the tests' arguments)

import ast
import html as html_module
import json
import subprocess
import sys

import pytest

from profiles.studio import handoff
from tests.profiles.authoring.test_editor_preview_studio import HANDOFF, HTMX, saved_form
from tests.profiles.studio.fixtures import editor, editor_client  # noqa: F401 (the studio's)

pytestmark = pytest.mark.django_db

NOW = "2026-03-01T12:00:00Z"
LONG_BODY = {
    "profile": "support-answer",
    "input": {
        "message": "I was charged twice for one order: can I get a refund, please?",
        "customer_id": "C-1",
        "tags": ["billing", "refund"],
    },
    "availability": {"kb": "unavailable"},
    "rules": {"kb": {"maxItems": None, "participation": "exclude", "required": False}},
    "detail": "summary",
}


def snippet(html: str, language: str) -> str:
    return html_module.unescape(html.split(f'id="snippet-{language}"')[1].split(">", 1)[1]).split(
        "</pre>"
    )[0]


def curl_body(html: str) -> dict:
    curl = snippet(html, "curl")
    return json.loads(curl.split("-d '", 1)[1].rsplit("'", 1)[0])


def test_handoff__sample_has_a_now__left_out_unless_pinned(editor_client, workspace):
    data = saved_form(editor_client) | {"now": NOW}

    html = editor_client.post(HANDOFF, data, headers=HTMX).content.decode()

    assert "now" not in curl_body(html)
    assert '"now"' not in snippet(html, "python") and '"now"' not in snippet(html, "javascript")
    assert (
        'name="handoff-pin-now"' in html and "checked" not in html.split("handoff-pin-now")[1][:40]
    )
    assert "resolves at the time it runs" in html


def test_handoff__pinned__the_call_carries_the_samples_now(editor_client, workspace):
    data = saved_form(editor_client) | {"now": NOW, handoff.PIN_NOW_FIELD: "on"}

    html = editor_client.post(HANDOFF, data, headers=HTMX).content.decode()

    assert curl_body(html)["now"] == NOW
    assert f'"now": "{NOW}"' in snippet(html, "python")
    assert "checked" in html.split("handoff-pin-now")[1][:40]


def test_handoff__sample_without_now__no_pin_option(editor_client, workspace):
    data = saved_form(editor_client) | {"now": ""}

    html = editor_client.post(HANDOFF, data, headers=HTMX).content.decode()

    assert "handoff-pin-now" not in html


def test_python_snippet__long_body__formatted_as_ruff_formats_it(tmp_path):
    python = handoff.snippets(handoff.ApiCall("https://studio.example/api/v1/resolve", LONG_BODY))[
        "python"
    ]
    source = tmp_path / "snippet.py"
    source.write_text(python + "\n", encoding="utf-8")

    check = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--diff", "--line-length", "88", str(source)],
        capture_output=True,
        text=True,
    )

    assert check.returncode == 0, check.stdout + check.stderr
    assert max(len(line) for line in python.splitlines()) <= 88
    assert "    json={\n" in python and '        "input": {\n' in python
    assert '"tags": ["billing", "refund"],' in python  # what fits stays on one line


def test_python_literal__any_json__evaluates_to_the_same_value():
    literal = handoff.python_literal(LONG_BODY | {"list": [], "map": {}, "n": 1.5, "quote": 'a"b'})

    assert ast.literal_eval(literal.replace("None", "None")) == LONG_BODY | {
        "list": [],
        "map": {},
        "n": 1.5,
        "quote": 'a"b',
    }

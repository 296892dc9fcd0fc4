"""The application contract of ``POST /api/v1/resolve`` and ``POST /api/v1/expand``, recorded.

Every request an application sends (issue 35, item 4): each conformance case, each documented
error, conditional polls (304), the 401s and 403s of keys, a throttled 429, scenarios and
expand's privacy. ``answer`` turns a response into what a client sees: its status, its headers
(all of them but those in ``EXCLUDED_HEADERS``) and its body. The fixtures under
``fixtures/`` were recorded through the stack as it was before the lean door
(``LEAN_CONTRACT_RECORD=1 pytest tests/profiles/resolution/test_lean_differential.py``
writes them again); ``test_lean_differential`` replays the same requests and compares.

Nothing in a recorded answer may depend on the run: every request gives ``now``, keys are
made afresh (their values never appear in an answer), the throttled scope's rate is
``0/minute`` (its Retry-After is the whole period, whatever the clock).
"""

import base64
import datetime as dt
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test import Client
from django.utils import timezone

from profiles.models import ApiKey
from profiles.workspace.keys import api_key_create, api_key_revoke
from resolver import cli
from tests.profiles.conftest import api_key_for

FIXTURES = Path(__file__).with_name("fixtures")
# One recording per database: PostgreSQL's jsonb gives an item's metadata keys in its own
# order (a served item's expand shows it), SQLite in the stored order.
CONTRACT = FIXTURES / f"lean_contract.{connection.vendor}.json"
CONFORMANCE = FIXTURES / f"lean_conformance.{connection.vendor}.json"
RECORDING = os.environ.get("LEAN_CONTRACT_RECORD") == "1"

# Headers left out of a recorded answer, and why: they differ on every run.
EXCLUDED_HEADERS = {
    # ctxstudio.log_context: a new random id per request (or the proxy's).
    "x-request-id": "a new random id per request",
    # Written by the HTTP server, not by the application (the test client writes none).
    "date": "the server's clock",
    "server": "the server's name",
}

NOW = "2026-11-29T12:00:00Z"
DANA = {
    "profile": "support-answer",
    "input": {"message": "Where is my refund?", "customer_id": "C-1001"},
    "now": NOW,
}
STAGING = {
    "profile": "support-answer-staging",
    "input": {"message": "price adjustment", "customer_id": "C-1001"},
    "now": NOW,
}


@dataclass(frozen=True)
class Call:
    """One request of the contract. ``key`` names an entry of the keyring (its header), or is
    a literal ``Authorization`` header when it starts with a scheme's word."""

    name: str
    path: str
    body: object = None  # a dict (sent as JSON), bytes (sent as they are) or None (no body)
    key: str | None = "reader"
    method: str = "post"
    content_type: str = "application/json"
    headers: dict = field(default_factory=dict)
    # If-None-Match: the ETag that call answered (recorded before this one).
    etag_of: str | None = None


def answer(response) -> dict:
    """Return what a client sees of a response: status, headers (sorted, lower-case names,
    without the excluded ones; cookies as Set-Cookie) and the body (text, or base64)."""
    headers = [
        [name.lower(), value]
        for name, value in response.items()
        if name.lower() not in EXCLUDED_HEADERS
    ]
    headers += [["set-cookie", morsel.OutputString()] for morsel in response.cookies.values()]
    try:
        body = {"text": response.content.decode("utf-8")}
    except UnicodeDecodeError:
        body = {"base64": base64.b64encode(response.content).decode()}
    return {"status": response.status_code, "headers": sorted(headers), **body}


def send(client: Client, call: Call, keyring: dict[str, str], etags: dict[str, str]):
    """Send one call with the test client; return the response."""
    extra = {
        f"HTTP_{name.upper().replace('-', '_')}": value for name, value in call.headers.items()
    }
    if call.key is not None:
        words = call.key.split(" ", 1)[0]
        literal = words in ("Token", "Bearer", "Basic", "token", "bearer") or call.key == ""
        extra["HTTP_AUTHORIZATION"] = call.key if literal else keyring[call.key]
    if call.etag_of is not None:
        extra["HTTP_IF_NONE_MATCH"] = etags[call.etag_of]
    body = call.body
    if isinstance(body, dict | list):
        body = json.dumps(body).encode()
    method = getattr(client, call.method)
    if call.method in ("get", "options", "head"):
        return method("/api/v1/" + call.path, **extra)
    return method("/api/v1/" + call.path, data=body or b"", content_type=call.content_type, **extra)


def play(calls: list[Call], keyring: dict[str, str]) -> dict[str, dict]:
    """Send the calls in order; return each one's answer by name."""
    client = Client()
    answers, etags = {}, {}
    for call in calls:
        assert call.name not in answers, call.name
        response = send(client, call, keyring, etags)
        answers[call.name] = answer(response)
        if "ETag" in response:
            etags[call.name] = response["ETag"]
    return answers


def keyring_make() -> dict[str, str]:
    """Make the callers of the contract; return their Authorization headers by name."""
    reader = User.objects.create_user("reader")
    editor = User.objects.create_user("editor")
    editor.groups.add(Group.objects.get_or_create(name="editors")[0])
    staff = User.objects.create_user("staff", is_staff=True)
    gone = User.objects.create_user("gone")
    inactive = api_key_create(owner=gone, name="app", scopes=["resolve"]).key
    gone.is_active = False
    gone.save()
    revoked = api_key_create(owner=editor, name="old", scopes=["resolve"])
    api_key_revoke(key=revoked.record)
    expired = api_key_create(
        owner=editor, name="short", scopes=["resolve"], expires_at=timezone.now() + dt.timedelta(1)
    )
    ApiKey.objects.filter(pk=expired.record.pk).update(
        expires_at=timezone.now() - dt.timedelta(seconds=1)
    )
    return {
        "reader": f"Token {api_key_for(reader)}",
        "reader-bearer": f"Bearer {api_key_for(reader)}",
        "editor": f"Token {api_key_for(editor)}",
        "staff": f"Token {api_key_for(staff)}",
        "resolve-key": f"Bearer {api_key_for(editor, scopes=['resolve'])}",
        "read-key": f"Bearer {api_key_for(reader, scopes=['read'])}",
        "write-key-as-token": f"Token {api_key_for(editor, scopes=['write'])}",
        "staging-key": (
            f"Bearer {api_key_for(editor, scopes=['resolve'], environments=['staging'])}"
        ),
        "production-key": (
            f"Bearer {api_key_for(editor, scopes=['read'], environments=['production'])}"
        ),
        "revoked": f"Bearer {revoked.key}",
        "expired": f"Bearer {expired.key}",
        "inactive-owner": f"Bearer {inactive}",
    }


def _bad_requests() -> list[Call]:
    """The documented errors of resolve (profiles.api.examples.ERROR_EXAMPLES and the rest)."""
    bodies = {
        "neither profile nor consumer": {"input": {}, "now": NOW},
        "profile and consumer": {"profile": "support-answer", "consumer": "x", "now": NOW},
        "unknown field": {**DANA, "surprise": 1},
        "input not an object": {**DANA, "input": []},
        "message not a string": {**DANA, "input": {"message": 12}},
        "input value an object": {**DANA, "input": {"customer_id": {"a": 1}}},
        "bad now": {**DANA, "now": "yesterday"},
        "bad format": {**DANA, "format": "html"},
        "unknown availability layer": {**DANA, "availability": {"nope": "unknown"}},
        "bad availability state": {**DANA, "availability": {"kb": "maybe"}},
        "bad detail": {**DANA, "detail": "brief"},
        "unknown profile": {"profile": "nope", "now": NOW},
        "unknown consumer and objective": {"consumer": "nobody", "objective": "x", "now": NOW},
        "NUL in input": {**DANA, "input": {"message": "a\u0000b"}},
        "scenario not found": {"scenario": "no such thing"},
        "scenario not a string": {"scenario": 7},
        "scenario empty": {"scenario": ""},
    }
    raw = {
        "malformed JSON": b'{"profile": ',
        "body an array": b"[]",
        "body a string": b'"support-answer"',
        "body null": b"null",
        "body not UTF-8": b'{"profile": "\xff"}',
        "NaN": b'{"profile": "support-answer", "input": {"x": NaN}}',
        "nested too deep": b"[" * 70 + b"]" * 70,
        "duplicate keys": b'{"profile": "support-answer", "profile": "nope"}',
        "empty body": b"",
    }
    calls = [Call(f"resolve: {name}", "resolve", body) for name, body in bodies.items()]
    calls += [Call(f"resolve: {name}", "resolve", body) for name, body in raw.items()]
    return calls


def contract_calls() -> list[Call]:
    """The requests of the contract on the demo workspace, in the order they are sent."""
    summary = {**DANA, "detail": "summary"}
    calls = [
        # answers
        Call("resolve: Dana", "resolve", DANA),
        Call("resolve: Dana, Bearer scheme", "resolve", DANA, key="reader-bearer"),
        Call("resolve: Dana, summary", "resolve", summary),
        Call("resolve: Dana, xml", "resolve", {**DANA, "format": "xml"}),
        Call(
            "resolve: what-if tickets unavailable",
            "resolve",
            {**DANA, "availability": {"tickets": "unavailable"}},
        ),
        Call(
            "resolve: by consumer, objective and environment",
            "resolve",
            {
                "consumer": "support-assistant",
                "objective": "answer-ticket",
                "environment": "staging",
                "input": {"customer_id": "C-1001"},
                "now": NOW,
            },
        ),
        Call("resolve: without input", "resolve", {"profile": "support-answer", "now": NOW}),
        Call("resolve: scenario", "resolve", {"scenario": "Dana's refund answer rendered as XML"}),
        Call(
            "resolve: scenario, the body wins",
            "resolve",
            {"scenario": "Dana asks about a late refund", "format": "xml", "now": "2026-12-05"},
        ),
        Call("resolve: editor", "resolve", DANA, key="editor"),
        Call("resolve: staff", "resolve", DANA, key="staff"),
        Call("resolve: resolve-scoped key", "resolve", DANA, key="resolve-key"),
        Call("resolve: read-scoped key", "resolve", summary, key="read-key"),
        Call(
            "resolve: write-scoped key with the Token word",
            "resolve",
            summary,
            key="write-key-as-token",
        ),
        Call(
            "resolve: charset in the content type",
            "resolve",
            summary,
            content_type="application/json; charset=utf-8",
        ),
        Call(
            "resolve: Accept application/json",
            "resolve",
            summary,
            headers={"Accept": "application/json"},
        ),
        Call("resolve: Accept */*", "resolve", summary, headers={"Accept": "*/*"}),
        # conditional polls
        Call("resolve: 304", "resolve", DANA, etag_of="resolve: Dana"),
        Call("resolve: 304 of a summary", "resolve", summary, etag_of="resolve: Dana, summary"),
        Call("resolve: If-None-Match *", "resolve", DANA, headers={"If-None-Match": "*"}),
        Call(
            "resolve: If-None-Match strong form", "resolve", DANA, headers={"If-None-Match": '"0"'}
        ),
        Call(
            "resolve: If-None-Match of another answer", "resolve", summary, etag_of="resolve: Dana"
        ),
        Call(
            "resolve: 304 by scenario",
            "resolve",
            {"scenario": "Dana's refund answer rendered as XML"},
            etag_of="resolve: scenario",
        ),
        *_bad_requests(),
        # keys: 401
        Call("resolve: no credentials", "resolve", DANA, key=None),
        Call("resolve: unknown token", "resolve", DANA, key="Token " + "0" * 40),
        Call("resolve: unknown bearer", "resolve", DANA, key="Bearer ctx_not-a-key"),
        Call("resolve: Bearer without a key", "resolve", DANA, key="Bearer"),
        Call("resolve: Token with spaces", "resolve", DANA, key="Token a b"),
        Call("resolve: lower-case scheme", "resolve", summary, key="token " + "1" * 40),
        Call("resolve: Basic", "resolve", DANA, key="Basic dXNlcjpwYXNz"),
        Call("resolve: revoked key", "resolve", DANA, key="revoked"),
        Call("resolve: expired key", "resolve", DANA, key="expired"),
        Call("resolve: inactive owner", "resolve", DANA, key="inactive-owner"),
        # keys: 403 (a key limited to environments)
        Call("resolve: staging key, production profile", "resolve", DANA, key="staging-key"),
        Call("resolve: staging key, staging profile", "resolve", STAGING, key="staging-key"),
        Call(
            "resolve: staging key, staging by selection",
            "resolve",
            {
                "consumer": "support-assistant",
                "objective": "answer-ticket",
                "environment": "staging",
                "now": NOW,
            },
            key="staging-key",
        ),
        Call(
            "resolve: staging key, scenario of production",
            "resolve",
            {"scenario": "Dana asks about a late refund"},
            key="staging-key",
        ),
        Call(
            "resolve: staging key, unknown profile",
            "resolve",
            {"profile": "nope", "now": NOW},
            key="staging-key",
        ),
        Call(
            "resolve: production key, production profile", "resolve", summary, key="production-key"
        ),
        # expand
        Call("expand: glossary reference", "expand", {**DANA, "ref": "glossary/chargeback"}),
        Call(
            "expand: 304",
            "expand",
            {**DANA, "ref": "glossary/chargeback"},
            etag_of="expand: glossary reference",
        ),
        Call(
            "expand: by scenario",
            "expand",
            {"scenario": "Dana asks about a late refund", "ref": "glossary/chargeback"},
        ),
        Call("expand: Dana's own ticket", "expand", {**DANA, "ref": "tickets/T-20931"}),
        Call("expand: another customer's ticket", "expand", {**DANA, "ref": "tickets/T-20812"}),
        Call("expand: no such item", "expand", {**DANA, "ref": "kb/no-such-article"}),
        Call("expand: no such layer", "expand", {**DANA, "ref": "nope/x"}),
        Call("expand: ref without a layer", "expand", {**DANA, "ref": "chargeback"}),
        Call("expand: no ref", "expand", DANA),
        Call("expand: ref not a string", "expand", {**DANA, "ref": 3}),
        Call("expand: unknown profile", "expand", {"profile": "nope", "ref": "kb/x", "now": NOW}),
        Call("expand: bad request", "expand", {**DANA, "ref": "kb/x", "now": "never"}),
        Call("expand: malformed JSON", "expand", b"{"),
        Call(
            "expand: unavailable ref with If-None-Match *",
            "expand",
            {**DANA, "ref": "nope/x"},
            headers={"If-None-Match": "*"},
        ),
        Call("expand: no credentials", "expand", {**DANA, "ref": "glossary/chargeback"}, key=None),
        Call(
            "expand: revoked key", "expand", {**DANA, "ref": "glossary/chargeback"}, key="revoked"
        ),
        Call(
            "expand: staging key, production profile",
            "expand",
            {**DANA, "ref": "glossary/chargeback"},
            key="staging-key",
        ),
        # what stays on the full stack
        Call("resolve: GET", "resolve", method="get"),
        Call("resolve: OPTIONS", "resolve", method="options"),
        Call("resolve: PUT", "resolve", DANA, method="put"),
        Call(
            "resolve: form body",
            "resolve",
            b"profile=support-answer",
            content_type="application/x-www-form-urlencoded",
        ),
        Call("resolve: text body", "resolve", b"{}", content_type="text/plain"),
        Call("resolve: Accept xml", "resolve", summary, headers={"Accept": "application/xml"}),
        Call(
            "resolve: indented JSON asked",
            "expand",
            {**DANA, "ref": "glossary/chargeback"},
            headers={"Accept": "application/json; indent=2"},
        ),
        Call("resolve: trailing slash", "resolve/", DANA),
    ]
    return calls


# The calls the full stack answers (the lean door leaves them: no key, another scheme or
# method or body, an Accept header DRF answers otherwise, another path); it takes the rest.
FULL_STACK = frozenset(
    {
        "resolve: no credentials",
        "resolve: Bearer without a key",
        "resolve: Token with spaces",
        "resolve: lower-case scheme",
        "resolve: Basic",
        "resolve: GET",
        "resolve: OPTIONS",
        "resolve: PUT",
        "resolve: form body",
        "resolve: text body",
        "resolve: Accept xml",
        "resolve: indented JSON asked",
        "resolve: trailing slash",
        "expand: no credentials",
        # Django's test client sends no Content-Type with an empty body.
        "resolve: empty body",
    }
)

THROTTLED = [
    Call("resolve: throttled", "resolve", DANA),
    Call("resolve: throttled, bad JSON", "resolve", b"{"),
    Call("expand: throttled", "expand", {**DANA, "ref": "glossary/chargeback"}),
    Call("resolve: throttled, revoked key", "resolve", DANA, key="revoked"),
]


def cli_output(workspace: dict, request: dict, tmp_path, capsys) -> bytes:
    """Return what ``python -m resolver resolve`` prints for the workspace and the request."""
    path = tmp_path / "workspace.yaml"
    path.write_text(yaml.safe_dump(workspace, sort_keys=False), encoding="utf-8")
    capsys.readouterr()
    cli.main(["resolve", str(path), "--request", json.dumps(request)])
    return capsys.readouterr().out.encode()


def stored(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def store(path: Path, answers: dict) -> None:
    """Merge ``answers`` into the fixture file (recording)."""
    FIXTURES.mkdir(exist_ok=True)
    merged = {**stored(path), **answers}
    path.write_text(json.dumps(merged, indent=1, sort_keys=True, ensure_ascii=False) + "\n")

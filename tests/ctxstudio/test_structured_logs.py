"""Structured logs (issue 37, item 2): one JSON object a line with the time, level, logger and
request id; one access line a request (door, method, status, duration, user and key ids); and
no customer text in any line, at any level (``ctxstudio.log_context``, ``ctxstudio.log_format``).
"""

import io
import json
import logging
import re
import secrets
from types import SimpleNamespace

import pytest
import yaml
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.http import HttpResponse
from django.utils.module_loading import import_string
from rest_framework.test import APIClient

from ctxstudio.log_context import door_of
from ctxstudio.log_format import ACCESS_FIELDS, exception_withheld
from profiles.import_export.imports import workspace_import
from profiles.models import Item
from profiles.workspace.keys import token_replace
from tests.ctxstudio.test_log_context import production_warning
from tests.ctxstudio.test_production import run_manage
from tests.profiles.conftest import CASE_01

LINE_FIELDS = {"time", "level", "logger", "request_id", "message"}
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


class CapturedLog:
    """A handler on the root logger built as ``settings.LOGGING`` builds the console's, with
    the JSON formatter, and every logger at DEBUG (what ``LOG_LEVEL=DEBUG`` would give, and
    Django's own loggers too)."""

    def __init__(self, log_format: str = "json"):
        self.stream = io.StringIO()
        self.handler = logging.StreamHandler(self.stream)
        console = settings.LOGGING["handlers"]["console"]
        for name in console["filters"]:
            self.handler.addFilter(import_string(settings.LOGGING["filters"][name]["()"])())
        formatter = dict(settings.LOGGING["formatters"][log_format])
        factory = import_string(formatter.pop("()"))
        self.handler.setFormatter(factory(formatter.pop("format", None)))
        self.levels = {}

    def __enter__(self):
        for name in ("", "django", "ctxstudio.access"):
            logger = logging.getLogger(name)
            self.levels[name] = logger.level
            logger.setLevel(logging.DEBUG)
        logging.getLogger().addHandler(self.handler)
        return self

    def __exit__(self, *exc):
        logging.getLogger().removeHandler(self.handler)
        for name, level in self.levels.items():
            logging.getLogger(name).setLevel(level)

    def text(self) -> str:
        return self.stream.getvalue()

    def lines(self) -> list[dict]:
        return [json.loads(line) for line in self.text().splitlines()]

    def access(self) -> list[dict]:
        return [line for line in self.lines() if line["logger"] == "ctxstudio.access"]


@pytest.fixture
def json_log(settings):
    settings.LOG_ACCESS = True
    with CapturedLog() as log:
        yield log


@pytest.fixture
def case_01(db) -> dict:
    case = yaml.safe_load(CASE_01.read_text(encoding="utf-8"))
    workspace_import(document=case["workspace"], mode="replace")
    return case


@pytest.fixture
def editor(db) -> User:
    user = User.objects.create_user(
        "rowan", email="rowan.private@example.com", password="editor-pass-123"
    )
    user.groups.add(Group.objects.get_or_create(name="editors")[0])
    return user


@pytest.fixture
def editor_key(editor):
    record, key = token_replace(user=editor)
    return record, key


def key_client(key: str) -> APIClient:
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


@pytest.mark.django_db
def test_access_line__resolve_with_a_key__fields_ids_status_and_duration(
    case_01, editor, editor_key, json_log
):
    record, key = editor_key

    response = key_client(key).post(
        "/api/v1/resolve", case_01["request"], format="json", HTTP_X_REQUEST_ID="edge-7f3a.42"
    )

    assert response.status_code == 200
    assert response["X-Request-ID"] == "edge-7f3a.42"
    [line] = json_log.access()
    assert set(line) == LINE_FIELDS | set(ACCESS_FIELDS)
    assert TIME.fullmatch(line["time"])
    assert (line["level"], line["request_id"]) == ("INFO", "edge-7f3a.42")
    assert (line["door"], line["method"], line["status"]) == ("resolve", "POST", 200)
    assert (line["user_id"], line["key_id"]) == (editor.pk, record.pk)
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
    # Never the key itself, nor the user's name or email.
    text = json_log.text()
    for secret in (key, key[:16], editor.email, editor.username):
        assert secret not in text


@pytest.mark.django_db
@pytest.mark.parametrize("given", [None, "two words", "x" * 65, 'id"}\n{"forged": 1'])
def test_access_line__request_id_absent_or_hostile__a_new_one_in_answer_and_line(
    case_01, json_log, given
):
    headers = {} if given is None else {"HTTP_X_REQUEST_ID": given}

    response = APIClient().get("/api/v1/layers/", **headers)

    assert response.status_code == 401
    request_id = response["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{16}", request_id)
    [line] = json_log.access()
    assert (line["request_id"], line["status"], line["door"]) == (request_id, 401, "api")
    assert (line["user_id"], line["key_id"]) == (None, None)
    assert "forged" not in json_log.text()


@pytest.mark.django_db
def test_access_line__studio_session__the_users_id_and_no_key(client, case_01, editor, json_log):
    client.force_login(editor)

    response = client.get("/layers/")

    assert response.status_code == 200
    [line] = json_log.access()
    assert (line["door"], line["method"], line["user_id"], line["key_id"]) == (
        "studio",
        "GET",
        editor.pk,
        None,
    )


@pytest.mark.django_db
def test_access_line__log_access_off__none_written(client, settings, case_01):
    settings.LOG_ACCESS = False
    with CapturedLog() as log:
        response = client.get("/healthz")

    assert response.status_code == 200
    assert response["X-Request-ID"]
    assert log.access() == []


@pytest.mark.django_db
def test_access_line__text_format__one_plain_line_with_the_same_facts(client, settings):
    settings.LOG_ACCESS = True
    with CapturedLog("line") as log:
        client.get("/healthz", HTTP_X_REQUEST_ID="probe-1")

    line = re.fullmatch(
        r"(\S+) INFO ctxstudio\.access \[probe-1\] GET health 200 in [\d.]+ ms "
        r"\(user None, key None\)\n",
        log.text(),
    )
    assert line is not None, log.text()
    assert TIME.fullmatch(line[1])


class AnsweringMiddleware:
    """Stands for the lean resolve path: answers ``/api/v1/resolve`` itself, skipping every
    later middleware, and names its caller as DRF does."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.user, request.auth = SimpleNamespace(pk=7), SimpleNamespace(pk=41)
        return HttpResponse(b"{}", status=200, content_type="application/json")


def test_access_line__a_middleware_after_it_answers__still_one_line(client, settings):
    first, *others = settings.MIDDLEWARE
    settings.MIDDLEWARE = [first, f"{__name__}.AnsweringMiddleware", *others]
    settings.LOG_ACCESS = True
    with CapturedLog() as log:
        response = client.post("/api/v1/resolve", {}, HTTP_X_REQUEST_ID="lean-1")

    assert response["X-Request-ID"] == "lean-1"
    [line] = log.access()
    assert (line["door"], line["status"], line["user_id"], line["key_id"]) == (
        "resolve",
        200,
        7,
        41,
    )
    assert line["request_id"] == "lean-1"


@pytest.mark.parametrize(
    ("path", "door"),
    [
        ("/api/v1/resolve", "resolve"),
        ("/api/v1/expand", "expand"),
        ("/api/v1/profiles/support-answer/preview", "preview"),
        ("/profiles/support-answer/preview/", "preview"),
        ("/api/v1/layers/kb/items/", "api"),
        ("/admin/profiles/item/", "admin"),
        ("/healthz", "health"),
        ("/readyz", "health"),
        ("/metrics", "metrics"),
        ("/metrics/", "studio"),
        ("/static/css/studio.css", "static"),
        ("/profiles/support-answer/", "studio"),
        ("/", "studio"),
    ],
)
def test_door_of__paths__their_door(path, door):
    assert door_of(path) == door


def test_exception_withheld__chained__types_and_frames_kept_messages_withheld():
    words = f"zq{secrets.token_hex(6)}"

    def fail():
        try:
            raise KeyError(words)
        except KeyError as exc:
            raise ValueError(f"could not rank {words}") from exc

    try:
        fail()
    except ValueError as exc:
        text = exception_withheld(exc)

    assert words not in text
    assert "KeyError: (message withheld" in text
    assert "ValueError: (message withheld" in text
    assert "direct cause" in text
    assert "raise KeyError(words)" in text  # the frames stay, with their lines of code
    # An exception about the service itself keeps its message.
    assert "No such file" in exception_withheld(FileNotFoundError(2, "No such file", "x.texts"))


@pytest.mark.django_db
def test_no_customer_text__studio_api_and_failing_requests_at_debug__marker_in_no_line(
    client, case_01, editor, editor_key, json_log, monkeypatch
):
    """Customer text — item bodies and titles written through the studio and the API, a
    resolve's input, a refused body, a path, an exception's message — reaches no log line."""
    marker = f"zq{secrets.token_hex(6)}"
    _, key = editor_key
    api = key_client(key)
    client.force_login(editor)
    request = dict(case_01["request"])
    request["input"] = {**request["input"], "message": f"card refund {marker}"}

    # The studio: an item created and edited, the editor's preview of its profile.
    created = client.post(
        "/layers/kb/items/_new/",
        {"path": f"kb/{marker}.md", "title": f"Title {marker}", "body": f"Card refund {marker}."},
    )
    item = Item.objects.get(layer__key="kb", path=f"kb/{marker}.md")
    edited = client.post(
        f"/layers/kb/items/{item.pk}/",
        {"title": f"Card refund {marker}", "body": f"Card refunds take {marker} days."},
    )
    page = client.get("/profiles/support-answer/")
    # The API: an item created and changed, a resolve and an expand of what it returned.
    api_created = api.post(
        "/api/v1/layers/kb/items/",
        {"path": f"kb/api-{marker}.md", "body": f"Card refund {marker} by API."},
        format="json",
    )
    api_changed = api.patch(
        f"/api/v1/layers/kb/items/kb/api-{marker}.md",
        {"title": f"Refund {marker}"},
        format="json",
    )
    resolved = api.post("/api/v1/resolve", request, format="json")
    # Failing requests: a refused body, an unknown path, and an exception that quotes the text.
    refused = api.post(
        "/api/v1/layers/kb/items/", {"path": "", "body": f"{marker}", "x": marker}, format="json"
    )
    unknown = api.get(f"/api/v1/layers/{marker}/items/")

    def quoting(**kwargs):
        raise ValueError(f"could not rank {marker}")

    monkeypatch.setattr("profiles.api.resolution.workspace_resolve_versioned", quoting)
    failed = api.post("/api/v1/resolve", request, format="json")

    assert [created.status_code, edited.status_code, page.status_code] == [302, 302, 200]
    assert [api_created.status_code, api_changed.status_code, resolved.status_code] == [
        201,
        200,
        200,
    ]
    assert marker in resolved.content.decode()  # the text went through ...
    assert [refused.status_code, unknown.status_code, failed.status_code] == [400, 404, 500]
    assert marker not in json_log.text()  # ... and no line carries it
    lines = json_log.lines()  # every line is JSON; the failures were logged
    assert {line["status"] for line in json_log.access()} >= {200, 201, 302, 400, 404, 500}
    assert any("ValueError: (message withheld" in line.get("exc_info", "") for line in lines)
    assert any(line["message"] == "Not Found: api" for line in lines)


def test_log_format_json__production_process__a_json_line_outside_a_request():
    result = production_warning(LOG_FORMAT="json")

    [line] = [json.loads(text) for text in result.stderr.splitlines() if text.startswith("{")]
    assert set(line) == LINE_FIELDS, result.stderr
    assert (line["level"], line["logger"], line["request_id"], line["message"]) == (
        "WARNING",
        "profiles.notifications",
        "-",
        "mail 3 failed",
    )


def test_log_format__unknown__the_process_refuses_to_start():
    result = run_manage("check", LOG_FORMAT="xml")

    assert result.returncode != 0
    assert "LOG_FORMAT must be text or json, not 'xml'" in result.stderr

"""Hostile input at every write door: refused in the error shape, nothing written, and every
profile still resolves afterwards.

The corpus is generated from the limits (SPEC v1.1 §2.2 and §3, the columns that store a
value): NUL and lone surrogates, strings one character over each limit, JSON and YAML nested
beyond 64 levels, a YAML alias bomb, YAML tags that build no JSON value (``!!binary``,
``!!set``, ``!!omap``, ``!!pairs``, ``!!python/…``), integers of more than 4,300 digits and
beyond what a column holds, an overflowing float, dates outside years 1-9999, text that is not
UTF-8.

Doors: the API (create and update of every resource, resolve, `POST /api/v1/workspace` as
YAML and JSON), the studio (forms, the editor's actions, the upload), the `import_workspace`
command and the resolver's CLI. For each input the door must answer 4xx in its error shape
(the API's `{"error": {"code", "message", "path"}}`, the studio's page with the error, the
CLI's error JSON with exit 2), write nothing (row, history and version counts, the exported
workspace), and every profile must still resolve.

A few inputs are valid on purpose: a metadata date outside years 1-9999 is "no date"
(SPEC v1.1 §3), so the write succeeds and resolution must still work. Imports run in the
background: there "refused" means a 202 whose job fails with the error in the shape (the
studio: the import's page shows it).

``KNOWN_DEFECTS`` lists the inputs that still get a 500, each with the door, the cause and
the owner; they are strict expected failures, so the fix makes the test fail until its entry
is removed here.
"""

import html
import io
import json
import uuid
from contextlib import redirect_stdout
from html.parser import HTMLParser

import pytest
import yaml
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from profiles.import_export.documents import workspace_export
from profiles.import_export.imports import workspace_import
from profiles.models import ImportJob, Item, Profile, Scenario
from profiles.workspace import cache
from resolver import cli
from tests.profiles.conftest import small_workspace

pytestmark = pytest.mark.django_db

API = "/api/v1/"
NAME, TITLE, BODY, PATH, KEY = 1_000, 1_000, 1_000_000, 255, 64
SCENARIO_NAME, NOW, MESSAGE = 200, 64, 20_000
COLUMN_INTEGER = 2**31  # one beyond PostgreSQL's integer column
HUGE_DIGITS = "9" * 4_301  # beyond Python's integer-string limit
OVERFLOW = "1e999"  # JSON reads it as an infinite float
DATES_OUT_OF_RANGE = ["9999-12-31T23:00:00-05:00", "0001-01-01T00:00:00+01:00"]


# --- the corpus -------------------------------------------------------------------------------


class Raw(str):
    """JSON text put into a body as is (a number no Python value would be written as)."""


def text_values(limit: int | None, *, surrogate: bool = True) -> list:
    """The hostile strings of a text field whose length limit is ``limit`` (None: none).

    A form cannot carry a lone surrogate (a browser sends U+FFFD): ``surrogate=False``.
    """
    values = [pytest.param("a\x00b", id="nul")]
    if surrogate:
        values.append(pytest.param("a\ud800b", id="surrogate"))
    if limit is not None:
        values.append(pytest.param("x" * (limit + 1), id=f"over-{limit}"))
    return values


def json_text(payload) -> str:
    """Encode ``payload`` as JSON, writing ``Raw`` values verbatim (surrogates escaped)."""
    raw = {}

    def mark(value):
        if isinstance(value, Raw):
            token = f"raw-{uuid.uuid4().hex}"
            raw[token] = str(value)
            return token
        if isinstance(value, dict):
            return {key: mark(item) for key, item in value.items()}
        if isinstance(value, list):
            return [mark(item) for item in value]
        return value

    text = json.dumps(mark(payload))
    for token, value in raw.items():
        text = text.replace(json.dumps(token), value)
    return text


def nested_list(levels: int) -> Raw:
    return Raw("[" * levels + "]" * levels)


def deep_metadata() -> dict:
    return {"a": {"b": {"c": {"d": {"e": 1}}}}}  # a container at level 5


def many_metadata_values() -> dict:
    return {f"k{n}": n for n in range(1_001)}


NOT_JSON_TAGS = {
    "binary": "!!binary aGVsbG8=",
    "set": "!!set {x: null}",
    "omap": "!!omap [x: 1]",
    "pairs": "!!pairs [x: 1, x: 2]",
    "python": "!!python/object/apply:os.system [echo]",
}

ALIAS_BOMB = "\n".join(
    ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    + [f"{chr(98 + n)}: &{chr(98 + n)} [{', '.join(['*' + chr(97 + n)] * 10)}]" for n in range(6)]
)


# --- known defects: (test function, case id) -> (where it fails, on which databases) --------

ANY, POSTGRESQL = ("sqlite", "postgresql"), ("postgresql",)
KNOWN_DEFECTS: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {}


@pytest.fixture(autouse=True)
def known_defect(request):
    """Mark a case of ``KNOWN_DEFECTS`` as a strict expected failure on its databases."""
    from django.db import connection

    name = request.node.originalname
    case = request.node.callspec.id if hasattr(request.node, "callspec") else ""
    for (function, case_id), (reason, vendors) in KNOWN_DEFECTS.items():
        if name.startswith(function) and case == case_id and connection.vendor in vendors:
            request.applymarker(pytest.mark.xfail(reason=f"500: {reason}", strict=True))


# --- the world the doors act on ----------------------------------------------------------------


@pytest.fixture
def world(db, settings):
    """A small workspace with a scenario, and the clients of each door."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.workspace_cache_clear()
    workspace_import(document=small_workspace())
    Scenario.objects.create(name="s-0", profile=Profile.objects.get(key="profile-0"))
    from django.contrib.auth.models import User

    admin = User.objects.create_superuser("root", "", "root-password-1")
    client = Client(raise_request_exception=False)
    client.force_login(admin)
    yield client
    cache.workspace_cache_clear()


# Rows that record what was asked, not what is stored: a refused import still leaves its job.
BOOKKEEPING = {"profiles.DecisionLog", "profiles.ImportJob"}


def stored_state() -> tuple[dict, dict]:
    """Return every row count of the app (history and versions included) and the workspace."""
    counts = {
        model._meta.label: model.objects.count()
        for model in apps.get_app_config("profiles").get_models()
        if model._meta.label not in BOOKKEEPING
    }
    return counts, workspace_export()


def assert_every_profile_resolves(client) -> None:
    for key in Profile.objects.values_list("key", flat=True):
        response = client.post(API + "resolve", {"profile": key}, content_type="application/json")
        assert response.status_code == 200, (key, response.content[:500])


def assert_api_refused(response) -> None:
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:800])
    assert response["Content-Type"].startswith("application/json"), response.content[:300]
    error = response.json()["error"]
    assert set(error) >= {"code", "message", "path"}


def assert_import_refused(client):
    """An import door answers 4xx at once, or 202 with a job that fails in the error shape
    (imports run in the background; a failed one writes nothing)."""

    def check(response) -> None:
        if response.status_code != 202:
            assert_api_refused(response)
            return
        job = client.get(response["Location"]).json()
        assert job["status"] == "failed", job
        assert set(job["error"]) >= {"code", "message", "path"}

    return check


def assert_upload_refused(client):
    """The studio upload shows the form's error, or goes to its import's page, which shows the
    failure."""

    def check(response) -> None:
        if response.status_code != 302:
            assert_studio_refused(response)
            return
        page = client.get(response["Location"])
        assert page.status_code == 200
        job = ImportJob.objects.order_by("-created_at").first()
        assert job.status == ImportJob.Status.FAILED, (job.status, job.summary)
        issues = job.error.get("issues") or [job.error]
        assert issues[0]["message"] in html.unescape(page.content.decode())

    return check


def assert_studio_refused(response) -> None:
    """A studio answer to bad input: 4xx, or the form again with its errors (never 5xx)."""
    assert response.status_code < 500, (response.status_code, response.content[:800])
    if response.status_code < 400:
        assert response.status_code == 200, response.status_code  # not a redirect: not saved
        page = response.content.decode()
        assert 'class="field-error"' in page or "errorlist" in page, page[:800]


def refused_and_nothing_written(client, send, assert_refused) -> None:
    before = stored_state()
    response = send()
    assert_refused(response)
    cache.workspace_cache_clear()
    assert_unchanged(before)
    assert_every_profile_resolves(client)


def assert_unchanged(before: tuple[dict, dict]) -> None:
    counts, document = stored_state()
    changed = {label: (n, counts[label]) for label, n in before[0].items() if counts[label] != n}
    assert not changed, f"rows written (before, after): {changed}"
    assert document == before[1], "the stored workspace changed"


# --- API: create and update of every resource ---------------------------------------------------

ITEM = "layers/layer-000/items/docs/item-0000.md"

# (door, method, url, body with the hostile value in, that field's length limit)
API_TEXT_DOORS = [
    ("consumer-create", "post", "consumers/", lambda v: {"key": "c-new", "name": v}, NAME),
    # Keys that name other rows: a rule's layer and a profile's consumer (looked up before
    # the validator speaks).
    (
        "profile-create-rule-layer",
        "post",
        "profiles/",
        lambda v: {"key": "p-new", "consumer": "assistant", "objective": "o-new", "rules": {v: {}}},
        None,
    ),
    (
        "profile-update-rule-layer",
        "patch",
        "profiles/profile-0",
        lambda v: {"rules": {v: {}}},
        None,
    ),
    (
        "profile-create-consumer",
        "post",
        "profiles/",
        lambda v: {"key": "p-new", "consumer": v, "objective": "o-new"},
        None,
    ),
    ("consumer-update", "patch", "consumers/assistant", lambda v: {"name": v}, NAME),
    ("layer-create", "post", "layers/", lambda v: {"key": "l-new", "name": v}, NAME),
    ("layer-update", "patch", "layers/layer-000", lambda v: {"description": v}, NAME),
    (
        "layer-update-filter",
        "patch",
        "layers/layer-000",
        lambda v: {"itemFilter": {"customer_id": v}},
        None,
    ),
    (
        "layer-update-requires",
        "patch",
        "layers/layer-000",
        lambda v: {"requiresInput": [v]},
        None,
    ),
    (
        "item-create-title",
        "post",
        "layers/layer-000/items/",
        lambda v: {"path": "new.md", "title": v},
        TITLE,
    ),
    (
        "item-create-body",
        "post",
        "layers/layer-000/items/",
        lambda v: {"path": "new.md", "body": v},
        BODY,
    ),
    ("item-create-path", "post", "layers/layer-000/items/", lambda v: {"path": v}, PATH),
    ("item-update-title", "patch", ITEM, lambda v: {"title": v}, TITLE),
    ("item-update-metadata", "patch", ITEM, lambda v: {"metadata": {"customer_id": v}}, None),
    ("item-update-metadata-key", "patch", ITEM, lambda v: {"metadata": {v: "C-1"}}, None),
    (
        "profile-create",
        "post",
        "profiles/",
        lambda v: {
            "key": "p-new",
            "name": v,
            "consumer": "assistant",
            "objective": "o-new",
            "budget": 100,
        },
        NAME,
    ),
    ("profile-update", "patch", "profiles/profile-0", lambda v: {"name": v}, NAME),
    ("profile-update-objective", "patch", "profiles/profile-0", lambda v: {"objective": v}, KEY),
    (
        "rule-update",
        "patch",
        "profiles/profile-0/rules/layer-000",
        lambda v: {"currentness": {"maxAgeDays": 3, "field": v}},
        KEY,
    ),
    (
        "scenario-create",
        "post",
        "scenarios/",
        lambda v: {"name": v, "profile": "profile-0"},
        SCENARIO_NAME,
    ),
    (
        "scenario-create-now",
        "post",
        "scenarios/",
        lambda v: {"name": "s-new", "profile": "profile-0", "now": v},
        NOW,
    ),
    (
        "scenario-create-message",
        "post",
        "scenarios/",
        lambda v: {"name": "s-new", "profile": "profile-0", "input": {"message": v}},
        MESSAGE,
    ),
    ("scenario-update", "patch", "scenarios/s-0", lambda v: {"description": v}, None),
    ("resolve-profile", "post", "resolve", lambda v: {"profile": v}, None),
    (
        "resolve-message",
        "post",
        "resolve",
        lambda v: {"profile": "profile-0", "input": {"message": v}},
        MESSAGE,
    ),
    ("resolve-now", "post", "resolve", lambda v: {"profile": "profile-0", "now": v}, NOW),
    (
        "preview-input",
        "post",
        "profiles/profile-0/preview",
        lambda v: {"input": {"customer_id": v}},
        None,
    ),
]


def api_text_cases():
    for door, method, url, body, limit in API_TEXT_DOORS:
        for value in text_values(limit):
            yield pytest.param(method, url, body, value.values[0], id=f"{door}-{value.id}")


@pytest.mark.parametrize(("method", "url", "body", "value"), list(api_text_cases()))
def test_api__hostile_text__refused_in_the_error_shape_and_nothing_written(
    world, method, url, body, value
):
    text = json_text(body(value))
    refused_and_nothing_written(
        world,
        lambda: getattr(world, method)(API + url, text, content_type="application/json"),
        assert_api_refused,
    )


# (door, method, url, body with a hostile structure or number)
API_STRUCTURE_CASES = [
    ("layer-create-deep-65", "post", "layers/", {"key": "l-new", "name": nested_list(65)}),
    ("item-update-deep-5000", "patch", ITEM, {"metadata": {"a": nested_list(5_000)}}),
    (
        "resolve-deep-100000",
        "post",
        "resolve",
        {"profile": "profile-0", "input": nested_list(10**5)},
    ),
    ("item-update-metadata-5-levels", "patch", ITEM, {"metadata": deep_metadata()}),
    ("item-update-metadata-1001-values", "patch", ITEM, {"metadata": many_metadata_values()}),
    ("item-update-metadata-overflow", "patch", ITEM, {"metadata": {"n": Raw(OVERFLOW)}}),
    ("item-update-metadata-huge-int", "patch", ITEM, {"metadata": {"n": Raw(HUGE_DIGITS)}}),
    ("profile-update-budget-huge", "patch", "profiles/profile-0", {"budget": Raw(HUGE_DIGITS)}),
    ("profile-update-budget-column", "patch", "profiles/profile-0", {"budget": COLUMN_INTEGER}),
    ("profile-update-budget-overflow", "patch", "profiles/profile-0", {"budget": Raw(OVERFLOW)}),
    (
        "profile-create-budget-column",
        "post",
        "profiles/",
        {"key": "p-new", "consumer": "assistant", "objective": "o-new", "budget": COLUMN_INTEGER},
    ),
    (
        "rule-update-max-items-huge",
        "patch",
        "profiles/profile-0/rules/layer-000",
        {"maxItems": Raw(HUGE_DIGITS)},
    ),
    (
        "rule-update-max-items-column",
        "patch",
        "profiles/profile-0/rules/layer-000",
        {"maxItems": COLUMN_INTEGER},
    ),
    (
        "rule-update-priority-overflow",
        "patch",
        "profiles/profile-0/rules/layer-000",
        {"priority": Raw(OVERFLOW)},
    ),
    *[
        (f"resolve-now-{n}", "post", "resolve", {"profile": "profile-0", "now": date})
        for n, date in enumerate(DATES_OUT_OF_RANGE)
    ],
    *[
        (
            f"scenario-create-now-{n}",
            "post",
            "scenarios/",
            {"name": "s-new", "profile": "profile-0", "now": date},
        )
        for n, date in enumerate(DATES_OUT_OF_RANGE)
    ],
    (
        "scenario-create-input-101-keys",
        "post",
        "scenarios/",
        {"name": "s-new", "profile": "profile-0", "input": {f"k{n}": "v" for n in range(101)}},
    ),
    ("resolve-scenario-not-a-name", "post", "resolve", {"scenario": ["s-0"]}),
    ("expand-ref-deep", "post", "expand", {"profile": "profile-0", "ref": nested_list(65)}),
]


@pytest.mark.parametrize(
    ("method", "url", "body"),
    [pytest.param(method, url, body, id=door) for door, method, url, body in API_STRUCTURE_CASES],
)
def test_api__hostile_structure_or_number__refused_and_nothing_written(world, method, url, body):
    text = json_text(body)
    refused_and_nothing_written(
        world,
        lambda: getattr(world, method)(API + url, text, content_type="application/json"),
        assert_api_refused,
    )


@pytest.mark.parametrize("date", DATES_OUT_OF_RANGE)
def test_api__metadata_date_outside_years_1_to_9999__stored_as_no_date_and_all_resolve(world, date):
    response = world.patch(
        API + ITEM, json_text({"metadata": {"updated": date}}), content_type="application/json"
    )
    assert response.status_code == 200, response.content[:500]
    assert_every_profile_resolves(world)


# --- workspace documents: API (YAML and JSON), studio upload, import_workspace, the CLI ---------


def workspace_with(change) -> dict:
    document = small_workspace()
    change(document)
    return document


def first_item(document) -> dict:
    return document["layers"][0]["items"][0]


def item_field(field, value):
    return lambda document: first_item(document).__setitem__(field, value)


def yaml_text(document) -> str:
    return yaml.safe_dump(document, allow_unicode=False, sort_keys=False, width=10**9)


def deep_yaml(levels: int) -> str:
    return "version: 1\nlayers: " + "[" * levels + "]" * levels + "\n"


# (id, the document's bytes as YAML, as JSON); None where that form cannot carry it.
def document_cases():
    text_changes = [
        ("title-nul", item_field("title", "a\x00b")),
        ("title-surrogate", item_field("title", "a\ud800b")),
        ("title-over-1000", item_field("title", "t" * (TITLE + 1))),
        ("body-over-1000000", item_field("body", "b" * (BODY + 1))),
        ("metadata-key-nul", item_field("metadata", {"a\x00": 1})),
        ("metadata-5-levels", item_field("metadata", deep_metadata())),
        ("metadata-1001-values", item_field("metadata", many_metadata_values())),
        ("layer-name-over-1000", lambda d: d["layers"][0].__setitem__("name", "n" * (NAME + 1))),
        ("budget-column", lambda d: d["profiles"][0].__setitem__("budget", COLUMN_INTEGER)),
    ]
    for name, change in text_changes:
        document = workspace_with(change)
        yield name, yaml_text(document).encode(), json_text(document).encode()
    huge = json_text(
        workspace_with(lambda d: d["profiles"][0].__setitem__("budget", Raw(HUGE_DIGITS)))
    )
    yield "budget-4301-digits", huge.encode(), huge.encode()  # JSON is YAML too
    overflow = json_text(workspace_with(item_field("metadata", {"n": Raw(OVERFLOW)})))
    yield "metadata-overflow", None, overflow.encode()
    yield (
        "metadata-inf",
        yaml_text(workspace_with(item_field("metadata", {"n": 1.0})))
        .replace("n: 1.0", "n: .inf")
        .encode(),
        None,
    )
    yield "yaml-deep-65", deep_yaml(65).encode(), None
    yield "yaml-deep-1000", deep_yaml(1_000).encode(), None
    yield "json-deep-65", None, ('{"version": 1, "layers": ' + nested_list(65) + "}").encode()
    yield "json-deep-5000", None, ('{"version": 1, "layers": ' + nested_list(5_000) + "}").encode()
    yield "yaml-alias-bomb", (ALIAS_BOMB + "\nversion: 1\n").encode(), None
    yield "not-utf8", b"version: 1\nconsumers: [{key: \xff\xfe}]\n", b'{"version": 1, "x": "\xff"}'
    yield "duplicate-key", b"version: 1\nversion: 1\n", b'{"version": 1, "version": 1}'
    yield "raw-nul-byte", b"version: 1\nconsumers: [{key: a\x00b}]\n", b'{"version": 1\x00}'
    # YAML tags of the safe schema that build no JSON value (bytes, a set, lists of pairs),
    # and one the safe loader never constructs.
    for tag, value in NOT_JSON_TAGS.items():
        document = yaml_text(workspace_with(item_field("metadata", {"blob": "TAGGED"})))
        yield f"yaml-tag-{tag}", document.replace("TAGGED", value).encode(), None


DOCUMENTS = [
    pytest.param(text, content_type, id=f"{name}-{kind}")
    for name, yaml_bytes, json_bytes in document_cases()
    for kind, text, content_type in (
        ("yaml", yaml_bytes, "application/yaml"),
        ("json", json_bytes, "application/json"),
    )
    if text is not None
]


@pytest.mark.parametrize("mode", ["merge", "replace"])
@pytest.mark.parametrize(("text", "content_type"), DOCUMENTS)
def test_api_workspace__hostile_document__refused_and_nothing_written(
    world, text, content_type, mode
):
    refused_and_nothing_written(
        world,
        lambda: world.post(API + f"workspace?mode={mode}", text, content_type=content_type),
        assert_import_refused(world),
    )


@pytest.mark.parametrize(("text", "content_type"), DOCUMENTS)
def test_studio_upload__hostile_document__refused_and_nothing_written(world, text, content_type):
    suffix = "yaml" if "yaml" in content_type else "json"
    refused_and_nothing_written(
        world,
        lambda: world.post(
            "/workspace/upload/",
            {"file": SimpleUploadedFile(f"w.{suffix}", text), "mode": "replace"},
        ),
        assert_upload_refused(world),
    )


@pytest.mark.parametrize(("text", "content_type"), DOCUMENTS)
def test_import_workspace_command__hostile_document__exit_2_and_nothing_written(
    world, tmp_path, text, content_type
):
    path = tmp_path / "workspace.txt"
    path.write_bytes(text)

    def run():
        try:
            call_command("import_workspace", str(path), stdout=io.StringIO(), stderr=io.StringIO())
        except CommandError as exc:
            return exc
        return None

    before = stored_state()
    error = run()
    assert isinstance(error, CommandError), "the command accepted it"
    assert error.returncode == 2
    cache.workspace_cache_clear()
    assert_unchanged(before)
    assert_every_profile_resolves(world)


# What only storage refuses (a column's range, a number JSON cannot write back) is valid for
# the engine, which has neither.
CLI_DOCUMENTS = [
    case
    for case in DOCUMENTS
    if not case.id.startswith(("budget-column", "metadata-overflow", "metadata-inf"))
]


@pytest.mark.parametrize(("text", "content_type"), CLI_DOCUMENTS)
def test_cli__hostile_document__exit_2_with_the_error_json(tmp_path, text, content_type):
    path = tmp_path / "workspace.txt"
    path.write_bytes(text)
    out = io.StringIO()
    with redirect_stdout(out):
        code = cli.main(["resolve", str(path), "--profile", "profile-0"])
    assert code == 2, out.getvalue()[:500]
    error = json.loads(out.getvalue())["error"]
    assert set(error) == {"code", "message", "path", "retryable"}
    assert error["code"] == "INVALID_WORKSPACE"


@pytest.mark.parametrize(
    "request_text",
    [
        pytest.param(json.dumps({"profile": "profile-0", "now": date}), id=f"now-{n}")
        for n, date in enumerate(DATES_OUT_OF_RANGE)
    ]
    + [
        pytest.param('{"profile": "a\\u0000b"}', id="profile-nul"),
        pytest.param('{"profile": "a\\ud800b"}', id="profile-surrogate"),
        pytest.param('{"profile": ' + nested_list(65) + "}", id="deep-65"),
        pytest.param('{"profile": "profile-0", "input": {"n": ' + HUGE_DIGITS + "}}", id="huge"),
    ],
)
def test_cli__hostile_request__exit_2_with_the_error_json(tmp_path, request_text):
    path = tmp_path / "workspace.json"
    path.write_text(json.dumps(small_workspace()), encoding="utf-8")
    out = io.StringIO()
    with redirect_stdout(out):
        code = cli.main(["resolve", str(path), "--request", request_text])
    assert code == 2, out.getvalue()[:500]
    assert json.loads(out.getvalue())["error"]["code"] == "INVALID_REQUEST"


# --- the studio's forms and actions -------------------------------------------------------------


class PageForm(HTMLParser):
    """The fields a browser would submit from a studio page (the sign-out form left out)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.fields: dict[str, str] = {}
        self._skipping = False
        self._textarea = None
        self._select = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form" and "logout" in (attrs.get("action") or ""):
            self._skipping = True
        if self._skipping:
            return
        if tag == "option" and self._select:
            # A browser sends the selected option, else the first one (even an empty value).
            if "selected" in attrs or self._first_option:
                self.fields[self._select] = attrs.get("value", "")
                self._first_option = False
            return
        name = attrs.get("name")
        if not name:
            return
        if tag == "input":
            kind = attrs.get("type", "text")
            if kind in ("submit", "button", "file") or (
                kind in ("checkbox", "radio") and "checked" not in attrs
            ):
                return
            self.fields[name] = attrs.get("value") or ""
        elif tag == "textarea":
            self._textarea = name
            self.fields[name] = ""
        elif tag == "select":
            self._select = name
            self._first_option = True
            self.fields[name] = ""

    def handle_endtag(self, tag):
        if tag == "form" and self._skipping:
            self._skipping = False
        elif tag == "textarea":
            self._textarea = None
        elif tag == "select":
            self._select = None

    def handle_data(self, data):
        if self._textarea:
            self.fields[self._textarea] += data.removeprefix("\n")


@pytest.mark.parametrize(
    ("options", "sent"),
    [
        ('<option value="" selected>(default)</option><option value="warn">warn</option>', ""),
        ('<option value="">(default)</option><option value="warn">warn</option>', ""),
        ('<option value="a">a</option><option value="b" selected>b</option>', "b"),
    ],
)
def test_page_form__select__sends_what_a_browser_sends(options, sent):
    parser = PageForm()
    parser.feed(f'<form><select name="on">{options}</select></form>')

    assert parser.fields == {"on": sent}


def page_fields(client, url: str) -> dict:
    """Return the fields of the page's form as the studio filled them in."""
    page = client.get(url)
    assert page.status_code == 200, (url, page.status_code)
    parser = PageForm()
    parser.feed(page.content.decode())
    return parser.fields


def item_page() -> str:
    item = Item.objects.get(layer__key="layer-000", path="docs/item-0000.md")
    return f"/layers/layer-000/items/{item.pk}/"


EDITOR = "/profiles/profile-0/"
CREATE = "/profiles/_new/"
LAYER = "/layers/layer-000/"


def studio_cases():
    """Yield (id, the page, where its form posts, the fields changed from what the page shows).

    A page or a post address may be a function (the item's id is known only at run time)."""
    for value in text_values(NAME, surrogate=False):
        yield f"create-name-{value.id}", CREATE, CREATE, {"name": value.values[0]}
        yield f"layer-name-{value.id}", LAYER, LAYER, {"name": value.values[0]}
        yield f"layer-description-{value.id}", LAYER, LAYER, {"description": value.values[0]}
    for value in text_values(TITLE, surrogate=False):
        yield f"item-title-{value.id}", item_page, item_page, {"title": value.values[0]}
    for value in text_values(BODY, surrogate=False):
        yield f"item-body-{value.id}", item_page, item_page, {"body": value.values[0]}
    new_profile = {"key": "p-new", "objective": "o-new", "budget": "100"}
    yield "create-key-over-64", CREATE, CREATE, {**new_profile, "key": "k" * (KEY + 1)}
    yield "create-budget-4301-digits", CREATE, CREATE, {**new_profile, "budget": HUGE_DIGITS}
    yield "create-budget-column", CREATE, CREATE, {**new_profile, "budget": str(COLUMN_INTEGER)}
    for name, metadata in (
        ("nul-escape", '{"a": "\\u0000"}'),
        ("surrogate-escape", '{"a": "\\ud800"}'),
        ("deep-65", '{"a": ' + nested_list(65) + "}"),
        ("deep-5000", '{"a": ' + nested_list(5_000) + "}"),
        ("5-levels", json.dumps(deep_metadata())),
        ("1001-values", json.dumps(many_metadata_values())),
        ("huge-int", '{"a": ' + HUGE_DIGITS + "}"),
        ("overflow", '{"a": ' + OVERFLOW + "}"),
        ("not-an-object", "[1, 2]"),
    ):
        json_mode = {"metadata_mode": "json", "metadata_text": metadata}
        yield f"item-metadata-{name}", item_page, item_page, json_mode
        if metadata.startswith('{"a": '):  # the same value typed in a key/value row
            row = {"metadata_mode": "rows", "metadata_key_0": "a"}
            row["metadata_value_0"] = metadata[len('{"a": ') : -1]
            yield f"item-metadata-row-{name}", item_page, item_page, row
    save = EDITOR + "save/"
    yield "editor-budget-4301-digits", EDITOR, save, {"budget": HUGE_DIGITS}
    yield "editor-budget-column", EDITOR, save, {"budget": str(COLUMN_INTEGER)}
    yield "editor-budget-overflow", EDITOR, save, {"budget": OVERFLOW}
    for field, value, name in (
        ("maxItems", HUGE_DIGITS, "max-items-4301-digits"),
        ("maxItems", str(COLUMN_INTEGER), "max-items-column"),
        ("priority", OVERFLOW, "priority-overflow"),
        ("currentness.field", "f" * (KEY + 1), "currentness-field-over-64"),
    ):
        yield f"editor-{name}", EDITOR, save, {f"layer-000-{field}": value}
    scenario = EDITOR + "scenario/save/"
    yield (
        "editor-scenario-name-over-200",
        EDITOR,
        scenario,
        {"scenario_name": "s" * (SCENARIO_NAME + 1)},
    )
    named = {"scenario_name": "s-new"}
    yield "editor-scenario-now-over-64", EDITOR, scenario, {**named, "now": "2" * (NOW + 1)}
    for n, date in enumerate(DATES_OUT_OF_RANGE):
        yield f"editor-scenario-now-{n}", EDITOR, scenario, {**named, "now": date}
    yield (
        "editor-scenario-message-over-20000",
        EDITOR,
        scenario,
        {**named, "message": "m" * (MESSAGE + 1)},
    )
    load = EDITOR + "scenario/load/"
    yield "editor-load-scenario-bad-id", EDITOR, load, {"scenario": "abc"}
    yield "editor-load-scenario-huge-id", EDITOR, load, {"scenario": "9" * 30}


STUDIO_CASES = [
    pytest.param(page, action, changes, id=name) for name, page, action, changes in studio_cases()
]


@pytest.mark.parametrize(("page", "action", "changes"), STUDIO_CASES)
def test_studio__hostile_form__refused_and_nothing_written(world, page, action, changes):
    fields = page_fields(world, page() if callable(page) else page)
    missing = set(changes) - set(fields)
    assert not missing, f"the page has no field {missing} (renamed?): update this case"
    target = action() if callable(action) else action
    data = {**fields, **changes}
    refused_and_nothing_written(world, lambda: world.post(target, data), assert_studio_refused)


@pytest.mark.parametrize(
    "query",
    ["scenario=abc", "scenario=99999999999999999999999", "scenario=%00", "q=%00"],
)
def test_studio__hostile_query__4xx_never_500(world, query):
    for url in ("/profiles/profile-0/", "/layers/layer-000/items/"):
        response = world.get(f"{url}?{query}")
        assert response.status_code < 500, (url, query, response.status_code)
        if "scenario" in query and url.startswith("/profiles/"):
            assert response.status_code in (400, 404)


@pytest.mark.parametrize("date", DATES_OUT_OF_RANGE)
def test_studio__metadata_date_outside_years_1_to_9999__saved_and_all_resolve(world, date):
    fields = page_fields(world, item_page())
    response = world.post(item_page(), {**fields, "metadata_text": json.dumps({"updated": date})})
    assert response.status_code in (200, 302), response.content[:500]
    assert_every_profile_resolves(world)

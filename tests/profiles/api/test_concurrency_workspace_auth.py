"""ETags and If-Match (no lost updates), workspace import/export, tokens, schema and docs."""

import json
import re

import pytest
import yaml
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from profiles.models import (
    ApiKey,
    Consumer,
    Environment,
    Item,
    Layer,
    Profile,
    Rule,
    WorkspaceVersion,
)
from tests.profiles.conftest import API, NOW

pytestmark = pytest.mark.django_db

STALE = '"0000000000000000000000000000dead"'


# --- concurrency --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "method", "body"),
    [
        ("profiles/profile-0", "patch", {"budget": 123}),
        ("profiles/profile-0", "put", {"consumer": "assistant", "objective": "o", "budget": 1}),
        ("profiles/profile-0/rules/layer-000", "patch", {"maxItems": 1}),
        ("profiles/profile-0/rules/layer-000", "put", {"maxItems": 1}),
        ("layers/layer-000", "patch", {"name": "Renamed"}),
        ("layers/layer-000/items/docs/item-0000.md", "patch", {"title": "Renamed"}),
        ("layers/layer-000/items/docs/item-0000.md", "put", {"title": "Renamed"}),
        ("consumers/assistant", "patch", {"name": "Renamed"}),
    ],
)
def test_write__stale_if_match__412_and_nothing_changes(small, editor_client, url, method, body):
    current = editor_client.get(API + url)
    version = WorkspaceVersion.current_token()

    response = getattr(editor_client, method)(API + url, body, format="json", HTTP_IF_MATCH=STALE)

    assert response.status_code == 412
    assert response.json()["error"]["code"] == "PRECONDITION_FAILED"
    assert response["ETag"] == current["ETag"]
    assert editor_client.get(API + url).content == current.content
    assert WorkspaceVersion.current_token() == version


def test_profile__two_editors_save_from_the_same_version__second_gets_412(small, editor_client):
    etag = editor_client.get(API + "profiles/profile-0")["ETag"]

    first = editor_client.patch(
        API + "profiles/profile-0", {"budget": 700}, format="json", HTTP_IF_MATCH=etag
    )
    second = editor_client.patch(
        API + "profiles/profile-0", {"budget": 900}, format="json", HTTP_IF_MATCH=etag
    )

    assert first.status_code == 200
    assert first["ETag"] != etag
    assert second.status_code == 412
    assert Profile.objects.get(key="profile-0").budget == 700


def test_rule_save__current_etag__applies_and_returns_the_new_etag(small, editor_client):
    etag = editor_client.get(API + "profiles/profile-0/rules/layer-000")["ETag"]

    response = editor_client.patch(
        API + "profiles/profile-0/rules/layer-000",
        {"maxItems": 1},
        format="json",
        HTTP_IF_MATCH=etag,
    )

    assert response.status_code == 200
    assert response["ETag"] == editor_client.get(API + "profiles/profile-0")["ETag"]
    assert Rule.objects.get(profile__key="profile-0", layer__key="layer-000").max_items == 1


def test_profile_etag__changes_when_a_rule_changes_elsewhere(small, editor_client):
    before = editor_client.get(API + "profiles/profile-0")["ETag"]

    rule = Rule.objects.get(profile__key="profile-0", layer__key="layer-000")
    rule.max_items = 2
    rule.save()

    assert editor_client.get(API + "profiles/profile-0")["ETag"] != before


def test_item_delete__stale_if_match__412_and_kept(small, editor_client):
    response = editor_client.delete(
        API + "layers/layer-000/items/docs/item-0000.md", HTTP_IF_MATCH=STALE
    )

    assert response.status_code == 412
    assert Item.objects.filter(path="docs/item-0000.md", layer__key="layer-000").exists()


# --- workspace ----------------------------------------------------------------------------


def test_workspace__get_json_and_yaml__same_document(small, editor_client):
    as_json = editor_client.get(API + "workspace")
    as_yaml = editor_client.get(API + "workspace?format=yaml")

    assert as_json.status_code == as_yaml.status_code == 200
    assert as_yaml["Content-Type"].startswith("application/yaml")
    document = json.loads(b"".join(as_json.streaming_content))
    assert yaml.safe_load(b"".join(as_yaml.streaming_content)) == document
    assert [layer["key"] for layer in document["layers"]] == [
        "layer-000",
        "layer-001",
        "layer-002",
    ]


def import_job(client, response) -> dict:
    """Return the import job a 202 names, as its URL shows it (the tests run tasks at once)."""
    assert response.status_code == 202
    assert response["Location"] == response.json()["url"]
    job = client.get(response["Location"])
    assert job.status_code == 200
    return job.json()


def test_workspace__post_yaml_merge__adds_and_keeps(small, editor_client):
    text = "consumers:\n  - key: from-yaml\n    name: From YAML\n"

    response = editor_client.post(API + "workspace", text, content_type="application/yaml")

    job = import_job(editor_client, response)
    assert (job["status"], job["progress"], job["error"]) == ("succeeded", 100, None)
    assert job["summary"]["consumers"]["created"] == 1
    assert Consumer.objects.filter(key="from-yaml").exists()
    assert Layer.objects.count() == 3


def test_workspace__post_replace__deletes_what_is_not_given(small, editor_client):
    document = json.loads(b"".join(editor_client.get(API + "workspace").streaming_content))
    document["profiles"] = [document["profiles"][0]]

    response = editor_client.post(API + "workspace?mode=replace", document, format="json")

    assert import_job(editor_client, response)["summary"]["profiles"]["deleted"] == 1
    assert list(Profile.objects.values_list("key", flat=True)) == ["profile-0"]


def test_workspace__invalid_document__job_fails_with_every_issue_and_nothing_written(
    small, editor_client
):
    document = {
        "consumers": [{"key": "BAD KEY"}],
        "layers": [{"key": "x", "availability": "sometimes"}],
    }
    counts = (Consumer.objects.count(), Layer.objects.count(), Item.objects.count())

    response = editor_client.post(API + "workspace?mode=replace", document, format="json")

    job = import_job(editor_client, response)
    assert job["status"] == "failed"
    body = job["error"]
    assert body["code"] == "INVALID_WORKSPACE"
    assert body["path"] == "consumers[0].key"
    assert [issue["path"] for issue in body["issues"]][:2] == [
        "consumers[0].key",
        "layers[0].availability",
    ]
    assert (Consumer.objects.count(), Layer.objects.count(), Item.objects.count()) == counts


def test_workspace__duplicate_json_key__job_fails_naming_it(small, editor_client):
    response = editor_client.post(
        API + "workspace",
        b'{"consumers": [], "consumers": []}',
        content_type="application/json",
    )

    job = import_job(editor_client, response)
    assert job["status"] == "failed"
    assert "duplicate" in job["error"]["message"]


def test_workspace__bad_mode__400_at_mode(small, editor_client):
    response = editor_client.post(API + "workspace?mode=wipe", {}, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "mode"


# --- tokens -------------------------------------------------------------------------------


def test_create_api_key__user_token__prints_only_a_token_that_authenticates(small, reader, capsys):
    call_command("create_api_key", "reader", "--user-token")
    key = capsys.readouterr().out.strip()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")

    response = client.get(API + "profiles/")

    assert response.status_code == 200
    assert ApiKey.objects.get().kind == "user"


def test_create_api_key__scoped__prints_a_bearer_key_of_those_scopes(small, staff, capsys):
    call_command("create_api_key", "staff", "--name", "bot", "--scope", "resolve")
    key = capsys.readouterr().out.strip()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")

    assert client.get(API + "profiles/").status_code == 403
    record = ApiKey.objects.get()
    assert (record.name, record.scopes, record.owner) == ("bot", ["resolve"], staff)


def test_create_api_key__environment_and_expiry__printed_as_applied(small, staff, capsys):
    # Issue 33: --environment was applied but not said; the key still goes alone to stdout.
    for key in ("production", "staging"):
        Environment.objects.create(key=key)
    call_command(
        "create_api_key",
        "staff",
        "--scope",
        "resolve",
        "--environment",
        "production",
        "--environment",
        "staging",
        "--expires",
        "2099-06-30",
    )
    printed = capsys.readouterr()

    assert printed.out.strip() == printed.out.strip().split()[0]  # the key, nothing else
    assert "environments production, staging" in printed.err
    assert "expires 2099-06-30T23:59:59Z" in printed.err
    assert "send it as 'Authorization: Token <key>'" in printed.err
    assert ApiKey.objects.get().environments == ["production", "staging"]


def test_create_api_key__no_environment__says_every_environment(small, staff, capsys):
    call_command("create_api_key", "staff", "--scope", "read")

    assert "environments every environment; no expiry" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["nobody", "--scope", "read"], 'no user "nobody"'),
        (["reader"], "give --scope"),
        (["reader", "--scope", "read", "--environment", "mars"], "--environment: unknown"),
        (["reader", "--scope", "read", "--expires", "2020-01-01"], "--expires: must be in"),
    ],
)
def test_create_api_key__bad_arguments__error_naming_the_option_and_no_key(
    small, reader, arguments, message
):
    with pytest.raises(CommandError, match=message):
        call_command("create_api_key", *arguments)

    assert not ApiKey.objects.exists()


def test_auth_token__username_and_password__a_new_token_replacing_the_old(small, reader):
    def obtain():
        return APIClient().post(
            API + "auth/token",
            {"username": "reader", "password": "reader-password-1"},
            format="json",
        )

    first, second = obtain(), obtain()

    assert first.status_code == second.status_code == 200
    live = ApiKey.objects.get(revoked_at=None)
    assert live.owner == reader and live.kind == "user"
    assert second.json()["token"].startswith(live.prefix)
    for response, status in ((first, 401), (second, 200)):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {response.json()['token']}")
        assert client.get(API + "profiles/").status_code == status


def test_auth_token__wrong_password__400_in_the_error_shape(small, reader):
    response = APIClient().post(
        API + "auth/token", {"username": "reader", "password": "nope"}, format="json"
    )

    assert response.status_code == 400
    assert set(response.json()["error"]) == {"code", "message", "path", "retryable"}


# --- schema, docs, browsable API ----------------------------------------------------------

OPERATIONS = {
    ("/api/v1/resolve", "post"),
    ("/api/v1/expand", "post"),
    ("/api/v1/profiles/{key}/preview", "post"),
    ("/api/v1/consumers/", "get"),
    ("/api/v1/consumers/", "post"),
    ("/api/v1/layers/{key}/items/", "get"),
    ("/api/v1/layers/{key}/items/{path}", "patch"),
    ("/api/v1/profiles/{key}", "put"),
    ("/api/v1/profiles/{key}/rules/{layer}", "patch"),
    ("/api/v1/scenarios/", "post"),
    ("/api/v1/workspace", "get"),
    ("/api/v1/workspace", "post"),
}


# Actions that take no fields declare no body (send nothing or {}).
BODILESS = {
    "profile_versions_restore",
    "webhooks_test",  # a ping of the webhook: nothing to send
    *(f"change_requests_{action}" for action in ("approve", "reject", "close", "rebase", "apply")),
}


def test_schema__every_operation__has_responses_with_schemas_and_the_error_shape(reader_client):
    schema = yaml.safe_load(reader_client.get(API + "schema/").content)
    operations = {
        (path, method): operation
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
    }

    assert set(operations) >= OPERATIONS
    for (path, method), operation in operations.items():
        assert (
            "200" in operation["responses"]
            or "201" in operation["responses"]
            or "202" in operation["responses"]
            or ("204" in operation["responses"])
        ), (path, method)
        assert operation["responses"]["401"]["content"], (path, method)
        if method in ("post", "put", "patch") and operation["operationId"] not in BODILESS:
            assert operation["requestBody"]["content"], (path, method)
    resolve = operations[("/api/v1/resolve", "post")]
    assert resolve["requestBody"]["content"]["application/json"]["examples"]
    assert "Resolution" in str(resolve["responses"]["200"])
    assert schema["components"]["securitySchemes"]["tokenAuth"]


@pytest.mark.parametrize(
    ("path", "component"),
    [
        ("/api/v1/resolve", "ResolveRequest"),
        ("/api/v1/profiles/{key}/preview", "PreviewRequest"),
    ],
)
def test_schema__resolve_and_preview__document_detail_with_a_summary_example(
    reader_client, path, component
):
    schema = yaml.safe_load(reader_client.get(API + "schema/").content)
    body = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]

    detail = schema["components"]["schemas"][component]["properties"]["detail"]
    choices = {
        value
        for option in detail["oneOf"]
        for value in schema["components"]["schemas"][option["$ref"].split("/")[-1]]["enum"]
    }
    examples = [example["value"] for example in body["examples"].values()]
    assert choices >= {"full", "summary"}
    assert any(example.get("detail") == "summary" for example in examples)


def test_docs__swagger_ui__served_from_local_static_files_only(client):
    response = client.get(API + "docs/")

    html = response.content.decode()
    urls = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert response.status_code == 200
    assert urls
    assert all(url.startswith("/static/") or url.startswith("/api/") for url in urls), urls
    assert "swagger-ui-bundle" in html
    assert not re.search(r"https?://", " ".join(urls))


def test_browsable_api__html_request__renders_the_page(small, reader, client):
    client.force_login(reader)

    response = client.get(API + "profiles/", HTTP_ACCEPT="text/html")

    assert response.status_code == 200
    assert b"profile-0" in response.content
    assert response["Content-Type"].startswith("text/html")


def test_resolve__browsable_api_form_post__resolves(small, reader, client):
    client.force_login(reader)
    request = {"profile": "profile-0", "input": {"customer_id": "C-1"}, "now": NOW}

    response = client.post(
        API + "resolve", request, content_type="application/json", HTTP_ACCEPT="text/html"
    )

    assert response.status_code == 200
    assert b"ctxstudio/1" in response.content

"""Scoped API keys over the API: the contract of /api/v1/keys, who may make them, and what a key
may do: its owner's role and its scopes, on every door (profiles.workspace.permissions)."""

import datetime as dt

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework.test import APIClient

from profiles.models import ApiKey, ImportJob, KeyScope
from profiles.workspace.keys import ApiKeyInvalid
from profiles.workspace.permissions import SCOPE_CAPABILITIES
from tests.profiles.conftest import API, NOW, api_key_for, token_client

pytestmark = pytest.mark.django_db

DANA = {
    "profile": "support-answer",
    "input": {"message": "Where is my refund?", "customer_id": "C-1001"},
    "now": NOW,
}


def bearer(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def error(response) -> dict:
    return response.json()["error"]


# --- the contract ------------------------------------------------------------------------------


def test_create__editor__201_with_the_key_once_and_the_list_never_shows_it(demo, editor_client):
    response = editor_client.post(
        API + "keys",
        {"name": "support bot", "scopes": ["resolve"], "environments": ["production"]},
        format="json",
    )

    assert response.status_code == 201
    body = response.json()
    assert {"id", "name", "scopes", "environments", "expiresAt", "key"} <= set(body)
    assert (body["name"], body["scopes"], body["environments"]) == (
        "support bot",
        ["resolve"],
        ["production"],
    )
    assert body["expiresAt"] is None and body["key"].startswith(body["prefix"])
    listed = editor_client.get(API + "keys").json()
    assert listed["count"] == 1
    assert listed["results"][0]["id"] == body["id"]
    assert "key" not in listed["results"][0]
    assert body["key"] not in editor_client.get(API + "keys").content.decode()
    assert bearer(body["key"]).post(API + "resolve", DANA, format="json").status_code == 200
    # Location names the key (issue 33: docs/api.md promises it on every 201); DELETE there.
    assert response["Location"] == f"http://testserver{API}keys/{body['id']}"
    assert editor_client.delete(response["Location"]).status_code == 204


def test_revoke__delete__204_and_the_key_gets_401(demo, editor, editor_client):
    key = api_key_for(editor, scopes=["read"])
    record = ApiKey.objects.get(kind="scoped")

    response = editor_client.delete(API + f"keys/{record.pk}")

    assert response.status_code == 204
    assert bearer(key).get(API + "profiles/").status_code == 401
    assert editor_client.get(API + "keys").json()["count"] == 0
    assert editor_client.delete(API + f"keys/{record.pk}").status_code == 404


def test_keys__editor_sees_own_only_staff_sees_and_revokes_everyones(
    demo, editor, staff, editor_client, staff_client
):
    api_key_for(editor, scopes=["read"], name="editor's")
    api_key_for(staff, scopes=["read"], name="staff's")
    staffs = ApiKey.objects.get(name="staff's")
    editors = ApiKey.objects.get(name="editor's")

    assert [k["name"] for k in editor_client.get(API + "keys").json()["results"]] == ["editor's"]
    assert {k["owner"] for k in staff_client.get(API + "keys").json()["results"]} == {
        "editor",
        "staff",
    }
    assert editor_client.delete(API + f"keys/{staffs.pk}").status_code == 404
    assert staff_client.delete(API + f"keys/{editors.pk}").status_code == 204


def test_create__reader__403_and_reader_lists_nothing(demo, reader_client):
    response = reader_client.post(API + "keys", {"name": "x", "scopes": ["resolve"]}, format="json")

    assert response.status_code == 403
    assert error(response)["code"] == "PERMISSION_DENIED"
    assert "MANAGE_KEYS" in error(response)["message"]
    assert reader_client.get(API + "keys").status_code == 403


@pytest.mark.parametrize("scopes", [["write"], ["resolve"]])
def test_create__with_a_scoped_key__403_forbidden(demo, editor, scopes):
    client = bearer(api_key_for(editor, scopes=scopes))

    response = client.post(API + "keys", {"name": "x", "scopes": ["resolve"]}, format="json")

    assert response.status_code == 403
    assert error(response)["code"] == "FORBIDDEN"
    assert client.get(API + "keys").status_code == 403


PAST = "2020-01-01T00:00:00Z"


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        ({"scopes": ["read"]}, "name", "is required"),
        ({"name": "", "scopes": ["read"]}, "name", "non-empty"),
        ({"name": "x" * 101, "scopes": ["read"]}, "name", "at most 100"),
        ({"name": "x"}, "scopes", "is required"),
        ({"name": "x", "scopes": []}, "scopes", "at least one"),
        ({"name": "x", "scopes": "read"}, "scopes", "list of strings"),
        ({"name": "x", "scopes": ["admin"]}, "scopes[0]", 'unknown scope "admin"'),
        ({"name": "x", "scopes": ["read", "read"]}, "scopes[1]", "twice"),
        ({"name": "x", "scopes": ["read"], "environments": ["mars"]}, "environments[0]", "mars"),
        (
            {"name": "x", "scopes": ["read"], "environments": ["staging", "staging"]},
            "environments[1]",
            "twice",
        ),
        ({"name": "x", "scopes": ["read"], "expiresAt": PAST}, "expiresAt", "in the future"),
        ({"name": "x", "scopes": ["read"], "expiresAt": "soon"}, "expiresAt", "ISO 8601"),
        ({"name": "x", "scopes": ["read"], "owner": "staff"}, "owner", "unknown field"),
    ],
)
def test_create__invalid_field__400_naming_it_and_nothing_made(
    demo, editor_client, body, path, message
):
    response = editor_client.post(API + "keys", body, format="json")

    assert response.status_code == 400
    assert error(response)["code"] == "INVALID_REQUEST"
    assert error(response)["path"] == path
    assert message in error(response)["message"]
    assert not ApiKey.objects.filter(kind="scoped").exists()


def test_create__expiry__the_key_works_until_then_and_401_after(demo, editor_client, monkeypatch):
    expires = timezone.now() + dt.timedelta(days=1)
    body = editor_client.post(
        API + "keys",
        {"name": "x", "scopes": ["read"], "expiresAt": expires.isoformat()},
        format="json",
    ).json()
    client = bearer(body["key"])

    assert client.get(API + "profiles/").status_code == 200
    monkeypatch.setattr(timezone, "now", lambda: expires + dt.timedelta(seconds=1))
    response = client.get(API + "profiles/")
    assert response.status_code == 401
    assert error(response)["code"] == "AUTHENTICATION_FAILED"


def test_scoped_key__owner_deactivated__401(demo, editor):
    key = api_key_for(editor, scopes=["read"])
    User.objects.filter(pk=editor.pk).update(is_active=False)

    assert bearer(key).get(API + "profiles/").status_code == 401


# --- scope × door --------------------------------------------------------------------------------


def doors(ref: str) -> dict[str, tuple]:
    """Every kind of door: (method, path, body), by what it is."""
    rule = {"mode": "inline"}
    return {
        "resolve": ("post", "resolve", DANA),
        "expand": ("post", "expand", {**DANA, "ref": ref}),
        "preview": ("post", "profiles/support-answer/preview", {"input": DANA["input"]}),
        "read profiles": ("get", "profiles/", None),
        "read a profile": ("get", "profiles/support-answer", None),
        "read layers": ("get", "layers/", None),
        "read items": ("get", "layers/kb/items/", None),
        "read scenarios": ("get", "scenarios/", None),
        "read environments": ("get", "environments/", None),
        "read change requests": ("get", "change-requests/", None),
        "read versions": ("get", "profiles/support-answer/versions/", None),
        "export": ("get", "workspace", None),
        "impact": ("post", "profiles/draft-reply/impact", {"rules": {}}),
        "write a rule": ("put", "profiles/draft-reply/rules/kb", rule),
        "write a layer": ("patch", "layers/kb", {"name": "KB"}),
        "delete a profile": ("delete", "profiles/draft-reply", None),
        "import": ("post", "workspace", {}),
        "keys": ("get", "keys", None),
    }


RESOLUTION_DOORS = {"resolve", "expand", "preview"}
READS = {
    "read profiles",
    "read a profile",
    "read layers",
    "read items",
    "read scenarios",
    "read environments",
    "read change requests",
    "read versions",
    "export",
    "impact",
}
WRITES = {"write a rule", "write a layer", "delete a profile", "import"}


def glossary_ref(client) -> str:
    references = client.post(API + "resolve", DANA, format="json").json()["references"]
    return next(entry for entry in references if entry["reason"] == "ON_DEMAND")["ref"]


@pytest.mark.parametrize(
    ("scopes", "allowed"),
    [
        (["resolve"], RESOLUTION_DOORS),
        (["read"], RESOLUTION_DOORS | READS),
        (["write"], RESOLUTION_DOORS | READS | WRITES),
        (["resolve", "read"], RESOLUTION_DOORS | READS),
    ],
)
def test_scoped_key_of_an_editor__each_door__its_scopes_only_others_403_forbidden(
    demo, editor, scopes, allowed
):
    # Given an editor's key with these scopes (the editor's role opens every door but keys')
    client = bearer(api_key_for(editor, scopes=scopes))
    every = doors(glossary_ref(token_client(editor)))
    # (writes run last: a deleted profile would turn later reads into 404)
    order = sorted(every, key=lambda name: name in WRITES)

    # When it knocks on every door
    statuses = {}
    for name in order:
        method, path, body = every[name]
        response = getattr(client, method)(API + path, body, format="json")
        statuses[name] = response.status_code
        if response.status_code == 403:
            assert error(response)["code"] == "FORBIDDEN", name
            assert ", ".join(scopes) in error(response)["message"]

    # Then the doors of its scopes open (2xx, or the import's 400 for its empty body) and
    # every other answers 403 FORBIDDEN
    opened = {name for name, status in statuses.items() if status != 403}
    assert opened == allowed, statuses
    assert all(statuses[name] < 300 for name in allowed - {"import"}), statuses


def test_scoped_key_of_a_reader__writes__403_as_the_role_says(demo, reader):
    # A staff operator may make a reader a read key (create_api_key); writes stay the role's.
    client = bearer(api_key_for(reader, scopes=["read"]))

    response = client.put(API + "profiles/draft-reply/rules/kb", {"mode": "inline"}, format="json")

    assert response.status_code == 403
    assert error(response)["code"] == "PERMISSION_DENIED"
    assert client.get(API + "profiles/").status_code == 200
    assert client.get(API + "layers/kb/items/").status_code == 403  # a reader's role


def test_scope_vocabulary__defined_once__every_scope_has_its_capabilities():
    assert set(SCOPE_CAPABILITIES) == set(KeyScope.values)


def test_create__write_scope_for_a_reader__400_on_the_scope(reader):
    with pytest.raises(ApiKeyInvalid) as refused:
        api_key_for(reader, scopes=["read", "write"])

    assert refused.value.field == "scopes[1]"


# --- environments ------------------------------------------------------------------------------


def test_environment_limited_key__outside__403_naming_the_environment(demo, editor):
    client = bearer(api_key_for(editor, scopes=["resolve"], environments=["staging"]))
    staging = {**DANA, "profile": "support-answer-staging"}

    inside = client.post(API + "resolve", staging, format="json")
    outside = client.post(API + "resolve", DANA, format="json")
    nowhere = client.post(API + "resolve", {**DANA, "profile": "draft-reply"}, format="json")
    preview = client.post(API + "profiles/support-answer/preview", {}, format="json")
    expand = client.post(API + "expand", {**DANA, "ref": "glossary/x"}, format="json")
    selected = client.post(
        API + "resolve",
        {
            "consumer": "support-assistant",
            "objective": "answer-ticket",
            "environment": "production",
            "input": DANA["input"],
        },
        format="json",
    )

    assert inside.status_code == 200
    for refused in (outside, preview, expand, selected):
        assert refused.status_code == 403
        assert error(refused)["code"] == "FORBIDDEN"
        assert 'environment "production"' in error(refused)["message"]
        assert '"staging"' in error(refused)["message"]
    assert nowhere.status_code == 403
    assert "no environment" in error(nowhere)["message"]


def test_environment_limited_key__expand_inside__200(demo, editor):
    client = bearer(api_key_for(editor, scopes=["resolve"], environments=["production"]))
    ref = glossary_ref(client)

    response = client.post(API + "expand", {**DANA, "ref": ref}, format="json")

    assert response.status_code == 200


# --- schema ----------------------------------------------------------------------------------


def test_schema__declares_the_bearer_scheme_and_the_keys_operations(demo, reader_client):
    schema = APIClient().get(API + "schema/", {"format": "json"}).json()

    schemes = schema["components"]["securitySchemes"]
    assert schemes["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "description": schemes["bearerAuth"]["description"],
    }
    assert "tokenAuth" in schemes
    resolve = schema["paths"]["/api/v1/resolve"]["post"]
    assert {"bearerAuth": []} in resolve["security"]
    assert {"post", "get"} <= set(schema["paths"]["/api/v1/keys/"])
    assert "delete" in schema["paths"]["/api/v1/keys/{id}"]


def test_staff_write_key__another_users_import_job__404_as_for_an_editor(demo, staff, editor):
    # ADMINISTER (other users' jobs) comes with the staff's role, never with a key's scopes.
    job = ImportJob.objects.create(user=editor, source_bytes=1)
    path = API + f"workspace/imports/{job.pk}"

    assert token_client(staff).get(path).status_code == 200
    assert bearer(api_key_for(staff, scopes=["write"])).get(path).status_code == 404

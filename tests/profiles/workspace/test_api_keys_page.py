"""The studio's API keys page: scoped keys made (shown once), listed without the key, revoked;
errors beside their fields; readers manage only their own token; staff see everyone's keys."""

# ruff: noqa: F811 (the studio's editor fixtures, imported: the tests' arguments)

import re

import pytest
from django.contrib.auth.models import User

from profiles.models import ApiKey, Environment
from profiles.models.keys import key_hash
from tests.profiles.conftest import api_key_for, join_editors
from tests.profiles.studio.fixtures import editor, editor_client  # noqa: F401 (the studio's)

pytestmark = pytest.mark.django_db

NEW_KEY = re.compile(r'<pre class="code" id="new-key" tabindex="0">([^<]+)</pre>')


@pytest.fixture
def member(client, db) -> User:
    """A member of the editors group, signed in (not staff)."""
    user = User.objects.create_user("erin", "", "erin-pass-123")
    join_editors(user)
    client.force_login(user)
    return user


def test_key_create__form__the_key_shown_once_then_listed_by_its_prefix(client, member):
    Environment.objects.create(key="production")

    created = client.post(
        "/tokens/keys/create/",
        {
            "name": "support bot",
            "scopes": ["resolve"],
            "environments": ["production"],
            "expires": "2099-06-30",
        },
    )
    later = client.get("/tokens/").content.decode()

    assert created.status_code == 200 and "no-store" in created["Cache-Control"]
    key = NEW_KEY.search(created.content.decode())[1]
    record = ApiKey.objects.get(kind="scoped")
    assert record.hash == key_hash(key)
    assert (record.owner, record.name, record.scopes, record.environments) == (
        member,
        "support bot",
        ["resolve"],
        ["production"],
    )
    assert record.expires_at.isoformat() == "2099-06-30T23:59:59+00:00"
    assert key not in later
    row = re.search(rf'<tr data-key="{record.pk}">.*?</tr>', later, re.S)[0]
    for shown in ("support bot", f"{record.prefix}…", "resolve", "production", "2099-06-30"):
        assert shown in row


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"name": "", "scopes": ["read"]}, "name", "This field is required."),
        ({"name": "bot"}, "scopes", "This field is required."),
        ({"name": "bot", "scopes": ["admin"]}, "scopes", "Select a valid choice."),
        ({"name": "bot", "scopes": ["read"], "expires": "2001-01-01"}, "expires", "future"),
        ({"name": "bot", "scopes": ["read"], "environments": ["mars"]}, "environments", "valid"),
    ],
)
def test_key_create__invalid__400_error_beside_the_field_and_no_key(
    client, member, fields, field, message
):
    response = client.post("/tokens/keys/create/", fields)

    assert response.status_code == 400
    html = response.content.decode()
    error = re.search(rf'<span class="field-error" id="id_{field}_error">([^<]+)</span>', html)
    assert error and message in error[1]
    assert f'aria-describedby="id_{field}_helptext id_{field}_error"' in html
    assert not ApiKey.objects.exists()


def test_key_revoke__own_key__gone_from_the_list_and_refused_by_the_api(client, member):
    key = api_key_for(member, scopes=["read"], name="old bot")
    record = ApiKey.objects.get(kind="scoped")

    response = client.post(f"/tokens/keys/{record.pk}/revoke/")

    assert response.status_code == 302
    page = client.get("/tokens/").content.decode()
    assert f'data-key="{record.pk}"' not in page
    assert "Key “old bot” revoked" in page
    api = client.get("/api/v1/profiles/", headers={"Authorization": f"Bearer {key}"})
    assert api.status_code == 401


def test_key_revoke__another_editors_key__404_and_it_still_works(client, member):
    other = User.objects.create_user("otto")
    join_editors(other)
    api_key_for(other, scopes=["read"], name="otto's")
    record = ApiKey.objects.get(kind="scoped")

    response = client.post(f"/tokens/keys/{record.pk}/revoke/")

    assert response.status_code == 404
    assert ApiKey.objects.get(pk=record.pk).revoked_at is None
    assert "otto's" not in client.get("/tokens/").content.decode()


def test_keys_page__staff__everyones_keys_with_their_owner(client, editor):
    other = User.objects.create_user("otto")
    join_editors(other)
    api_key_for(other, scopes=["read"], name="otto's")
    client.force_login(editor)  # a superuser

    html = client.get("/tokens/").content.decode()

    assert '<th scope="col">Owner</th>' in html
    assert re.search(r"otto&#x27;s</th>\s*<td>otto</td>", html)


def test_keys_page__reader__own_token_only_no_scoped_keys(client, viewer):
    client.force_login(viewer)

    html = client.get("/tokens/").content.decode()

    assert "Your API token" in html
    assert "Scoped keys" not in html and 'action="/tokens/keys/create/"' not in html
    assert (
        client.post("/tokens/keys/create/", {"name": "x", "scopes": ["resolve"]}).status_code == 403
    )

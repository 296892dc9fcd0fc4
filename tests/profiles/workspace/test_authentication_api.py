"""API key authentication: the precompiled lookup answers exactly as the ORM does (one query),
``Token`` and ``Bearer``, and the keys refused with 401 (unknown, revoked, expired, an
inactive owner); only hashes are stored; ``lastUsedAt`` is written at most once a minute."""

import datetime as dt

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from profiles.models import ApiKey
from profiles.workspace.keys import (
    LAST_USED_INTERVAL,
    api_key_create,
    api_key_revoke,
    token_by_key_get,
    token_replace,
)

pytestmark = pytest.mark.django_db


def client_with(header: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    return client


def test_token_by_key_get__existing_key__the_same_record_and_owner_as_the_orm_in_one_query():
    user = User.objects.create_user("reader", email="reader@example.com", first_name="Ré")
    made = api_key_create(owner=user, name="app", scopes=["resolve"], environments=[])
    expected = ApiKey.objects.select_related("owner").get(pk=made.record.pk)

    with CaptureQueriesContext(connection) as queries:
        found = token_by_key_get(made.key)

    assert len(queries) == 1
    for field in ApiKey._meta.concrete_fields:  # JSON lists are lists on SQLite too
        assert getattr(found, field.attname) == getattr(expected, field.attname)
    for field in User._meta.concrete_fields:  # dates are dates on SQLite too
        assert getattr(found.owner, field.attname) == getattr(expected.owner, field.attname)
    assert not found._state.adding and not found.owner._state.adding


def test_token_by_key_get__unknown_key__none():
    assert token_by_key_get("0" * 40) is None


def test_key__stored__only_its_hash_and_prefix_no_column_holds_the_key():
    user = User.objects.create_user("reader")
    scoped = api_key_create(owner=user, name="app", scopes=["resolve"]).key
    _, own = token_replace(user=user)

    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM profiles_apikey")
        rows = [" ".join(str(value) for value in row) for row in cursor.fetchall()]

    assert len(rows) == 2
    assert not any(key in row for key in (scoped, own) for row in rows)
    assert {key[:12] for key in (scoped, own)} <= {r.prefix for r in ApiKey.objects.all()}


@pytest.mark.parametrize("scheme", ["Token", "Bearer"])
def test_api__user_token_or_scoped_key__either_scheme_signs_in(scheme):
    user = User.objects.create_user("reader")
    _, own = token_replace(user=user)
    scoped = api_key_create(owner=user, name="app", scopes=["read"]).key

    for key in (own, scoped):
        assert client_with(f"{scheme} {key}").get("/api/v1/layers/").status_code == 200


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("Token " + "0" * 40, "Invalid token."),
        ("Bearer ctx_not-a-key", "Invalid token."),
        ("Bearer", "Invalid token header. No credentials provided."),
    ],
)
def test_api__unknown_key__401_in_the_error_shape(header, message):
    response = client_with(header).get("/api/v1/layers/")

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "AUTHENTICATION_FAILED"
    assert response.json()["error"]["message"] == message
    assert response["WWW-Authenticate"] == "Token"


def test_api__revoked_expired_or_inactive_owner__401_naming_why():
    user = User.objects.create_user("someone")
    revoked = api_key_create(owner=user, name="old", scopes=["read"])
    api_key_revoke(key=revoked.record)
    expiring = api_key_create(
        owner=user,
        name="short",
        scopes=["read"],
        expires_at=timezone.now() + dt.timedelta(hours=1),
    )
    ApiKey.objects.filter(pk=expiring.record.pk).update(
        expires_at=timezone.now() - dt.timedelta(seconds=1)
    )
    gone = User.objects.create_user("gone")
    inactive = api_key_create(owner=gone, name="app", scopes=["read"]).key
    gone.is_active = False
    gone.save()

    answers = {
        key: client_with(f"Bearer {key}").get("/api/v1/layers/")
        for key in (revoked.key, expiring.key, inactive)
    }

    assert {key: answer.status_code for key, answer in answers.items()} == dict.fromkeys(
        answers, 401
    )
    assert answers[revoked.key].json()["error"]["message"] == "This API key was revoked."
    assert answers[expiring.key].json()["error"]["message"] == "This API key has expired."
    assert answers[inactive].json()["error"]["message"] == "User inactive or deleted."


def test_user_token__replaced__the_old_one_stops_working():
    user = User.objects.create_user("reader")
    _, old = token_replace(user=user)
    _, new = token_replace(user=user)

    assert client_with(f"Token {old}").get("/api/v1/layers/").status_code == 401
    assert client_with(f"Token {new}").get("/api/v1/layers/").status_code == 200


def test_last_used__requests_within_a_minute__written_once_and_then_no_query(monkeypatch):
    # Given a key never used
    user = User.objects.create_user("reader")
    made = api_key_create(owner=user, name="app", scopes=["read"])
    client = client_with(f"Bearer {made.key}")
    start = timezone.now()

    # When it signs three requests within a minute
    with CaptureQueriesContext(connection) as first:
        client.get("/api/v1/layers/")
    first = [query["sql"] for query in first]  # the next capture starts a new log
    used = ApiKey.objects.get(pk=made.record.pk).last_used_at
    with CaptureQueriesContext(connection) as second:
        client.get("/api/v1/layers/")
    client.get("/api/v1/layers/")

    # Then the first wrote lastUsedAt (one UPDATE), the others wrote nothing
    assert used is not None and used >= start
    assert len([sql for sql in first if sql.startswith('UPDATE "profiles_apikey"')]) == 1
    assert not any(q["sql"].startswith('UPDATE "profiles_apikey"') for q in second)
    assert ApiKey.objects.get(pk=made.record.pk).last_used_at == used

    # and a request more than a minute later writes it again
    later = used + LAST_USED_INTERVAL + dt.timedelta(seconds=1)
    monkeypatch.setattr(timezone, "now", lambda: later)
    client.get("/api/v1/layers/")
    assert ApiKey.objects.get(pk=made.record.pk).last_used_at == later


def test_authentication__steady_state__the_key_read_once_with_its_owner_then_held():
    user = User.objects.create_user("reader")
    made = api_key_create(owner=user, name="app", scopes=["read"])
    client = client_with(f"Bearer {made.key}")

    with CaptureQueriesContext(connection) as first:
        client.get("/api/v1/environments/")  # lastUsedAt written
    first = [q["sql"] for q in first if "profiles_apikey" in q["sql"]]
    with CaptureQueriesContext(connection) as queries:
        client.get("/api/v1/environments/")

    reads = [sql for sql in first if sql.startswith("SELECT")]
    assert len(reads) == 1
    assert "auth_user" in reads[0]  # the owner in the same query
    # this process holds the key now (profiles.workspace.key_cache)
    assert [q for q in queries if "profiles_apikey" in q["sql"]] == []

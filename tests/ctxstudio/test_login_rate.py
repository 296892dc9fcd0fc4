"""Failed logins per client address across usernames (``ctxstudio.login_rate``): past
``LOGIN_ADDRESS_MAX_FAILURES`` in a window, every login door answers 429 with ``Retry-After``
before any password is hashed, so random usernames cannot spend the server's CPU."""

import json
import types
import uuid

import pytest
from django.contrib.auth.hashers import MD5PasswordHasher
from django.test import Client

from ctxstudio import login_rate

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery"
STUDIO, ADMIN, TOKEN = "/accounts/login/", "/admin/login/", "/api/v1/auth/token"
DOORS = [
    pytest.param(STUDIO, id="studio"),
    pytest.param(ADMIN, id="admin"),
    pytest.param(TOKEN, id="token"),
]


class CountingHasher(MD5PasswordHasher):
    """A fast hasher that counts the passwords it hashes (every login that reaches the
    password check hashes one, even for an unknown username)."""

    algorithm = "counting_md5"
    hashed = 0

    def encode(self, password, salt):
        CountingHasher.hashed += 1
        return super().encode(password, salt)


@pytest.fixture(autouse=True)
def counting_passwords(settings):
    settings.PASSWORD_HASHERS = [f"{__name__}.CountingHasher"]
    CountingHasher.hashed = 0


def log_in(client, door, username, password, **meta):
    credentials = {"username": username, "password": password}
    if door == TOKEN:
        return client.post(door, json.dumps(credentials), content_type="application/json", **meta)
    return client.post(door, credentials, **meta)


@pytest.mark.parametrize("door", DOORS)
def test_login__random_usernames_from_one_address__429_past_the_rate_before_hashing(
    client, settings, door
):
    # Given the default rate (20 failures in a window), 24 failed logins with random
    # usernames from one address:
    assert settings.LOGIN_ADDRESS_MAX_FAILURES == 20
    statuses = []
    for _ in range(24):
        response = log_in(client, door, uuid.uuid4().hex, "guess")
        statuses.append(response.status_code)

    # the first 20 are refused as wrong (the form again, 400 from the API), the rest 429,
    assert statuses[:20] == [400 if door == TOKEN else 200] * 20
    assert statuses[20:] == [429] * 4
    retry_after = int(response["Retry-After"])
    assert 1 <= retry_after <= settings.LOGIN_ADDRESS_FAILURE_WINDOW
    if door == TOKEN:
        assert response.json()["error"]["code"] == "LOGIN_LOCKED_OUT"
        assert "from this address" in response.json()["error"]["message"]
    # and none of the refused ones hashed a password.
    assert CountingHasher.hashed == 20


def test_login__address_over_the_rate__refuses_even_a_right_password_there_only(
    settings, django_user_model
):
    settings.LOGIN_ADDRESS_MAX_FAILURES = 3
    django_user_model.objects.create_user("dana", password=PASSWORD)
    attacker = Client(REMOTE_ADDR="203.0.113.7")
    for _ in range(3):
        log_in(attacker, STUDIO, uuid.uuid4().hex, "guess")

    # One count across the doors: the token endpoint refuses the address too,
    refused = log_in(attacker, TOKEN, "dana", PASSWORD)
    assert refused.status_code == 429
    assert "token" not in refused.json()

    # while dana, from another address, logs in as usual.
    elsewhere = Client(REMOTE_ADDR="198.51.100.9")
    assert log_in(elsewhere, TOKEN, "dana", PASSWORD).status_code == 200


def test_login__window_ended__takes_logins_again(client, settings, django_user_model, monkeypatch):
    settings.LOGIN_ADDRESS_MAX_FAILURES = 2
    settings.LOGIN_ADDRESS_FAILURE_WINDOW = 300
    django_user_model.objects.create_user("dana", password=PASSWORD)
    now = [3000.0 + 10]  # 10 seconds into a window
    monkeypatch.setattr(login_rate, "time", types.SimpleNamespace(time=lambda: now[0]))
    for _ in range(2):
        log_in(client, STUDIO, uuid.uuid4().hex, "guess")

    refused = log_in(client, STUDIO, "dana", PASSWORD)
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) == 290

    now[0] += 290  # the next window
    assert log_in(client, STUDIO, "dana", PASSWORD).status_code == 302


def test_login__address_rate__counted_in_the_shared_cache(settings, redis_cache):
    # Two clients (two workers' worth of requests) from one address share one count in Redis.
    settings.LOGIN_ADDRESS_MAX_FAILURES = 2
    log_in(Client(), STUDIO, uuid.uuid4().hex, "guess")
    log_in(Client(), ADMIN, uuid.uuid4().hex, "guess")

    assert log_in(Client(), TOKEN, uuid.uuid4().hex, "guess").status_code == 429
    assert CountingHasher.hashed == 2

"""Login lockouts (django-axes) on the studio login, the admin login and the API token endpoint.

What is locked: a *username from one client address*, after ``AXES_FAILURE_LIMIT`` failed
logins with less than the cool-off between them, until the cool-off has passed without an
attempt. Other addresses, and other usernames from the same address, are not locked.
"""

import json
import uuid

import pytest
from axes.handlers.proxy import AxesProxyHandler
from axes.models import AccessFailureLog
from django.test import Client

from profiles.models import ApiKey

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery"
STUDIO, ADMIN, TOKEN = "/accounts/login/", "/admin/login/", "/api/v1/auth/token"


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def dana(django_user_model):
    return django_user_model.objects.create_user("dana", password=PASSWORD, is_staff=True)


@pytest.fixture
def limit_3(settings):
    settings.AXES_FAILURE_LIMIT = 3


def log_in(client, door: str, username: str, password: str, encoding: str = "form", **meta):
    """POST a login to one door: the studio form, the admin form or the token endpoint
    (``encoding``: a form body or a JSON body)."""
    credentials = {"username": username, "password": password}
    if encoding == "json":
        return client.post(door, json.dumps(credentials), content_type="application/json", **meta)
    return client.post(door, credentials, **meta)


def logged_in(client, door: str, response) -> bool:
    if door == TOKEN:
        return response.status_code == 200 and "token" in response.json()
    return response.status_code == 302 and "_auth_user_id" in client.session


DOORS = [
    pytest.param(STUDIO, "form", id="studio"),
    pytest.param(ADMIN, "form", id="admin"),
    pytest.param(TOKEN, "json", id="token-json"),
    pytest.param(TOKEN, "form", id="token-form"),
]


@pytest.mark.parametrize(("door", "encoding"), DOORS)
def test_login__too_many_failures__refuses_even_the_right_password(
    client, dana, limit_3, door, encoding
):
    failed = [log_in(client, door, "dana", "wrong", encoding).status_code for _ in range(3)]
    # The form again (or 400 from the API) twice, then the failure that locks answers 429.
    assert failed[:2] == [400, 400] if door == TOKEN else [200, 200]
    assert failed[2] == 429

    blocked = log_in(client, door, "dana", PASSWORD, encoding)

    assert blocked.status_code == 429
    assert int(blocked["Retry-After"]) == 900
    assert not logged_in(client, door, blocked)
    assert not ApiKey.objects.filter(owner=dana).exists()


def test_token__locked_out__answers_json_in_the_error_shape(client, dana, limit_3):
    for _ in range(3):
        log_in(client, TOKEN, "dana", "wrong", "json")

    blocked = log_in(client, TOKEN, "dana", PASSWORD, "json")

    assert blocked.status_code == 429
    assert blocked["Content-Type"] == "application/json"
    assert blocked.json()["error"]["code"] == "LOGIN_LOCKED_OUT"
    assert set(blocked.json()["error"]) == {"code", "message", "path", "retryable"}


def test_token__json_and_form_failures__count_for_the_same_username(client, dana, limit_3):
    # The hand-written throttle read only form data, so JSON bodies were never counted.
    log_in(client, TOKEN, "dana", "wrong", "json")
    log_in(client, TOKEN, "dana", "wrong", "form")
    log_in(client, STUDIO, "dana", "wrong")  # one count across the three doors

    assert log_in(client, TOKEN, "dana", PASSWORD, "json").status_code == 429


def test_login__success_before_the_limit__clears_the_count(client, dana, limit_3):
    log_in(client, STUDIO, "dana", "wrong")
    log_in(client, STUDIO, "dana", "wrong")
    ok = log_in(client, STUDIO, "dana", PASSWORD)
    assert ok.status_code == 302
    client.logout()

    again = [log_in(client, STUDIO, "dana", "wrong").status_code for _ in range(2)]

    assert again == [200, 200]  # counting starts over: 2 failures, not 4


def test_login__random_usernames_behind_the_proxy__lock_out_nobody_else(
    client, django_user_model, settings
):
    # Given the documented deployment: one reverse proxy, which every request comes through,
    settings.TRUSTED_PROXY_COUNT = 1
    proxy = {"REMOTE_ADDR": "10.0.0.1"}
    django_user_model.objects.create_superuser("root", password=PASSWORD)

    # when an attacker fails 5 logins with random usernames from one address,
    attacker = {**proxy, "HTTP_X_FORWARDED_FOR": "203.0.113.7"}
    failures = [
        log_in(Client(), STUDIO, uuid.uuid4().hex, "guess", **attacker).status_code
        for _ in range(5)
    ]
    assert failures == [200] * 5  # each username failed once: nothing is locked

    # then the superuser still logs in from another address, and from the attacker's too.
    elsewhere = Client()
    response = log_in(
        elsewhere, STUDIO, "root", PASSWORD, HTTP_X_FORWARDED_FOR="198.51.100.9", **proxy
    )
    assert logged_in(elsewhere, STUDIO, response)
    same_address = Client()
    response = log_in(same_address, ADMIN, "root", PASSWORD, **attacker)
    assert logged_in(same_address, ADMIN, response)


def test_login__failures_of_one_username__lock_it_at_that_address_only(client, dana, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    proxy = {"REMOTE_ADDR": "10.0.0.1"}
    attacker = {**proxy, "HTTP_X_FORWARDED_FOR": "203.0.113.7"}
    statuses = [log_in(Client(), STUDIO, "dana", "guess", **attacker).status_code for _ in range(5)]
    assert statuses == [200] * 4 + [429]

    assert log_in(Client(), STUDIO, "dana", PASSWORD, **attacker).status_code == 429
    elsewhere = Client()
    response = log_in(
        elsewhere, STUDIO, "dana", PASSWORD, HTTP_X_FORWARDED_FOR="198.51.100.9", **proxy
    )
    assert logged_in(elsewhere, STUDIO, response)


def test_login__forwarded_for_without_a_trusted_proxy__is_ignored(client, dana, limit_3):
    # Given no proxy configured (the default), a client that invents X-Forwarded-For
    # addresses is still counted at its own address:
    statuses = [
        log_in(client, STUDIO, "dana", "wrong", HTTP_X_FORWARDED_FOR=f"198.51.100.{n}").status_code
        for n in range(3)
    ]
    assert statuses == [200, 200, 429]


@pytest.mark.parametrize(
    ("forwarded_for", "proxies", "counted_at"),
    [
        ("203.0.113.7", 1, "203.0.113.7"),
        # A client may send its own header; the proxy appends what it saw: the last entry.
        ("6.6.6.6, 203.0.113.7", 1, "203.0.113.7"),
        # Two proxies: the second appended the first's address.
        ("6.6.6.6, 203.0.113.7, 10.0.0.2", 2, "203.0.113.7"),
        # Fewer entries than proxies, or no address: the request did not come through them.
        ("203.0.113.7", 2, "10.0.0.1"),
        ("203.0.113.7, not-an-address", 1, "10.0.0.1"),
    ],
)
def test_client_address__behind_trusted_proxies__is_what_the_outermost_proxy_saw(
    rf, settings, forwarded_for, proxies, counted_at
):
    from ctxstudio.client_address import client_address

    settings.TRUSTED_PROXY_COUNT = proxies
    request = rf.post(STUDIO, REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=forwarded_for)

    assert client_address(request) == counted_at


def test_lockout__admin__lists_it_and_unlocks_it(client, admin_client, dana, limit_3):
    # Given a lockout,
    for _ in range(3):
        log_in(client, STUDIO, "dana", "wrong")
    entry = AccessFailureLog.objects.get()
    assert (entry.username, entry.ip_address, entry.locked_out) == ("dana", "127.0.0.1", True)
    assert b"dana" in admin_client.get("/admin/axes/accessfailurelog/").content

    # when staff unlock it in the admin,
    admin_client.post(
        "/admin/axes/accessfailurelog/",
        {"action": "unlock", "_selected_action": [entry.pk]},
    )

    # then the right password works again.
    assert logged_in(client, STUDIO, log_in(client, STUDIO, "dana", PASSWORD))


def test_lockout__further_attempts__recorded_once(client, dana, limit_3):
    for _ in range(6):
        log_in(client, STUDIO, "dana", "wrong")
    assert AccessFailureLog.objects.count() == 1


def test_lockout__redis_cache__counts_and_locks_out(client, dana, limit_3, redis_cache):
    failed = [log_in(client, STUDIO, "dana", "wrong").status_code for _ in range(3)]
    assert failed == [200, 200, 429]
    assert AxesProxyHandler.get_implementation().cache is redis_cache

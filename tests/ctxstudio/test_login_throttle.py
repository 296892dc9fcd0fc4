"""Login rate limiting on the studio and admin login forms."""

import pytest
from django.core.cache import cache
from django.test import override_settings

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def dana(django_user_model):
    return django_user_model.objects.create_user("dana", password="correct horse battery")


@override_settings(LOGIN_MAX_FAILURES=3)
@pytest.mark.parametrize("login_path", ["/accounts/login/", "/admin/login/"])
def test_login__too_many_failures__refuses_even_the_right_password(client, dana, login_path):
    for _ in range(3):
        failed = client.post(login_path, {"username": "dana", "password": "wrong"})
        assert failed.status_code == 200  # the form again, with its error

    blocked = client.post(login_path, {"username": "dana", "password": "correct horse battery"})

    assert blocked.status_code == 429
    assert int(blocked["Retry-After"]) > 0
    assert "_auth_user_id" not in client.session


@override_settings(LOGIN_MAX_FAILURES=3)
def test_login__success_before_the_limit__clears_the_username_count(client, dana):
    client.post("/accounts/login/", {"username": "dana", "password": "wrong"})
    client.post("/accounts/login/", {"username": "dana", "password": "wrong"})
    ok = client.post("/accounts/login/", {"username": "dana", "password": "correct horse battery"})
    assert ok.status_code == 302
    again = client.post("/accounts/login/", {"username": "dana", "password": "wrong"})
    assert again.status_code == 200  # counting starts over: 1 failure, not 3

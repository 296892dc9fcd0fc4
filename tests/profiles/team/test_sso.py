"""Single sign-on (profiles.team.sso) against a real OpenID Connect provider on loopback
(tests/oidc_provider): the studio's side through Django's test client, the provider's side
(its login form) through ``requests``."""

import logging
import re
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import pytest
import requests
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages

from ctxstudio.checks import single_sign_on_check
from profiles.models import Activity, SsoIdentity
from profiles.team.members import member_active_set
from profiles.workspace.origin import CLI
from profiles.workspace.permissions import Role, user_role
from tests.oidc_provider.running import PASSWORD
from tests.processes import free_port

pytestmark = pytest.mark.django_db

CALLBACK = "http://testserver/oidc/callback/"
LOGIN = "/accounts/login/"


@pytest.fixture
def sso(settings, oidc_provider):
    """The studio pointed at the provider, which knows the test client's callback."""
    oidc_provider.client_set(CALLBACK)
    for name, value in oidc_provider.studio_settings().items():
        setattr(settings, name, value)
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return oidc_provider


@pytest.fixture
def boss():
    # Another active staff member: SSO members may lose the staff role.
    return get_user_model().objects.create_user("boss", "boss@example.com", "pw", is_staff=True)


def authorize_url(client) -> str:
    """Start single sign-on in the studio; return where it sends the browser."""
    response = client.get("/oidc/authenticate/")
    assert response.status_code == 302, response
    return response["Location"]


def provider_answer(url: str, username: str) -> str:
    """Sign in at the provider (its login form) and return the studio callback it answers
    with (the path and query)."""
    browser = requests.Session()
    page = browser.get(url, timeout=30)
    assert "Test identity provider" in page.text, page.text[:300]
    next_url = re.search(r'name="next" value="([^"]*)"', page.text).group(1)
    response = browser.post(
        page.url,
        data={
            "username": username,
            "password": PASSWORD,
            "next": next_url.replace("&amp;", "&"),
            "csrfmiddlewaretoken": browser.cookies["provider_csrftoken"],
        },
        allow_redirects=False,
        timeout=30,
    )
    for _ in range(5):
        location = response.headers["Location"]
        if location.startswith(CALLBACK):
            parts = urlsplit(location)
            return f"{parts.path}?{parts.query}"
        response = browser.get(
            requests.compat.urljoin(response.url, location), allow_redirects=False, timeout=30
        )
    raise AssertionError("the provider never answered the studio")


def sign_in(client, username: str):
    """The whole code flow; return the callback's response."""
    return client.get(provider_answer(authorize_url(client), username))


def signed_in_user(client):
    user_id = client.session.get("_auth_user_id")
    return get_user_model().objects.get(pk=user_id) if user_id else None


def message_texts(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def test_sso__first_sign_in__creates_the_member_with_the_role_of_their_groups(client, sso):
    sso.member_set("ada", groups=["studio-editors"], email="ada@example.org")

    response = sign_in(client, "ada")

    assert response.status_code == 302 and response["Location"] == "/"
    ada = signed_in_user(client)
    assert ada.username == "ada" and ada.email == "ada@example.org"
    assert not ada.has_usable_password()
    assert user_role(ada) == Role.EDITOR
    assert SsoIdentity.objects.get(user=ada).issuer == sso.issuer
    entry = Activity.objects.get(kind="member", key="ada")
    assert entry.origin == "sso" and entry.actor is None
    assert client.get("/profiles/").status_code == 200  # signed in, not sent to the login page


def test_sso__removed_from_the_group__loses_the_role_at_the_next_sign_in(client, sso, boss):
    sso.member_set("bea", groups=["studio-admins"])
    sign_in(client, "bea")
    assert user_role(signed_in_user(client)) == Role.STAFF

    sso.member_set("bea", groups=[])
    client.logout()
    sign_in(client, "bea")

    bea = signed_in_user(client)
    assert user_role(bea) == Role.READER and not bea.is_staff
    changes = Activity.objects.filter(kind="member", key="bea", origin="sso").order_by("id")
    assert [entry.fields for entry in changes][-1]  # the demotion, field by field
    assert changes.count() == 2


def test_sso__no_group__gets_the_default_role(client, sso, settings):
    sso.member_set("cy", groups=["somewhere-else"])
    sign_in(client, "cy")
    assert user_role(signed_in_user(client)) == Role.READER
    assert not Activity.objects.filter(kind="member", key="cy").exists()

    settings.OIDC_DEFAULT_ROLE = "editor"
    client.logout()
    sign_in(client, "cy")
    assert user_role(signed_in_user(client)) == Role.EDITOR


def test_sso__the_last_active_staff_member__keeps_the_role_with_a_warning(client, sso, caplog):
    sso.member_set("dee", groups=["studio-admins"])
    sign_in(client, "dee")
    assert user_role(signed_in_user(client)) == Role.STAFF

    sso.member_set("dee", groups=[])
    client.logout()
    with caplog.at_level(logging.WARNING, logger="profiles.team.sso"):
        response = sign_in(client, "dee")

    assert response.status_code == 302 and response["Location"] == "/"
    assert user_role(signed_in_user(client)) == Role.STAFF
    assert "last active staff member" in caplog.text


def test_sso__a_local_account_of_the_same_name__is_never_taken_over(client, sso):
    local = get_user_model().objects.create_user("eve", "eve@example.com", "pw")
    sso.member_set("eve", groups=["studio-editors"], email="eve@example.com")

    sign_in(client, "eve")

    eve = signed_in_user(client)
    assert eve.pk != local.pk and eve.username == "eve-2"
    local.refresh_from_db()
    assert user_role(local) == Role.READER


def test_sso__a_deactivated_member__is_refused_with_a_message(client, sso):
    sso.member_set("fay", groups=["studio-editors"])
    sign_in(client, "fay")
    fay = signed_in_user(client)
    member_active_set(fay, False, actor=None, origin=CLI)
    client.logout()

    response = sign_in(client, "fay")

    assert response.status_code == 302 and response["Location"] == LOGIN
    assert "_auth_user_id" not in client.session
    assert any("deactivated" in text for text in message_texts(response))


def test_sso__a_forged_state__is_refused_with_a_message(client, sso):
    sso.member_set("gus")
    answer = provider_answer(authorize_url(client), "gus")
    parts = urlsplit(answer)
    query = {key: values[0] for key, values in parse_qs(parts.query).items()}
    forged = f"{parts.path}?{urlencode({**query, 'state': 'forged-state'})}"

    response = client.get(forged)

    assert response.status_code == 302 and response["Location"] == LOGIN
    assert "_auth_user_id" not in client.session
    assert any("could not be verified" in text for text in message_texts(response))
    assert not get_user_model().objects.filter(username="gus").exists()
    # Nor can the state of another browser be used (no sign-in started in this session).
    other = client.__class__()
    response = other.get(answer)
    assert response.status_code == 302 and response["Location"] == LOGIN
    assert "_auth_user_id" not in other.session


def test_sso__an_id_token_for_another_nonce__is_refused(client, sso):
    sso.member_set("hal")
    url = authorize_url(client)
    parts = urlsplit(url)
    query = {key: values[0] for key, values in parse_qs(parts.query).items()}
    assert query["nonce"]
    # The provider issues its ID token for a nonce this sign-in did not choose.
    other_nonce = urlunsplit(parts._replace(query=urlencode({**query, "nonce": "another"})))

    response = client.get(provider_answer(other_nonce, "hal"))

    assert response.status_code == 302 and response["Location"] == LOGIN
    assert "_auth_user_id" not in client.session
    assert any("could not be verified" in text for text in message_texts(response))
    assert not get_user_model().objects.filter(username="hal").exists()


def test_sso__the_provider_refuses__the_login_page_says_so(client, sso):
    url = authorize_url(client)
    state = parse_qs(urlsplit(url).query)["state"][0]

    response = client.get(
        f"/oidc/callback/?{urlencode({'error': 'access_denied', 'state': state})}"
    )

    assert response.status_code == 302 and response["Location"] == LOGIN
    assert any("access_denied" in text for text in message_texts(response))


def test_sso__unconfigured__no_button_and_the_views_send_back_to_the_login_page(client, settings):
    settings.OIDC_RP_CLIENT_ID = ""
    assert "Sign in with" not in client.get(LOGIN).content.decode()

    for path in ("/oidc/authenticate/", "/oidc/callback/?code=x&state=y"):
        response = client.get(path)
        assert response.status_code == 302 and response["Location"] == LOGIN
        assert any("not configured" in text for text in message_texts(response))


def test_sso__configured__the_login_page_offers_it_beside_the_password(client, sso):
    page = client.get(f"{LOGIN}?next=/profiles/").content.decode()
    assert "Sign in with the test provider" in page
    assert 'href="/oidc/authenticate/?next=/profiles/"' in page
    assert 'name="password"' in page


def test_password_sign_in_off__the_form_is_gone_and_a_password_post_refused(client, sso, settings):
    get_user_model().objects.create_user("ivy", "ivy@example.com", "a long password")
    settings.PASSWORD_SIGN_IN = False

    page = client.get(LOGIN).content.decode()
    assert "Sign in with the test provider" in page and 'name="password"' not in page
    response = client.post(LOGIN, {"username": "ivy", "password": "a long password"})

    assert response.status_code == 403
    assert "Password sign-in is switched off" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_password_sign_in__with_sso_on__still_signs_in(client, sso):
    get_user_model().objects.create_user("kit", "kit@example.com", "a long password")

    response = client.post(LOGIN, {"username": "kit", "password": "a long password"})

    assert response.status_code == 302 and signed_in_user(client).username == "kit"


def test_password_sign_in__with_sso_on__the_lockout_still_locks(client, sso, settings):
    settings.AXES_FAILURE_LIMIT = 3
    get_user_model().objects.create_user("jo", "jo@example.com", "a long password")
    for _ in range(3):
        client.post(LOGIN, {"username": "jo", "password": "wrong"})

    response = client.post(LOGIN, {"username": "jo", "password": "a long password"})

    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_sso_checks__a_default_role_that_is_no_role__an_error(settings):
    settings.OIDC_DEFAULT_ROLE = "admin"
    assert [found.id for found in single_sign_on_check()] == ["ctxstudio.E001"]


def test_sso_checks__no_password_and_no_sso__a_warning(settings):
    settings.PASSWORD_SIGN_IN = False
    settings.OIDC_RP_CLIENT_ID = ""
    assert [found.id for found in single_sign_on_check()] == ["ctxstudio.W002"]


def test_sso__the_page_asked_for__is_where_the_member_lands(client, sso):
    sso.member_set("lea", groups=["studio-editors"])
    started = client.get("/oidc/authenticate/?next=/consumers/")

    response = client.get(provider_answer(started["Location"], "lea"))

    assert response.status_code == 302 and response["Location"] == "/consumers/"


def test_sso__an_unreachable_provider__the_login_page_says_so(client, sso, settings):
    settings.OIDC_ISSUER = f"http://127.0.0.1:{free_port()}/o"  # nothing listens there

    response = client.get("/oidc/authenticate/")

    assert response.status_code == 302 and response["Location"] == LOGIN
    assert any("could not be reached" in text for text in message_texts(response))

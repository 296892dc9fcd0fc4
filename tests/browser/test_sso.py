"""Single sign-on in Chromium: the whole authorization code flow against a real OpenID Connect
provider on loopback (tests/oidc_provider), roles from its groups claim, and a member removed
from a group losing the role at their next sign-in."""

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from profiles.models import Activity
from profiles.workspace.permissions import Role, user_role
from tests.browser.test_accessibility import blocking_violations
from tests.oidc_provider.running import PASSWORD

pytestmark = pytest.mark.browser

BUTTON = "Sign in with the test provider"


@pytest.fixture
def sso(settings, live_server, oidc_provider, transactional_db):
    """The live studio pointed at the provider, which knows the live server's callback."""
    oidc_provider.client_set(f"{live_server.url}/oidc/callback/")
    for name, value in oidc_provider.studio_settings().items():
        setattr(settings, name, value)
    # Another staff member: a member signing in may lose the staff role.
    get_user_model().objects.create_user("boss", "boss@example.com", "pw", is_staff=True)
    return oidc_provider


def sso_sign_in(page, live_server, username: str, *, provider_form: bool = True) -> None:
    """Sign in from the studio's login page, through the provider's login form (unless the
    browser is still signed in there), back to the studio's profiles."""
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_role("link", name=BUTTON).click()
    if provider_form:
        expect(page.get_by_role("heading", name="Test identity provider")).to_be_visible()
        page.get_by_label("Username").fill(username)
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Sign in to the provider").click()
    page.wait_for_url(f"{live_server.url}/profiles/")
    expect(page.locator(".signout")).to_contain_text(username)


def sign_out(page) -> None:
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("link", name=BUTTON)).to_be_visible()


def member(username: str):
    return get_user_model().objects.get(username=username)


def test_sso__code_flow_in_chromium__roles_follow_the_groups_claim(page, live_server, sso):
    # Given an editor at the provider, never seen by the studio
    sso.member_set("ada", groups=["studio-editors"])

    # When she signs in through the provider
    sso_sign_in(page, live_server, "ada")

    # Then she is a new member with the editor's controls, and no staff link
    assert user_role(member("ada")) == Role.EDITOR
    expect(page.get_by_role("link", name="New profile")).to_be_visible()
    expect(page.get_by_role("link", name="Admin", exact=True)).to_have_count(0)

    # When the provider makes her staff, she is staff at her next sign-in
    sso.member_set("ada", groups=["studio-admins"])
    sign_out(page)
    sso_sign_in(page, live_server, "ada", provider_form=False)
    assert user_role(member("ada")) == Role.STAFF
    expect(page.get_by_role("link", name="Admin", exact=True)).to_be_visible()

    # When she is removed from every group, her next sign-in makes her a reader
    sso.member_set("ada", groups=[])
    sign_out(page)
    sso_sign_in(page, live_server, "ada", provider_form=False)
    assert user_role(member("ada")) == Role.READER
    expect(page.get_by_role("link", name="New profile")).to_have_count(0)
    roles = [
        entry.fields
        for entry in Activity.objects.filter(kind="member", key="ada", origin="sso").order_by("id")
    ]
    assert len(roles) == 3  # reader -> editor -> staff -> reader


def test_sso__a_member_in_no_group__gets_the_default_role(page, live_server, sso):
    sso.member_set("cy", groups=[])
    sso_sign_in(page, live_server, "cy")
    assert user_role(member("cy")) == Role.READER
    expect(page.get_by_role("link", name="New profile")).to_have_count(0)


def test_sso__login_page_with_the_button__no_serious_or_critical_axe_violation(
    page, live_server, sso
):
    page.goto(f"{live_server.url}/accounts/login/")
    expect(page.get_by_role("link", name=BUTTON)).to_be_visible()
    expect(page.get_by_label("Password")).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert blocking_violations(page) == []

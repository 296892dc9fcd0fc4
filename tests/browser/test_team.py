"""Teammates in a real browser (issue 38): a staff member invites a teammate, who follows the
emailed link, chooses a username and a password and is signed in as an editor; staff change
their role and deactivate them after a confirmation, and they can no longer sign in. axe
finds no serious or critical violation on the Team page with an open invitation and an
error shown, nor on the invitation's page, light and dark."""

import re

import pytest
from django.contrib.auth.models import User
from django.core import mail
from playwright.sync_api import expect

from profiles.team.invitations import invitation_create
from profiles.workspace.origin import STUDIO
from profiles.workspace.permissions import Role, user_role
from tests.browser.conftest import PASSWORD, screenshot
from tests.browser.test_accessibility import blocking_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

KIM_PASSWORD = "kim-chooses-a-long-one"


def sign_in(page, live_server, username: str, password: str = PASSWORD) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()


def assert_accessible(page, state: str) -> None:
    """No serious or critical axe violation in this state, in light and in dark."""
    found = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.wait_for_load_state("networkidle")
        violations = blocking_violations(page)
        if violations:
            found[scheme] = violations
    page.emulate_media(color_scheme="light")
    assert not found, f"{state}: {found}"


def test_team__invite_join_change_role_deactivate__cannot_sign_in(signed_in, live_server, settings):
    settings.SITE_URL = live_server.url
    page = signed_in

    # Staff invite kim as an editor from the Team page (linked in the top bar).
    page.get_by_role("link", name="Team", exact=True).click()
    expect(page.get_by_role("heading", name="Team", exact=True)).to_be_visible()
    page.get_by_label("Email").fill("kim@example.com")
    page.get_by_label("Role", exact=True).select_option("editor")
    page.get_by_role("button", name="Send invitation").click()
    expect(page.locator(".messages")).to_contain_text("Invitation of kim@example.com as editor")
    expect(page.locator('#invitation-list tr[data-invitation="kim@example.com"]')).to_contain_text(
        "editor"
    )

    # The email's link leads to the studio's own address.
    (message,) = mail.outbox
    assert message.to == ["kim@example.com"]
    link = re.search(r"https?://\S+/team/join/\S+/", message.body).group(0)
    assert link.startswith(f"{live_server.url}/team/join/")
    page.get_by_role("button", name="Sign out").click()

    # Kim chooses a username and a password, and is signed in as an editor.
    page.goto(link)
    expect(page.get_by_role("heading", name="Join Context Studio")).to_be_visible()
    expect(page.locator("main")).to_contain_text("kim@example.com")
    page.get_by_label("Username").fill("kim")
    page.get_by_label("Password", exact=True).fill(KIM_PASSWORD)
    page.get_by_label("Password again").fill(KIM_PASSWORD)
    page.get_by_role("button", name="Join").click()
    page.wait_for_url(f"{live_server.url}/profiles/")
    expect(page.locator(".messages")).to_contain_text("you joined Context Studio as editor")
    expect(page.locator(".signout")).to_contain_text("kim")
    expect(page.get_by_role("link", name="Team", exact=True)).to_have_count(0)
    assert user_role(User.objects.get(username="kim")) == Role.EDITOR
    page.get_by_role("button", name="Sign out").click()

    # The link worked once.
    page.goto(link)
    expect(page.locator("[data-refusal]")).to_contain_text("already been used")

    # Staff make kim a reader…
    sign_in(page, live_server, "editor")
    page.goto(f"{live_server.url}/team/")
    row = page.locator('tr[data-member="kim"]')
    expect(row).to_contain_text("kim@example.com")
    page.get_by_label("Role of kim").select_option("reader")
    page.get_by_role("button", name="Change role of kim").click()
    expect(page.locator(".messages")).to_contain_text("kim is now reader.")
    expect(page.get_by_label("Role of kim")).to_have_value("reader")
    assert user_role(User.objects.get(username="kim")) == Role.READER

    # …then deactivate kim, after a confirmation.
    page.get_by_role("link", name="Deactivate kim").click()
    expect(page.get_by_role("heading", name="Deactivate kim?")).to_be_visible()
    assert User.objects.get(username="kim").is_active
    screenshot(page, "team-deactivate-confirm")
    page.get_by_role("button", name="Deactivate kim").click()
    expect(page.locator(".messages")).to_contain_text("kim is deactivated.")
    expect(row).to_contain_text("deactivated")
    page.get_by_role("button", name="Sign out").click()

    # Kim can no longer sign in.
    sign_in(page, live_server, "kim", KIM_PASSWORD)
    expect(page.get_by_role("alert")).to_be_visible()
    assert page.url.startswith(f"{live_server.url}/accounts/login/")


def test_team_page__open_invitation_and_an_error__no_serious_or_critical_violation(
    signed_in, live_server
):
    page = signed_in
    staff = User.objects.get(username="editor")
    User.objects.create_user("ann", "ann@example.com", PASSWORD)
    invitation_create(email="kim@example.com", role="editor", actor=staff, origin=STUDIO)
    page.goto(f"{live_server.url}/team/")

    page.get_by_label("Email").fill("ann@example.com")
    page.get_by_role("button", name="Send invitation").click()

    expect(page.locator("#id_email_error")).to_contain_text("ann@example.com is already a member")
    expect(page.locator('tr[data-invitation="kim@example.com"]')).to_be_visible()
    screenshot(page, "team-page-error")
    assert_accessible(page, "team page, an open invitation and an error")
    page.get_by_role("link", name="Deactivate ann").click()
    assert_accessible(page, "deactivation's confirmation")


def test_join_page__form_error_and_refusal__no_serious_or_critical_violation(
    page, live_server, user
):
    sent = invitation_create(email="kim@example.com", role="reader", actor=user, origin=STUDIO)
    page.goto(f"{live_server.url}/team/join/{sent.token}/")
    assert_accessible(page, "invitation page")

    page.get_by_label("Username").fill("kim")
    page.get_by_label("Password", exact=True).fill("123")
    page.get_by_label("Password again").fill("123")
    page.get_by_role("button", name="Join").click()
    expect(page.locator("#id_password_error").first).to_be_visible()
    assert_accessible(page, "invitation page, a password refused")

    page.goto(f"{live_server.url}/team/join/{sent.token}x/")
    expect(page.locator("[data-refusal]")).to_contain_text("not valid")
    assert_accessible(page, "invitation page, a link that does not work")

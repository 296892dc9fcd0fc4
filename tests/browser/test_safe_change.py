"""Safe change in a real browser: propose a change of a protected profile, approve it as
another user, apply it; and Save showing the impact on the saved scenarios first."""

import pytest
from playwright.sync_api import expect

from profiles.models import ChangeRequest, Environment, Profile, ProfileVersion
from tests.browser.conftest import screenshot, sign_in, sign_out

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_change_request__propose_approve_as_another_user_apply__one_new_version(
    page, live_server, release
):
    Environment.objects.create(key="production", requires_change_request=True)

    # Dana edits the protected production profile: the editor offers Propose change only.
    sign_in(page, live_server, "dana")
    page.goto(f"{live_server.url}/profiles/profile-0/")
    expect(page.get_by_role("button", name="Save", exact=True)).to_have_count(0)
    page.get_by_label("layer-000 maxItems", exact=True).fill("1")
    expect(page.locator("#unsaved-badge")).to_have_text("Unsaved changes")
    page.get_by_role("button", name="Propose change").click()
    # A confirmation step first (tests/browser/test_reviews.py goes through it in detail).
    page.get_by_role("button", name="Open change request").click()

    # The request shows the rules diff and its impact before anyone reviews it.
    expect(page.get_by_role("heading", name="Impact on the saved scenarios")).to_be_visible()
    expect(page.locator("main")).to_contain_text("This change alters 3 of 3 scenarios")
    expect(page.locator(".diff-table")).to_contain_text("rules.layer-000.maxItems")
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)  # not her own
    screenshot(page, "change-request-proposed")
    url = page.url
    sign_out(page)

    # Lee approves and applies it.
    sign_in(page, live_server, "lee")
    page.goto(url)
    page.get_by_role("button", name="Approve").click()
    expect(page.locator(".messages")).to_contain_text("Approved.")
    expect(page.locator("main")).to_contain_text("Approvals: 1 of 1")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".messages")).to_contain_text("Applied")
    expect(page.locator("main")).to_contain_text("applied as version 2")
    screenshot(page, "change-request-applied")

    change_request = ChangeRequest.objects.get()
    assert change_request.status == "applied"
    version = ProfileVersion.objects.get(profile_key="profile-0", number=2)
    assert (version.author.username, version.approvers) == ("dana", ["lee"])
    assert version.document["rules"]["layer-000"]["maxItems"] == 1

    # The history shows the new version with its change request.
    page.get_by_role("link", name="version 2").click()
    expect(page.locator('tr[data-version="2"]')).to_contain_text(
        f"change request #{change_request.pk}"
    )


def test_save__unprotected__shows_the_impact_then_saves_on_confirm(page, live_server, release):
    sign_in(page, live_server, "dana")
    page.goto(f"{live_server.url}/profiles/profile-0/")
    page.get_by_label("layer-000 maxItems", exact=True).fill("1")
    expect(page.locator("#unsaved-badge")).to_have_text("Unsaved changes")

    page.get_by_role("button", name="Save", exact=True).click()

    panel = page.locator("#save-impact")
    expect(panel).to_contain_text("This change alters 3 of 3 scenarios")
    assert Profile.objects.get(key="profile-0").version == 1  # nothing saved yet
    screenshot(page, "save-impact")
    page.get_by_role("button", name="Confirm save").click()

    expect(page.locator(".messages")).to_contain_text("Saved profile-0")
    assert Profile.objects.get(key="profile-0").version == 2

"""Reviews with people in them, in a real browser (issue 21): Dana proposes a change of a
protected profile through its confirmation step, asking Lee to review; Lee comments and
requests changes (Apply is gone); Dana edits the changes (a new revision); Lee approves and
applies. axe finds no serious or critical violation in the new states, light and dark."""

import pytest
from django.core import mail
from playwright.sync_api import expect

from profiles.models import ChangeRequest, Environment, ProfileVersion
from tests.browser.conftest import screenshot, sign_in, sign_out
from tests.browser.test_accessibility import blocking_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def protected_release(release):
    """The release workspace with production protected."""
    Environment.objects.create(key="production", requires_change_request=True)


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


def test_review__propose_confirm_comment_request_changes_edit_approve_apply(
    page, live_server, protected_release
):
    # Dana edits the protected profile and proposes: first, what will be proposed.
    sign_in(page, live_server, "dana")
    page.goto(f"{live_server.url}/profiles/profile-0/")
    page.get_by_label("layer-000 maxItems", exact=True).fill("1")
    expect(page.locator("#unsaved-badge")).to_have_text("Unsaved changes")
    page.get_by_role("button", name="Propose change").click()
    expect(page.get_by_role("heading", name="Propose a change of profile-0")).to_be_visible()
    expect(page.locator(".diff-table")).to_contain_text("rules.layer-000.maxItems")
    expect(page.locator("main")).to_contain_text("This change alters 3 of 3 scenarios")
    expect(page.get_by_label("Title")).to_have_value("Change profile-0: rules.layer-000.maxItems")
    assert not ChangeRequest.objects.exists()  # nothing opened yet
    assert_accessible(page, "proposal confirmation")
    screenshot(page, "review-confirm")
    page.get_by_label("Description").fill("One KB article is enough for production.")
    page.get_by_label("Reviewers").select_option("lee")
    page.get_by_role("button", name="Open change request").click()

    expect(page.locator(".messages")).to_contain_text("Proposed change request")
    expect(page.locator("#reviewers")).to_contain_text("Review requested of lee")
    change_request = ChangeRequest.objects.get()
    url = page.url
    assert [message.to for message in mail.outbox] == [["lee@example.com"]]
    sign_out(page)

    # Lee comments, then requests changes: Apply is no longer offered.
    sign_in(page, live_server, "lee")
    page.goto(url)
    page.get_by_label("Comment", exact=True).fill("Why only one?")
    page.get_by_role("button", name="Comment", exact=True).click()
    expect(page.locator("#thread")).to_contain_text("Why only one?")
    expect(page.locator("#thread")).to_contain_text("on revision 1")
    page.get_by_label("Review comment").fill("Keep two KB articles.")
    page.get_by_role("button", name="Request changes").click()
    expect(page.locator("#changes-requested")).to_contain_text("Changes requested by lee")
    expect(page.get_by_role("button", name="Apply", exact=True)).to_have_count(0)
    assert_accessible(page, "changes requested")
    screenshot(page, "review-changes-requested")
    # The preview of the request is read-only for its reviewer.
    page.goto(f"{url}preview/")
    expect(page.get_by_role("button", name="Propose change")).to_have_count(0)
    expect(page.get_by_role("button", name="Update change request")).to_have_count(0)
    sign_out(page)

    # Dana edits the changes from the request (a new revision).
    sign_in(page, live_server, "dana")
    page.goto(url)
    page.get_by_role("link", name="Edit the changes in the editor").click()
    page.get_by_label("layer-000 maxItems", exact=True).fill("2")
    page.get_by_role("button", name=f"Update change request #{change_request.pk}").click()
    expect(page.locator(".messages")).to_contain_text("Updated: revision 2")
    expect(page.locator("#changes-requested")).to_have_count(0)
    expect(page.locator("#thread")).to_contain_text("outdated: the request is at revision 2")
    assert_accessible(page, "thread after a new revision")
    sign_out(page)

    # Lee approves revision 2 with a word, and applies it.
    sign_in(page, live_server, "lee")
    page.goto(url)
    page.get_by_label("Review comment").fill("Two it is.")
    page.get_by_role("button", name="Approve").click()
    expect(page.locator(".messages")).to_contain_text("Approved.")
    expect(page.locator("main")).to_contain_text("Approvals: 1 of 1")
    page.get_by_role("button", name="Apply", exact=True).click()
    expect(page.locator(".messages")).to_contain_text("Applied")
    screenshot(page, "review-applied")

    version = ProfileVersion.objects.get(profile_key="profile-0", number=2)
    assert (version.author.username, version.approvers) == ("dana", ["lee"])
    assert version.document["rules"]["layer-000"]["maxItems"] == 2
    kinds = list(change_request.comments.values_list("kind", "revision"))
    assert kinds == [("comment", 1), ("changes-requested", 1), ("approved", 2)]
    # Dana heard of each comment, the verdicts and the apply; Lee of nothing he did himself.
    to_dana = [message.subject for message in mail.outbox if message.to == ["dana@example.com"]]
    assert len(to_dana) == 4 and to_dana[-1].endswith("applied")

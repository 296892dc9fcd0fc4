"""A change request's page in a real browser (issue 38, item 11): it reads top-down for a
reviewer, what changes and its impact first, then the conversation, then the review and the
decision; the author's Close says that it closes the request. axe: no serious or critical
violation in either state."""

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from profiles.models import ChangeRequest
from profiles.safechange.change_requests import change_request_create
from profiles.safechange.reviews import change_request_comment
from tests.browser.conftest import sign_in
from tests.browser.test_accessibility import check, report

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def discussed(release):
    """Dana's open request, with a comment of Lee's in its conversation."""
    dana, lee = (User.objects.get(username=name) for name in ("dana", "lee"))
    change_request = change_request_create(
        profile_key="profile-0",
        title="One article of layer-000",
        changes={"rules": {"layer-000": {"maxItems": 1}}},
        user=dana,
    )
    change_request_comment(pk=change_request.pk, user=lee, body="Is one article enough?")
    return change_request


def sections_top_down(page) -> list[str]:
    """Return the page's section headings in the order a reader meets them on screen."""
    headings = page.locator("main h2")
    tops = {
        headings.nth(index).inner_text(): headings.nth(index).bounding_box()["y"]
        for index in range(headings.count())
    }
    return sorted(tops, key=tops.get)


def test_change_request_page__reviewer__reads_changes_impact_then_conversation_then_decision(
    page, live_server, discussed
):
    found = {}
    sign_in(page, live_server, "lee")

    page.goto(f"{live_server.url}/changes/{discussed.pk}/")

    assert sections_top_down(page) == [
        "Changes",
        "Impact on the saved scenarios",
        "Conversation",
        f"Your review of revision {discussed.revision}",
        "Approvals and decision",
        "Reviewers",
    ]
    # How far the review is stands at the top, linked to the decision below.
    expect(page.locator(".page-head")).to_contain_text("0 of 1 approval")
    check(page, "change request, a reviewer's reading order", found)

    assert not found, report(found)


def test_change_request_page__author__close_says_it_closes_the_request(
    page, live_server, discussed
):
    found = {}
    sign_in(page, live_server, "dana")
    page.goto(f"{live_server.url}/changes/{discussed.pk}/")

    close = page.get_by_role("button", name="Close this request")
    expect(close).to_have_accessible_description(
        "Withdraws your request: nothing is applied; it stays listed under Closed, with its "
        "conversation."
    )
    check(page, "change request, its author's close", found)
    close.click()

    expect(page.locator(".messages")).to_contain_text("Closed the request: nothing was applied.")
    expect(page.locator(".page-head .badge")).to_have_text("closed")
    assert ChangeRequest.objects.get(pk=discussed.pk).status == "closed"
    assert not found, report(found)

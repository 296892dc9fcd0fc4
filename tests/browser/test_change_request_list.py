"""The change request list in a real browser (issue 38, item 6): applied, closed and rejected
requests are found by anyone, under Applied, Closed and All, filtered like every list by profile
and by words of the title; each state has no serious or critical axe violation."""

import pytest
from django.contrib.auth.models import Group, User
from playwright.sync_api import expect

from profiles.authoring.scenarios import scenarios_upsert
from profiles.import_export.imports import workspace_import
from profiles.safechange.change_requests import (
    change_request_apply,
    change_request_close,
    change_request_create,
    change_request_reject,
)
from profiles.safechange.reviews import change_request_approve_reviewed
from profiles.safechange.selectors import change_request_etag
from profiles.workspace import cache
from profiles.workspace.permissions import EDITORS_GROUP
from tests.browser.conftest import PASSWORD
from tests.browser.test_accessibility import check, report
from tests.profiles.conftest import RELEASE_SCENARIOS, release_workspace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def requests_of_every_status(transactional_db):
    """Dana's requests: one applied, one closed, one rejected by Lee, one open."""
    cache.workspace_cache_clear()
    workspace_import(document=release_workspace())
    scenarios_upsert(scenarios=RELEASE_SCENARIOS)
    editors, _ = Group.objects.get_or_create(name=EDITORS_GROUP)
    dana, lee, sam = (
        User.objects.create_user(name, password=PASSWORD) for name in ("dana", "lee", "sam")
    )
    for user in (dana, lee, sam):
        user.groups.add(editors)

    def propose(title: str, profile_key: str, budget: int):
        return change_request_create(
            profile_key=profile_key, title=title, changes={"budget": budget}, user=dana
        )

    applied = propose("Smaller staging budget", "profile-0-staging", 700)
    change_request_approve_reviewed(pk=applied.pk, user=lee, if_match=change_request_etag(applied))
    change_request_apply(pk=applied.pk, user=lee)
    closed = propose("Bigger production budget", "profile-0", 1200)
    change_request_close(pk=closed.pk, user=dana)
    rejected = propose("Tiny production budget", "profile-0", 100)
    change_request_reject(pk=rejected.pk, user=lee)
    still_open = propose("Production budget of 650", "profile-0", 650)
    yield {"applied": applied, "closed": closed, "rejected": rejected, "open": still_open}
    cache.workspace_cache_clear()


def listed(page) -> list[str]:
    """Return the titles the list shows, in order."""
    return page.locator("tbody th[scope=row]").all_inner_texts()


def test_change_request_list__applied_and_closed__found_by_anyone_with_the_same_filters(
    page, live_server, requests_of_every_status
):
    found = {}
    # Sam wrote none of them: "Mine" is not how he finds them.
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("sam")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server.url}/profiles/")
    page.goto(f"{live_server.url}/changes/")
    tabs = page.get_by_role("navigation", name="Change request lists")
    assert listed(page) == ["Production budget of 650"]

    tabs.get_by_role("link", name="Applied", exact=True).click()
    expect(tabs.get_by_role("link", name="Applied", exact=True)).to_have_attribute(
        "aria-current", "page"
    )
    assert listed(page) == ["Smaller staging budget"]
    expect(page.locator("tbody")).to_contain_text("applied")
    check(page, "change requests, applied", found)

    tabs.get_by_role("link", name="Closed", exact=True).click()
    assert listed(page) == ["Tiny production budget", "Bigger production budget"]
    check(page, "change requests, closed", found)

    tabs.get_by_role("link", name="All", exact=True).click()
    assert listed(page) == [
        "Production budget of 650",
        "Tiny production budget",
        "Bigger production budget",
        "Smaller staging budget",
    ]

    # The filters: a profile, then words of the title; they stay as the tab changes.
    page.get_by_label("Profile").select_option("profile-0")
    page.get_by_role("button", name="Filter").click()
    assert listed(page) == [
        "Production budget of 650",
        "Tiny production budget",
        "Bigger production budget",
    ]
    page.get_by_label("Title contains").fill("bigger")
    page.get_by_role("button", name="Filter").click()
    assert listed(page) == ["Bigger production budget"]
    check(page, "change requests, all, filtered", found)
    tabs.get_by_role("link", name="Applied", exact=True).click()
    expect(page.get_by_label("Profile")).to_have_value("profile-0")
    expect(page.get_by_label("Title contains")).to_have_value("bigger")
    expect(page.locator("tbody")).to_contain_text(
        "No change request of this list matches the filters."
    )
    check(page, "change requests, applied, nothing matches", found)

    page.get_by_role("link", name="Clear the filters").click()
    assert listed(page) == ["Smaller staging budget"]

    assert not found, report(found)

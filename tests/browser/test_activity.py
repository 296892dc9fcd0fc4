"""The activity log and the rendered text diff in a real browser: the Activity page filtered
through its form, a version diff with a scenario's rendered text; axe finds no serious or
critical violation on either, light or dark."""

import pytest
from playwright.sync_api import expect

from profiles.activity.records import activity_record
from profiles.authoring.profiles import rule_update
from profiles.models import Activity, ActivityOrigin
from profiles.workspace.origin import WriteOrigin
from tests.browser.conftest import screenshot
from tests.browser.test_accessibility import blocking_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def log(workspace, user):
    """A layer's filter removed through the API, a consumer renamed in the studio, and a long
    item body (folded on the page)."""
    Activity.objects.all().delete()
    writes = [
        ("layer", "tickets", None, {"itemFilter": {"customer_id": "customer_id"}}, {}, "api"),
        ("consumer", "support-assistant", None, {"name": "Support"}, {"name": "Help"}, "studio"),
        ("item", "kb", "kb/refund-timing.md", {"body": "Five days."}, {"body": "x" * 400}, "api"),
    ]
    for kind, key, path, before, after, door in writes:
        activity_record(
            kind=kind,
            key=key,
            path=path,
            before={"key": key, **before},
            after={"key": key, **after},
            user=user,
            origin=WriteOrigin(door=ActivityOrigin(door)),
        )


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_activity_page__filter_by_kind__only_those_rows_and_accessible(
    signed_in, live_server, log, scheme
):
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    page.get_by_role("link", name="Activity", exact=True).first.click()
    expect(page.get_by_role("heading", name="Activity", exact=True)).to_be_visible()
    expect(page.locator("tr[data-activity]")).to_have_count(3)
    assert blocking_violations(page) == []

    page.get_by_label("Kind").select_option("layer")
    page.get_by_role("button", name="Filter").click()

    expect(page.locator("tr[data-activity]")).to_have_count(1)
    row = page.locator("tr[data-activity]").first
    expect(row).to_contain_text("itemFilter")
    expect(row.get_by_role("link", name="tickets")).to_have_attribute("href", "/layers/tickets/")
    page.get_by_role("link", name="Clear filters").click()
    page.locator("summary", has_text="body").click()  # the long value, folded
    expect(page.locator("details[open]")).to_contain_text("xxxx")
    screenshot(page, f"activity-{scheme}")
    assert blocking_violations(page) == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_version_diff__scenario_chosen__rendered_text_lines_removed_and_accessible(
    signed_in, live_server, workspace, user, scheme
):
    rule_update(profile=workspace.key, layer="kb", changes={"maxItems": 1}, user=user)
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    page.goto(f"{live_server.url}/profiles/{workspace.key}/history/?from=1&to=2")

    page.get_by_label("rendered text for").select_option("Dana's card refund")
    page.get_by_role("button", name="Compare").click()

    region = page.get_by_role("region", name="Rendered text, version 1 to version 2")
    expect(region).to_be_visible()
    expect(region.locator("li.removed").first).to_be_visible()
    expect(region.locator("li.removed").first).to_contain_text("removed:")
    region.scroll_into_view_if_needed()
    screenshot(page, f"version-text-diff-{scheme}")
    assert blocking_violations(page) == []

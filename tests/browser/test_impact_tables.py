"""Impact tables in a real browser (issue 38, item 12): the status reads before → after, as the
estimated tokens do, so a scenario blocked before the change reads "BLOCKED → BLOCKED", never as
blocked by it: on a change request's page and in the editor's "Before you save" (one partial,
``profiles/_impact_outcome.html``, for every impact table); no serious or critical axe
violation."""

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from profiles.models import Scenario
from profiles.safechange.change_requests import change_request_create
from tests.browser.test_accessibility import check, report

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def blocked_already(workspace):
    """A saved scenario without the customer layer's required input: blocked today."""
    return Scenario.objects.create(
        name="No customer given",
        profile=workspace,
        input={"message": "card refund"},
        now="2026-01-15T12:00:00Z",
    )


def outcome(table, scenario: str) -> tuple[list[str], list[int]]:
    """Return the statuses and the estimated tokens a scenario's row shows, each in the order
    read (before, then after)."""
    row = table.locator("tbody tr").filter(has=table.page.get_by_role("rowheader", name=scenario))
    statuses = row.locator(".impact-status .status-pill").all_inner_texts()
    tokens = row.locator(".impact-tokens [data-before], .impact-tokens [data-after]")
    return statuses, [int(text) for text in tokens.all_inner_texts()]


def test_change_request_impact__scenario_blocked_before__reads_blocked_to_blocked(
    signed_in, live_server, workspace, blocked_already
):
    page = signed_in
    change_request = change_request_create(
        profile_key=workspace.key,
        title="Fewer KB articles",
        changes={"budget": 900, "rules": {"kb": {"maxItems": 1}}},
        user=User.objects.get(username="editor"),
    )
    found = {}

    page.goto(f"{live_server.url}/changes/{change_request.pk}/")

    table = page.locator("table.impact-table")
    for header in ("Status before → after", "Est. tokens before → after"):
        expect(table.get_by_role("columnheader", name=header)).to_have_count(1)
    # Blocked before and after; the change alters it (fewer tokens), but did not block it.
    statuses, (before, after) = outcome(table, "No customer given")
    assert statuses == ["BLOCKED", "BLOCKED"]
    assert after < before
    statuses, (before, after) = outcome(table, "Dana's card refund")
    assert statuses == ["RESOLVED", "RESOLVED"]
    assert after < before
    check(page, "change request, impact before → after", found)

    assert not found, report(found)


def test_before_you_save__scenario_blocked_before__reads_blocked_to_blocked(
    signed_in, live_server, workspace, blocked_already
):
    page = signed_in
    found = {}
    page.goto(f"{live_server.url}/profiles/{workspace.key}/")
    page.get_by_label("kb maxItems", exact=True).fill("1")
    expect(page.locator("#unsaved-badge")).to_have_text("Unsaved changes")

    page.get_by_role("button", name="Save", exact=True).click()

    panel = page.locator("#save-impact")
    expect(panel).to_contain_text("This change alters")
    table = panel.locator("table.impact-table")
    expect(table.get_by_role("columnheader", name="Status before → after")).to_have_count(1)
    statuses, (before, after) = outcome(table, "No customer given")
    assert statuses == ["BLOCKED", "BLOCKED"]
    assert after < before
    statuses, (before, after) = outcome(table, "Dana's card refund")
    assert statuses == ["RESOLVED", "RESOLVED"]
    assert after < before
    check(page, "before you save, impact before → after", found)

    assert not found, report(found)

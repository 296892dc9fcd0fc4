"""The API docs page (Swagger UI) and the production error pages in a real browser: axe-core
finds no serious or critical violation, in light and dark."""

import pytest
from playwright.sync_api import expect

from profiles.models import DecisionLog, Scenario
from tests.browser.test_accessibility import AXE, BLOCKING, check, report

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def blocking_nodes(page) -> dict[str, int]:
    """Count the serious and critical axe nodes of the page, by rule."""
    results = AXE.run(page).response
    return {
        violation["id"]: len(violation["nodes"])
        for violation in results["violations"]
        if violation["impact"] in BLOCKING
    }


def open_docs(page, live_server):
    page.goto(live_server.url + "/api/v1/docs/")
    page.locator(".opblock").first.wait_for()
    page.wait_for_load_state("networkidle")


def test_axe__api_docs__no_serious_or_critical_violation_in_any_state(page, live_server):
    # Before issue 23 the first state alone had 129 serious nodes: 66 color-contrast (method
    # badges, version badges, the schema link, "Authorize"), 62 nested-interactive (a deep
    # link inside each operation's toggle) and html-has-lang; "Try it out" and the
    # "Authorize" dialog added 2 color-contrast, a label and a button-name. Swagger UI has
    # no dark theme: the page is light whatever the scheme. Issue 21's first operation (the
    # activity log) brought unnamed value lists, an examples list, a grey parameter place, a
    # scrolling example and its numbers' red: named, darkened, made focusable.
    open_docs(page, live_server)
    found = {}
    check(page, "api docs", found)
    page.locator(".opblock-summary-control").first.click()
    page.locator(".opblock-body").first.wait_for()
    check(page, "api docs, an operation open", found)
    page.get_by_role("button", name="Try it out").first.click()
    page.get_by_role("button", name="Execute").wait_for()
    check(page, "api docs, trying an operation out", found)
    # A write with a body of several shapes (its examples list, its JSON editor) open too.
    page.locator(".opblock-post .opblock-summary-control").first.click()
    page.locator(".opblock-post .opblock-body").first.wait_for()
    page.locator(".opblock-post").first.get_by_role("button", name="Try it out").click()
    page.locator(".opblock-post textarea.body-param__text").first.wait_for()
    check(page, "api docs, a write with a body tried out", found)
    page.get_by_role("button", name="Authorize").first.click()
    page.locator(".modal-ux").wait_for()
    check(page, "api docs, the Authorize dialog", found)
    assert not found, report(found)


@pytest.mark.urls("tests.ctxstudio.error_urls")
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe__error_pages__no_serious_or_critical_violation(page, live_server, settings, scheme):
    # Production mode: the studio's own pages, as the test server answers with DEBUG off.
    settings.DEBUG = False
    page.emulate_media(color_scheme=scheme)
    found = {}
    for status in (400, 403, 404, 500, 503):
        response = page.goto(f"{live_server.url}/boom/{status}/")
        assert response.status == status
        expect(page.locator("html")).to_have_attribute("lang", "en")
        expect(page.get_by_role("main").get_by_role("link").first).to_be_visible()  # a way on
        check(page, f"error page {status} ({scheme})", found)
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == ("rgb(14, 18, 25)" if scheme == "dark" else "rgb(244, 246, 250)")
    assert not found, report(found)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_decision_log_entry__save_as_scenario__one_click_and_no_violation(
    signed_in, live_server, workspace, scheme
):
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    entry = DecisionLog.objects.create(
        profile_key=workspace.key,
        request_fingerprint="b" * 64,
        input={"customer_id": "C-7", "message": "Where is my refund?"},
        status="RESOLVED",
    )
    page.goto(f"{live_server.url}/admin/profiles/decisionlog/{entry.pk}/change/")
    found = {}
    check(page, f"admin decision log entry ({scheme})", found)

    page.get_by_label("Scenario name").fill("Refund from traffic")
    page.get_by_role("button", name="Save as scenario").click()

    expect(page.locator(".messagelist")).to_contain_text("Saved as scenario “Refund from traffic”")
    assert Scenario.objects.get(name="Refund from traffic").input == entry.input
    check(page, f"admin decision log entry, saved ({scheme})", found)
    assert not found, report(found)

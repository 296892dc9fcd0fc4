"""Issue 23, "seeing why", in a real browser: the rank and score of items cut by maxItems,
budget cuts apart from the rules' limits, an excluded layer on one line, reason codes that
open their glossary entry, and the profile list's first blocker; axe finds nothing serious
or critical in these states, light and dark."""

import re

import pytest
from playwright.sync_api import expect

from profiles.models import Scenario
from tests.browser.conftest import screenshot
from tests.browser.test_accessibility import check, expand_everything, report

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def open_editor(page, live_server, key: str) -> None:
    page.goto(f"{live_server.url}/profiles/{key}/")
    expect(page.locator("#preview")).to_have_attribute("aria-live", "polite")


def preview_response(key: str, part: str):
    """Return a predicate of the response of the editor's preview (``part`` "rows/": of its
    item rows)."""
    path = f"/profiles/{key}/preview/{part}"
    return lambda response: response.request.method == "POST" and response.url.endswith(path)


def test_editor__kb_max_items_one__cut_items_show_rank_score_and_matched_terms(
    signed_in, live_server, workspace
):
    page = signed_in
    open_editor(page, live_server, workspace.key)

    # Wait for the edit's preview, then for the rows the disclosure loads: a preview still on
    # its way would replace the rows being read (the CI run saw them detached).
    with page.expect_response(preview_response(workspace.key, "")):
        page.get_by_label("kb maxItems", exact=True).fill("1")
    expect(page.locator('#preview [data-layer="kb"] .tl-items')).to_be_visible()
    with page.expect_response(preview_response(workspace.key, "rows/")):
        page.locator('#preview [data-layer="kb"] .tl-items summary').click()

    beyond = page.locator('#preview [data-layer="kb"] table[data-group="BEYOND_MAX_ITEMS"]')
    expect(beyond).to_be_visible()
    first = beyond.locator("tbody tr").first
    expect(first.locator("td.rank")).to_have_text("2")
    expect(first.locator("td.score")).to_have_text(re.compile(r"^\d+\.\d{3}$"))
    expect(first.locator("td").nth(3)).not_to_have_text("—")
    beyond.scroll_into_view_if_needed()
    screenshot(page, "editor-beyond-max-items-ranked")


def test_editor__budget_and_max_items__cuts_counted_apart(signed_in, live_server, workspace):
    page = signed_in
    open_editor(page, live_server, workspace.key)

    page.get_by_label("kb maxItems", exact=True).fill("1")
    page.get_by_label("budget", exact=True).fill("120")

    expect(page.locator("#trimmed-budget")).not_to_have_text("0")
    expect(page.locator("#trimmed-rules")).to_have_text("1")


def test_editor__excluded_layer__one_line_and_its_code_opens_the_glossary(
    signed_in, live_server, workspace
):
    page = signed_in
    open_editor(page, live_server, workspace.key)

    page.get_by_label("kb participation", exact=True).select_option("exclude")

    kb = page.locator('#preview [data-layer="kb"]')
    expect(kb.locator(".tl-collapsed")).to_contain_text("The profile excludes this layer.")
    expect(kb.locator("[data-stage]")).to_have_count(0)
    kb.scroll_into_view_if_needed()
    screenshot(page, "editor-excluded-layer-one-line")
    kb.get_by_role("link", name="EXCLUDED_BY_PROFILE").click()
    expect(page).to_have_url(re.compile(r"/help/reasons/#reason-EXCLUDED_BY_PROFILE$"))
    expect(page.locator("#reason-EXCLUDED_BY_PROFILE")).to_contain_text(
        "The profile excludes this layer."
    )


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe__seeing_why_states__no_serious_or_critical_violation(
    signed_in, live_server, workspace, scheme
):
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    found = {}

    # Cut by maxItems and by the budget, an excluded layer, every disclosure open.
    open_editor(page, live_server, workspace.key)
    page.get_by_label("kb maxItems", exact=True).fill("1")
    page.get_by_label("budget", exact=True).fill("120")
    page.get_by_label("release-notes participation", exact=True).select_option("exclude")
    expect(page.locator("#trimmed-rules")).to_have_text("1")
    expect(page.locator('#preview [data-layer="release-notes"] .tl-collapsed')).to_be_visible()
    expand_everything(page)
    expect(page.locator('table[data-group="BEYOND_MAX_ITEMS"]')).to_be_visible()
    check(page, f"editor, cut items ranked and a layer collapsed ({scheme})", found)

    # The glossary, opened on one entry.
    page.goto(f"{live_server.url}/help/reasons/#reason-BUDGET_TRIMMED")
    check(page, f"reason glossary, an entry targeted ({scheme})", found)

    # The profile list with a blocked profile and its first blocker.
    Scenario.objects.filter(profile=workspace).update(input={})
    page.goto(f"{live_server.url}/profiles/")
    row = page.locator(f'tr[data-profile="{workspace.key}"]')
    expect(row).to_contain_text("Blocked: the required layer")
    check(page, f"profile list, first blocker ({scheme})", found)
    screenshot(page, f"profiles-first-blocker-{scheme}")

    assert not found, report(found)

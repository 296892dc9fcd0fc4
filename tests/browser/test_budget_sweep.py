"""The budget sweep and the playground in a real browser: the slider shows what each budget
admits without re-resolving the preview, and a playground row opens the editor on its input."""

import re
from itertools import pairwise

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot
from tests.browser.test_accessibility import check, report

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_sweep__slider_to_one_token__units_go_out_preview_untouched_axe_clean(
    signed_in, live_server, workspace, scheme
):
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    page.goto(f"{live_server.url}/profiles/{workspace.key}/")
    status = page.locator("#preview-status").inner_text()
    previews = []
    page.on(
        "request",
        lambda request: previews.append(request.url) if request.url.endswith("/preview/") else None,
    )

    # When the sweep is opened and its slider moved to its lowest budget by keyboard,
    page.locator("#budget-sweep summary").click()
    slider = page.get_by_label("Budget to try")
    expect(slider).to_have_value(str(workspace.budget))
    slider.focus()
    page.keyboard.press("Home")

    # then it says what 1 token admits, the slider keeps the focus, the preview is untouched.
    result = page.locator("#sweep-at-result")
    expect(result).to_contain_text("At 1 est. tokens:")
    expect(result).to_contain_text("fewer than at the profile’s budget")
    expect(page.locator("#sweep-table")).to_contain_text("In at 1")  # swapped out of band
    expect(slider).to_be_focused()
    assert previews == []
    expect(page.locator("#preview-status")).to_have_text(status)
    screenshot(page, f"editor-budget-sweep-{scheme}")
    found = {}
    check(page, f"editor, budget sweep at 1 token ({scheme})", found)
    assert not found, report(found)


def test_playground__row_link__opens_the_editor_with_that_input(signed_in, live_server, workspace):
    page = signed_in
    page.goto(f"{live_server.url}/profiles/")
    page.get_by_role("link", name="One input, every profile").click()
    page.get_by_label("message", exact=True).fill("card refund")
    page.get_by_role("button", name="Resolve").click()
    expect(page.locator("table.playground tbody tr")).to_have_count(2)

    page.locator("table.playground").get_by_role("link", name=workspace.key).click()

    expect(page.locator("#preview")).to_have_attribute("aria-live", "polite")
    expect(page.get_by_label("message", exact=True)).to_have_value("card refund")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_playground__opened_without_input__default_scenarios_with_status_pills_axe_clean(
    signed_in, live_server, workspace, scheme
):
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    listed = page.locator('tr[data-profile="support-answer"] .status-pill')
    list_colour = listed.evaluate("pill => getComputedStyle(pill).backgroundColor")

    # When the playground opens from the profile list, nothing typed yet,
    page.get_by_role("link", name="One input, every profile").click()

    # then each profile shows its default scenario's status, coloured as on the profile list,
    expect(page.locator("#playground-note")).to_contain_text("its default scenario")
    row = page.locator('table.playground tr[data-profile="support-answer"]')
    expect(row).to_contain_text("Dana's card refund")
    pill = row.locator(".status-pill")
    expect(pill).to_have_text(listed.inner_text())
    assert pill.evaluate("pill => getComputedStyle(pill).backgroundColor") == list_colour
    assert list_colour != "rgba(0, 0, 0, 0)"
    # a profile without a scenario asks for an input,
    expect(page.locator('table.playground tr[data-profile="qa-review"]')).to_contain_text(
        "type an input above"
    )
    found = {}
    check(page, f"playground, default scenarios ({scheme})", found)
    assert not found, report(found)

    # and the row opens the editor on that scenario.
    row.get_by_role("link", name="support-answer").click()
    expect(page.locator("#scenario-state")).to_contain_text("Showing scenario Dana's card refund")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_sweep__chart_read_then_use_this_budget__budget_is_an_unsaved_edit_axe_clean(
    signed_in, live_server, workspace, scheme
):
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    page.goto(f"{live_server.url}/profiles/{workspace.key}/")
    page.locator("#budget-sweep summary").click()
    slider = page.get_by_label("Budget to try")
    expect(slider).to_have_value(str(workspace.budget))

    # The chart has a budget axis (ticks from 0, its title), a label per bar and a legend.
    figure = page.locator("#sweep-table figure")
    ticks = figure.locator(".sweep-tick")
    expect(ticks.first).to_have_text("0")
    assert ticks.count() >= 3
    expect(figure.locator(".sweep-axis-title")).to_have_text("budget (est. tokens)")
    expect(figure.locator(".sweep-label")).to_have_count(figure.locator("rect.sweep-run").count())
    expect(figure.locator(".sweep-legend")).to_contain_text(
        f"the profile’s budget ({workspace.budget})"
    )
    # Tick labels sit under the plot, left to right, inside the figure.
    boxes = [ticks.nth(i).bounding_box() for i in range(ticks.count())]
    plot = figure.locator("svg.sweep-chart").bounding_box()
    assert all(a["x"] < b["x"] for a, b in pairwise(boxes))
    assert boxes[0]["x"] >= plot["x"] - 1 and boxes[0]["y"] >= plot["y"] + plot["height"] - 1
    figure.scroll_into_view_if_needed()
    screenshot(page, f"editor-budget-sweep-chart-{scheme}")
    found = {}
    check(page, f"editor, budget sweep chart ({scheme})", found)

    # When the slider goes to its highest budget and "Use this budget" is pressed,
    slider.focus()
    page.keyboard.press("End")
    ceiling = slider.get_attribute("max")
    expect(page.locator("#sweep-at-result")).to_contain_text(f"At {ceiling} est. tokens:")
    page.get_by_role("button", name="Use this budget").click()

    # then the budget field holds it, marked edited and focused; the preview shows it unsaved.
    budget = page.get_by_label("budget", exact=True)
    expect(budget).to_have_value(ceiling)
    expect(budget).to_be_focused()
    expect(page.locator(".budget-field")).to_have_class(re.compile(r"\bis-edited\b"))
    expect(page.locator("#unsaved-badge")).to_have_text("Unsaved changes")
    expect(page.locator("#meter-used")).to_be_visible()
    expect(page.locator("#budget-meter")).to_have_attribute("aria-valuemax", ceiling)
    workspace.refresh_from_db()
    assert workspace.budget != int(ceiling)  # nothing saved
    check(page, f"editor, a budget from the sweep ({scheme})", found)
    assert not found, report(found)

"""Compare across formats in a real browser (issue 38 item 15): support-answer renders markdown
and qa-review xml, so the page says a text diff would be all formatting, compares the items
each admits per layer, names the input used, and keeps the text diff a click away."""

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_compare__markdown_and_xml__notice_admitted_items_input_named_text_diff_on_demand(
    signed_in, live_server, workspace
):
    page = signed_in
    scenario = workspace.scenarios.get()

    page.goto(
        f"{live_server.url}/profiles/_compare/?a=support-answer&b=qa-review"
        f"&scenario={scenario.pk}&load=1"
    )

    # The formats differ, said plainly
    expect(page.locator("[data-formats-differ]")).to_contain_text(
        "support-answer renders markdown, qa-review renders xml: a text diff would be all "
        "formatting"
    )
    # The input both resolved, named with its values
    used = page.locator("[data-input-used]")
    expect(used).to_contain_text("scenario “Dana's card refund”")
    expect(used).to_contain_text("customer_id: C-7")
    # The admitted items per layer, first
    table = page.get_by_role("table", name="Admitted items per layer", exact=False)
    expect(table.locator('tr[data-admitted-layer="glossary"] td[data-side="a"]')).to_contain_text(
        "chargeback"
    )
    expect(table.locator('tr[data-admitted-layer="tickets"] td[data-side="b"]')).to_contain_text(
        "T-0950"
    )
    expect(page.locator("main")).not_to_contain_text("T-2002")  # another customer's ticket
    # The text diff: hidden until asked for, then there
    diff = page.get_by_role("region", name="Rendered text, support-answer to qa-review")
    expect(diff).to_be_hidden()
    page.get_by_text("Show the rendered text diff anyway").click()
    expect(diff).to_be_visible()
    expect(diff).to_contain_text("<context>")
    screenshot(page, "compare-across-formats")

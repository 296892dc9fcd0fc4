"""The profile editor in a real browser: every change re-resolves without a page reload."""

import re

import pytest
from playwright.sync_api import expect

from profiles.models import Rule, Scenario
from tests.browser.conftest import screenshot
from tests.browser.test_accessibility import check, report

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def open_editor(page, live_server):
    page.goto(f"{live_server.url}/profiles/support-answer/")
    expect(page.locator("#preview")).to_have_attribute("aria-live", "polite")
    # A marker on the window survives htmx swaps but not a page load.
    page.evaluate("window.__sameDocument = true")


def still_same_document(page) -> bool:
    return page.evaluate("window.__sameDocument === true")


def timeline(page, layer: str):
    return page.locator(f'#preview [data-layer="{layer}"]')


def test_login__valid_credentials__lands_on_profiles_with_status(signed_in):
    page = signed_in
    expect(page.get_by_role("heading", name="Profiles")).to_be_visible()
    row = page.locator('tr[data-profile="support-answer"]')
    expect(row).to_contain_text("RESOLVED")
    expect(row).to_contain_text("Dana's card refund")
    screenshot(page, "profiles-list")


def test_editor__participation_exclude__timeline_says_excluded_without_reload(
    signed_in, live_server
):
    page = signed_in
    open_editor(page, live_server)
    expect(timeline(page, "kb")).to_contain_text("INCLUDED_APPLICABLE")
    screenshot(page, "editor-saved")

    page.get_by_label("kb participation", exact=True).select_option("exclude")

    expect(timeline(page, "kb")).to_contain_text("EXCLUDED_BY_PROFILE")
    expect(page.locator("#unsaved-badge")).to_have_text("Unsaved changes")
    expect(page.locator("#preview")).to_contain_text("What changed")
    assert still_same_document(page)
    # The control being edited was not replaced.
    expect(page.get_by_label("kb participation", exact=True)).to_have_value("exclude")
    screenshot(page, "editor-kb-excluded")


def test_editor__lower_budget__meter_and_trimmed_items_change(signed_in, live_server):
    page = signed_in
    open_editor(page, live_server)
    meter = page.get_by_role("meter")
    expect(meter).to_have_attribute("aria-valuemax", "600")
    used_before = int(meter.get_attribute("aria-valuenow"))
    expect(page.locator("#trimmed-count")).to_have_text("0")

    budget = page.get_by_label("budget", exact=True)
    budget.fill("120")

    expect(meter).to_have_attribute("aria-valuemax", "120")
    used_after = int(meter.get_attribute("aria-valuenow"))
    assert used_after <= 120 < used_before
    expect(page.locator("#trimmed-count")).not_to_have_text("0")
    page.locator("#meter-trimmed summary").click()
    expect(page.locator("#meter-trimmed")).to_contain_text("BUDGET_TRIMMED")
    expect(page.locator("#preview")).to_contain_text("est. tokens (characters ÷ 4)")
    assert still_same_document(page)
    screenshot(page, "editor-budget-120")


def test_editor__type_message__retrieval_scores_change(signed_in, live_server):
    page = signed_in
    open_editor(page, live_server)
    page.locator("#items-kb summary").click()
    refund_row = page.locator('#items-kb tr[data-item="kb/refund-timing.md"]')
    expect(refund_row).to_be_visible()
    score_before = refund_row.locator(".score").inner_text()
    assert float(score_before) > 0

    message = page.get_by_label("message", exact=True)
    message.fill("")
    message.press_sequentially("safari login cookies", delay=20)

    safari_row = page.locator('#items-kb tr[data-item="kb/safari-login.md"]')
    expect(safari_row.locator(".score")).to_have_text(re.compile(r"^[1-9]\d*\.\d+$"))
    expect(safari_row).to_contain_text("safari")
    # The refund article no longer matches: it is not retrieved.
    expect(refund_row).to_contain_text("NOT_RETRIEVED")
    # Focus and typing survived the swaps.
    expect(message).to_be_focused()
    expect(message).to_have_value("safari login cookies")
    assert still_same_document(page)
    screenshot(page, "editor-message-safari")


def test_editor__save__change_persists_with_history_after_reload(signed_in, live_server):
    page = signed_in
    open_editor(page, live_server)
    page.get_by_label("tickets maxItems", exact=True).fill("1")
    expect(page.locator("#unsaved-badge")).to_have_text("Unsaved changes")

    page.get_by_role("button", name="Save", exact=True).click()
    # Save first shows the impact on the saved scenarios (safe change), then saves on confirm.
    expect(page.locator("#save-impact")).to_contain_text("This change alters 1 of 1 scenario")
    page.get_by_role("button", name="Confirm save").click()
    expect(page.locator(".messages")).to_contain_text("Saved support-answer")
    page.reload()

    expect(page.get_by_label("tickets maxItems", exact=True)).to_have_value("1")
    expect(page.locator("#unsaved-badge")).to_have_text("All changes saved")
    history = page.locator(".history-list")
    expect(history.locator("li").first).to_contain_text("editor changed rule tickets")
    expect(history.locator("li").first).to_contain_text("maxItems: 2 → 1")
    assert Rule.objects.get(profile__key="support-answer", layer__key="tickets").max_items == 1
    screenshot(page, "editor-after-save")


def test_editor__save_invalid_value__error_beside_field_and_nothing_saved(signed_in, live_server):
    page = signed_in
    open_editor(page, live_server)
    page.get_by_label("customer maxTokens", exact=True).fill("0")
    # The preview already names the problem beside the field.
    error = page.locator('[data-error-for="customer maxTokens"]')
    expect(error).to_contain_text("must be an integer >= 1")

    page.get_by_role("button", name="Save", exact=True).click()

    expect(page.locator("#save-impact")).to_contain_text("Nothing was saved")
    expect(error).to_contain_text("must be an integer >= 1")
    control = page.get_by_label("customer maxTokens", exact=True)
    expect(control).to_have_attribute("aria-invalid", "true")
    expect(control).to_have_value("0")
    assert Rule.objects.get(profile__key="support-answer", layer__key="customer").max_tokens is None
    screenshot(page, "editor-invalid-save")


def test_editor__keyboard_only__change_rule_and_see_preview(signed_in, live_server):
    page = signed_in
    open_editor(page, live_server)
    control = page.get_by_label("glossary participation", exact=True)
    control.focus()
    # Keyboard: pick "exclude" in the focused select (the last option).
    page.keyboard.press("End")
    expect(timeline(page, "glossary")).to_contain_text("EXCLUDED_BY_PROFILE")
    expect(control).to_be_focused()


def test_editor__preview_rate_used_up__message_in_the_preview_and_form_kept(
    signed_in, live_server, settings
):
    # Given dana's preview rate allows the page and no more,
    page = signed_in
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"preview": "1/minute"},
    }
    open_editor(page, live_server)

    # when an edit asks for another preview,
    page.get_by_label("kb participation", exact=True).select_option("exclude")

    # the preview says why and when to try again, in place; the edit is still in the form.
    expect(page.locator("#preview [role=alert]")).to_contain_text("Try again in")
    assert still_same_document(page)
    expect(page.get_by_label("kb participation", exact=True)).to_have_value("exclude")
    screenshot(page, "editor-preview-throttled")


def test_editor__reopened_after_loading_another_scenario__opens_on_the_default_one(
    signed_in, live_server, workspace
):
    # Given a second scenario, loaded in the editor,
    Scenario.objects.create(
        name="Lee's wallet", profile=workspace, input={"message": "wallet top-up"}
    )
    page = signed_in
    open_editor(page, live_server)
    page.get_by_label("scenario", exact=True).select_option(label="Lee's wallet")
    page.get_by_role("button", name="Load", exact=True).click()
    expect(page.locator("#scenario-state")).to_contain_text("Showing scenario Lee's wallet")

    # when the editor is opened again from the profile list,
    page.goto(f"{live_server.url}/profiles/")
    page.locator('tr[data-profile="support-answer"] th a').click()

    # then it shows the profile's default scenario, not the one loaded last time,
    expect(page.locator("#scenario-state")).to_contain_text("Showing scenario Dana's card refund")
    expect(page.get_by_label("message", exact=True)).not_to_have_value("wallet top-up")
    # and a link that names a scenario opens that one.
    page.goto(f"{live_server.url}/profiles/support-answer/?scenario=Lee's wallet")
    expect(page.locator("#scenario-state")).to_contain_text("Showing scenario Lee's wallet")
    expect(page.get_by_label("message", exact=True)).to_have_value("wallet top-up")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_editor__save_with_a_message__history_says_what_changed_and_why_axe_clean(
    signed_in, live_server, scheme
):
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    open_editor(page, live_server)
    page.get_by_label("tickets maxItems", exact=True).fill("1")

    # When the author says why, beside Save, and saves,
    page.get_by_label("Save message").fill("One ticket is enough for the phone app")
    page.get_by_role("button", name="Save", exact=True).click()
    page.get_by_role("button", name="Confirm save").click()
    expect(page.locator(".messages")).to_contain_text("Saved support-answer")
    expect(page.get_by_label("Save message")).to_have_value("")  # a new save, a new message

    # then History says what kind of version it is, what changed, and why.
    page.get_by_role("link", name="History", exact=True).click()
    what = page.locator('tr[data-version="2"] .version-what')
    expect(what).to_contain_text("Saved in the studio")
    expect(what).to_contain_text("tickets.maxItems 2 → 1")
    expect(what).to_contain_text("“One ticket is enough for the phone app”")
    expect(page.locator('tr[data-version="1"] .version-what')).to_contain_text(
        "Created by a workspace import"
    )
    found = {}
    check(page, f"history, a save with a message ({scheme})", found)
    assert not found, report(found)

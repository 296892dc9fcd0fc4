"""Starting right and keyboard focus in a real browser: what a new profile starts from, the
rules table's selects at 1440 px, the focus of "Before you save", the jump between a
timeline card and its rule row, the scenario status after "Save as scenario"."""

import pytest
from playwright.sync_api import expect

from profiles.models import Item, Profile, Rule, Scenario
from tests.browser.conftest import screenshot
from tests.browser.test_accessibility import check, report

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Width the text of a select's options needs (canvas metrics in the select's own font),
# against the width the select gives it (its content box, less the drop-down arrow), and
# whether the select is inside the visible width of the table's scrolling box.
CUT_SELECTS = """() => {
  const canvas = document.createElement("canvas").getContext("2d");
  const cut = [];
  const pane = document.querySelector("table.rules").parentElement.getBoundingClientRect();
  document.querySelectorAll("table.rules select").forEach((select) => {
    if (!select.getClientRects().length) return;  // in a closed disclosure
    const box = select.getBoundingClientRect();
    if (box.width && (box.right > pane.right + 0.5 || box.left < pane.left - 0.5)) {
      cut.push(`${select.id}: outside the table's visible width`);
      return;
    }
    const style = getComputedStyle(select);
    canvas.font = style.font;
    const room = select.clientWidth - parseFloat(style.paddingLeft)
      - parseFloat(style.paddingRight) - 16;
    for (const option of select.options) {
      const needed = canvas.measureText(option.text).width;
      if (needed > room + 0.5) { cut.push(`${select.id}: ${option.text}`); break; }
    }
  });
  return cut;
}"""


def editor(page, live_server, key="support-answer"):
    page.goto(f"{live_server.url}/profiles/{key}/")
    expect(page.locator("#preview-status")).to_be_visible()


def test_rules_table__1440_px__every_select_shows_its_whole_option_text(signed_in, live_server):
    page = signed_in
    page.set_viewport_size({"width": 1440, "height": 900})
    editor(page, live_server)

    assert page.evaluate(CUT_SELECTS) == []
    # The rule's other fields (facets, currentness), disclosed.
    page.evaluate("document.querySelectorAll('table.rules details').forEach((d) => d.open = true)")
    assert page.evaluate(CUT_SELECTS) == []
    page.locator("#rules").scroll_into_view_if_needed()
    screenshot(page, "rules-table-1440")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_new_profile__these_layers_only__created_with_the_others_excluded_axe_clean(
    signed_in, live_server, scheme
):
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    found = {}
    page.goto(f"{live_server.url}/profiles/_new/")
    page.get_by_label("Name").fill("Release bot")
    page.get_by_label("Consumer").select_option(label="ops-agent")
    page.get_by_label("Objective").fill("changelog")
    page.get_by_label("Budget").fill("400")
    page.get_by_label("These layers only (the others are excluded)").check()
    check(page, f"new profile form ({scheme})", found)

    # No layer checked: the error is beside the checkboxes, nothing is created.
    page.get_by_role("button", name="Create profile").click()
    expect(page.locator("#id_start_layers_error")).to_contain_text("check at least one layer")
    check(page, f"new profile form, no layer checked ({scheme})", found)

    page.get_by_role("group", name="Layers to start with").get_by_label(
        "release-notes — Release notes"
    ).check()
    page.get_by_role("button", name="Create profile").click()

    expect(page.locator("#default-rule-summary")).to_contain_text(
        "1 of 8 layers on the default rule"
    )
    check(page, f"editor of the new profile ({scheme})", found)
    excluded = Rule.objects.filter(profile__key="release-bot", participation="exclude")
    assert sorted(excluded.values_list("layer__key", flat=True)) == sorted(
        ["policies", "customer", "tickets", "kb", "runbooks", "glossary", "status-page"]
    )
    assert not found, report(found)


# --- keyboard and focus ---------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_ctrl_s__focus_moves_into_before_you_save_and_back_on_escape(
    signed_in, live_server, scheme
):
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    found = {}
    editor(page, live_server)
    budget = page.get_by_label("budget", exact=True)
    budget.fill("650")

    page.keyboard.press("Control+s")

    expect(page.get_by_role("heading", name="Before you save")).to_be_focused()
    check(page, f"editor, before you save ({scheme})", found)
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Confirm save")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.locator("#save-impact")).to_be_empty()
    expect(budget).to_be_focused()
    assert Profile.objects.get(key="support-answer").budget == 600
    assert not found, report(found)


def test_save__keep_editing_button__focus_back_on_save(signed_in, live_server):
    page = signed_in
    editor(page, live_server)
    page.get_by_label("budget", exact=True).fill("650")

    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_role("heading", name="Before you save")).to_be_focused()
    page.get_by_role("button", name="Keep editing").click()

    expect(page.locator("#save-impact")).to_be_empty()
    expect(page.get_by_role("button", name="Save", exact=True)).to_be_focused()


def test_save__no_saved_scenario__saves_without_an_empty_confirmation(signed_in, live_server):
    page = signed_in
    Scenario.objects.all().delete()
    editor(page, live_server)
    page.get_by_label("budget", exact=True).fill("650")

    page.keyboard.press("Control+s")

    expect(page.locator(".messages")).to_contain_text("Saved support-answer")
    expect(page.locator("#unsaved-badge")).to_have_text("All changes saved")
    expect(page.get_by_role("heading", name="Before you save")).to_have_count(0)
    assert Profile.objects.get(key="support-answer").budget == 650


def test_save_as_scenario__status_line_names_the_new_scenario_not_edited(signed_in, live_server):
    page = signed_in
    editor(page, live_server)
    page.get_by_label("message", exact=True).fill("Where is my gift card return?")
    state = page.locator("#scenario-state")
    expect(state).to_contain_text("edited since it was loaded")

    # The preview that typing the name starts answers after the save (a slow preview).
    page.route("**/preview/", lambda route: (page.wait_for_timeout(1200), route.continue_()))
    page.get_by_label("save as", exact=True).fill("Gift returns online")
    page.wait_for_timeout(400)  # the debounced preview is on its way
    page.get_by_role("button", name="Save as scenario").click()

    picker = page.get_by_label("scenario", exact=True)
    expect(picker.locator("option:checked")).to_have_text("Gift returns online")
    expect(state).to_contain_text("Showing scenario Gift returns online.")
    page.wait_for_timeout(1500)  # the slow preview has answered
    expect(state).to_contain_text("Showing scenario Gift returns online.")
    expect(state).not_to_contain_text("edited")


def test_timeline_card__jump_to_its_rule_row_and_back__focus_follows(signed_in, live_server):
    page = signed_in
    editor(page, live_server)

    page.get_by_role("link", name="rule of kb in the rules table").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#rule-kb")).to_be_focused()
    # The next Tab is the row's own way back, then the row's controls.
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="timeline decision of kb")).to_be_focused()
    page.keyboard.press("Enter")

    expect(page.locator("#tl-kb")).to_be_focused()
    expect(page.locator("#tl-kb")).to_be_in_viewport()


# --- suggestions -------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_currentness_field__on_no_item__warned_then_fixed_from_the_suggestions(
    signed_in, live_server, scheme
):
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    found = {}
    editor(page, live_server)
    page.locator('[data-rule-layer="release-notes"] summary').click()
    warning = page.locator("#warn-release-notes-currentness-field")
    expect(warning).to_be_empty()  # no maximum age: no date needed

    page.get_by_label("release-notes currentness.maxAgeDays", exact=True).fill("30")
    expect(warning).to_have_text(
        "No item of this layer has a “updated” field: every item is undated."
    )
    check(page, f"editor, currentness field on no item ({scheme})", found)
    options = page.locator("#md-release-notes option")
    expect(options).to_have_count(1)
    assert options.first.get_attribute("label") == "on 2 of 2 items"
    page.get_by_label("release-notes currentness.field", exact=True).fill("date")

    expect(warning).to_be_empty()
    assert not found, report(found)


def test_layer_edit__suggestions_and_a_filter_field_on_no_item__axe_clean(signed_in, live_server):
    page = signed_in
    found = {}
    page.goto(f"{live_server.url}/layers/tickets/")
    expect(page.locator("#id_item_filter_text_known")).to_contain_text("customer_id")
    check(page, "layer edit with suggestions", found)
    page.get_by_label("Item filter").fill("customerId = customer_id")
    page.get_by_role("button", name="Save").click()

    expect(page.locator(".message-warning")).to_contain_text("“customerId”")
    check(page, "layer list after a save with a warning", found)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        check(page, f"layer list after a save with a warning ({scheme})", found)
    assert not found, report(found)


# --- metadata rows --------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_item_form__metadata_rows__errors_per_row_then_saved_axe_clean(
    signed_in, live_server, scheme
):
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    found = {}
    item = Item.objects.filter(layer__key="customer").order_by("position").first()
    page.goto(f"{live_server.url}/layers/customer/items/{item.pk}/")
    expect(page.get_by_label("metadata row 1 field")).to_have_value("customer_id")
    check(page, f"item form with metadata rows ({scheme})", found)

    page.get_by_label("metadata row 3 value").fill("gold")
    page.get_by_role("button", name="Save").click()
    row_error = page.locator("#metadata_error_2")
    expect(row_error).to_have_text("row 3: give the field a name")
    expect(page.get_by_label("metadata row 3 value")).to_have_attribute("aria-invalid", "true")
    check(page, f"item form, a metadata row wrong ({scheme})", found)

    page.get_by_label("metadata row 3 field").fill("tier")
    page.get_by_role("button", name="Save").click()

    expect(page.locator(".message-success")).to_be_visible()
    item.refresh_from_db()
    assert item.metadata["tier"] == "gold"
    assert not found, report(found)


def test_item_form__typing_in_the_json__chooses_the_json_mode(signed_in, live_server):
    page = signed_in
    page.goto(f"{live_server.url}/layers/kb/items/_new/")
    expect(page.get_by_label("key / value rows")).to_be_checked()

    page.get_by_label("Metadata", exact=True).fill('{"updated": "2026-11-30"}')
    expect(page.get_by_label("raw JSON")).to_be_checked()
    page.get_by_label("metadata row 1 field").fill("updated")
    expect(page.get_by_label("key / value rows")).to_be_checked()

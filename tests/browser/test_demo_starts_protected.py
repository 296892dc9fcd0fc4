"""The demo starts protected, in a real browser (issue 38, item 16): the newcomer (the demo
user) creates a new layer; the form names the profiles it joins and production's protection,
the creation meets the change request flow instead of silently changing production's
answers; the second editor signs in, approves and applies it."""

import pytest
from playwright.sync_api import expect

from profiles.models import ChangeRequest, Layer, Profile, Scenario
from profiles.resolution.services import workspace_resolve
from profiles.workspace import cache
from tests.browser.conftest import screenshot, sign_in, sign_out

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def production_answer() -> dict:
    """Return production's support answer to its default saved scenario."""
    cache.workspace_cache_clear()
    scenario = Scenario.objects.get(profile__key="support-answer", is_default=True)
    return workspace_resolve(request=scenario.as_request())["output"]


def test_demo__newcomers_new_layer__change_request_approved_by_the_second_editor_then_applied(
    page, live_server, demo_started
):
    before = production_answer()

    # The newcomer opens the new layer form: it names the profiles the layer would join.
    sign_in(page, live_server, "demo", demo_started["demo"])
    page.goto(f"{live_server.url}/layers/_new/")
    joiners = page.locator("section.joiners")
    production = joiners.get_by_role("listitem").filter(has_text="production")
    expect(production).to_contain_text("protected, 1 approval")
    expect(production).to_contain_text("support-answer")
    expect(joiners.get_by_role("listitem").filter(has_text="staging")).to_contain_text(
        "not protected"
    )
    screenshot(page, "demo-new-layer-form")

    # Creating it is refused and offered as a change request: nothing changed yet.
    page.get_by_label("Name").fill("Holiday hours")
    page.get_by_label("Key").fill("holiday-hours")
    page.get_by_role("button", name="Create layer").click()
    proposal = page.locator("fieldset.proposal")
    expect(proposal).to_contain_text("support-answer")
    assert not Layer.objects.filter(key="holiday-hours").exists()
    proposal.get_by_role("button", name="Propose change request").click()
    expect(page.locator(".messages")).to_contain_text("opened")
    change_request = ChangeRequest.objects.get()
    assert change_request.status == "open"
    assert not Layer.objects.filter(key="holiday-hours").exists()
    sign_out(page)

    # The second editor signs in with the password load_demo printed, approves and applies.
    sign_in(page, live_server, "reviewer", demo_started["reviewer"])
    page.goto(f"{live_server.url}/changes/{change_request.pk}/")
    page.get_by_role("button", name="Approve").click()
    expect(page.locator(".messages")).to_contain_text("Approved")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".messages")).to_contain_text("Applied")

    change_request.refresh_from_db()
    assert change_request.status == "applied"
    assert Layer.objects.filter(key="holiday-hours").exists()
    rule = Profile.objects.get(key="support-answer").rules.get(layer__key="holiday-hours")
    assert rule.participation == "exclude"
    assert production_answer() == before

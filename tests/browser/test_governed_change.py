"""Governed change in a real browser: a new layer with a protected profile present is refused,
proposed as a change set with an exclude rule for that profile, approved by another editor and
applied; production's text is what it was, and the layer is there for everyone else. Each
state passes axe, light and dark."""

import pytest
from playwright.sync_api import expect

from profiles.material.items import item_create
from profiles.models import Activity, ChangeRequest, Environment, Layer, Profile
from profiles.resolution.services import workspace_resolve
from profiles.workspace import cache
from tests.browser.conftest import screenshot, sign_in
from tests.browser.test_accessibility import check, report
from tests.profiles.conftest import REQUEST

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def production_text(profile: str = "profile-0") -> str:
    cache.workspace_cache_clear()
    return workspace_resolve(request={**REQUEST, "profile": profile})["output"]["text"]


@pytest.mark.usefixtures("release")
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_new_layer__protected_reader__proposed_with_exclude_approved_applied__text_unchanged(
    page, live_server, scheme
):
    Environment.objects.create(key="production", requires_change_request=True)
    page.emulate_media(color_scheme=scheme)
    found = {}
    before = production_text()

    # Dana creates a layer that production would read on its default rule: refused, offered.
    sign_in(page, live_server, "dana")
    page.goto(f"{live_server.url}/layers/_new/")
    page.get_by_label("Key").fill("release-notes")
    page.get_by_label("Name").fill("Release notes")
    page.get_by_role("button", name="Create layer").click()
    proposal = page.locator("fieldset.proposal")
    expect(proposal).to_contain_text("profile-0")
    expect(proposal.get_by_label("exclude it", exact=False)).to_be_checked()
    assert not Layer.objects.filter(key="release-notes").exists()
    check(page, f"new layer refused, proposal offered ({scheme})", found)
    screenshot(page, f"governed-new-layer-proposal-{scheme}")

    # She proposes it with the exclude rule: a change set, with its impact.
    proposal.get_by_role("button", name="Propose change request").click()
    expect(page.locator(".messages")).to_contain_text("opened")
    change_request = ChangeRequest.objects.get()
    assert change_request.is_change_set
    kinds = [(c["kind"], c["op"]) for c in change_request.entity_changes]
    assert kinds == [("layer", "create"), ("profile", "update")]
    check(page, f"change set proposed ({scheme})", found)
    page.get_by_role("button", name="Sign out").click()

    # Lee approves and applies it.
    sign_in(page, live_server, "lee")
    page.goto(f"{live_server.url}/changes/{change_request.pk}/")
    page.get_by_role("button", name="Approve").click()
    expect(page.locator(".messages")).to_contain_text("Approved")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".messages")).to_contain_text("Applied")
    check(page, f"change set applied ({scheme})", found)

    # The layer exists, production excludes it, and its text is what it was.
    change_request.refresh_from_db()
    assert change_request.status == "applied"
    assert Layer.objects.filter(key="release-notes").exists()
    rule = Profile.objects.get(key="profile-0").rules.get(layer__key="release-notes")
    assert rule.participation == "exclude"
    assert production_text() == before
    # The exclude rule is what keeps it so: an item of the new layer reaches staging (on the
    # default rule) and not production.
    item_create(
        layer="release-notes", document={"path": "v2.md", "body": "Version 2 refunds in a day."}
    )
    assert production_text() == before
    assert "Version 2 refunds in a day." in production_text("profile-0-staging")
    origins = set(
        Activity.objects.filter(change_request=change_request).values_list("kind", "origin")
    )
    assert origins == {("layer", "change-request"), ("profile", "change-request")}
    assert not found, report(found)

"""Deleting a used layer in a real browser (issue 38 item 18): "Remove its rules and delete"
writes everything at once where no protected profile is affected, and opens one change request
(the rule removals and the deletion) where one is, applied once another editor approves it.
Each state passes axe (no serious or critical violation)."""

import pytest
from playwright.sync_api import expect

from profiles.import_export.documents import workspace_export
from profiles.models import Activity, ChangeRequest, Environment, Layer, ProfileVersion
from tests.browser.conftest import screenshot, sign_in
from tests.browser.test_accessibility import check, report

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

USERS = ["profile-0", "profile-0-staging", "profile-1"]  # rules for layer-000 (release)


def rules_for(layer: str) -> list[str]:
    return sorted(
        profile["key"]
        for profile in workspace_export()["profiles"]
        if layer in (profile.get("rules") or {})
    )


@pytest.mark.usefixtures("release")
def test_delete_used_layer__unprotected__rules_removed_layer_gone_versions_recorded(
    page, live_server
):
    found = {}
    before = ProfileVersion.objects.count()

    # Dana opens the delete page of layer-000: the profiles with a rule for it are listed
    sign_in(page, live_server, "dana")
    page.goto(f"{live_server.url}/layers/layer-000/delete/")
    table = page.get_by_role("table", name="Profiles with a rule for layer-000")
    for key in USERS:
        expect(table.locator(f'tr[data-profile="{key}"]')).to_have_count(1)
    expect(table.locator('tr[data-profile="profile-0"]')).to_contain_text("production")
    check(page, "delete used layer, offered", found)
    screenshot(page, "layer-remove-rules-offered")

    # She removes its rules and deletes it: done at once, and said
    page.get_by_role("button", name="Remove its rules and delete").click()
    expect(page.locator(".messages")).to_contain_text(
        "Layer layer-000 deleted; its rule was removed from 3 profiles"
    )
    check(page, "delete used layer, done", found)

    assert not Layer.objects.filter(key="layer-000").exists()
    assert rules_for("layer-000") == []
    assert ProfileVersion.objects.count() == before + 3
    assert Activity.objects.filter(kind="layer", key="layer-000", op="delete").count() == 1
    assert not found, report(found)


@pytest.mark.usefixtures("release")
def test_delete_used_layer__protected_profile__change_request_then_approved_and_applied(
    page, live_server
):
    Environment.objects.create(key="production", requires_change_request=True)
    found = {}

    # Dana: the page says a change request will be opened, and she opens it
    sign_in(page, live_server, "dana")
    page.goto(f"{live_server.url}/layers/layer-000/delete/")
    form = page.locator("form.remove-rules")
    expect(form).to_contain_text("this opens a change request")
    expect(page.locator('tr[data-profile="profile-0"]')).to_contain_text("protected")
    check(page, "delete used layer, protected, offered", found)
    form.get_by_role("button", name="Remove its rules and delete").click()
    expect(page.locator(".messages")).to_contain_text("Nothing has changed yet.")
    expect(page.get_by_role("heading", name="Impact on the saved scenarios")).to_be_visible()
    check(page, "delete used layer, change request opened", found)
    screenshot(page, "layer-remove-rules-proposed")

    # Nothing is applied until it is approved
    change_request = ChangeRequest.objects.get()
    assert [(c["kind"], c["op"], c["key"]) for c in change_request.entity_changes] == [
        *(("profile", "update", key) for key in USERS),
        ("layer", "delete", "layer-000"),
    ]
    assert Layer.objects.filter(key="layer-000").exists()
    assert rules_for("layer-000") == USERS
    page.get_by_role("button", name="Sign out").click()

    # Lee approves and applies it
    sign_in(page, live_server, "lee")
    page.goto(f"{live_server.url}/changes/{change_request.pk}/")
    page.get_by_role("button", name="Approve").click()
    expect(page.locator(".messages")).to_contain_text("Approved")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".messages")).to_contain_text("Applied")
    check(page, "delete used layer, applied", found)

    change_request.refresh_from_db()
    assert change_request.status == "applied"
    assert not Layer.objects.filter(key="layer-000").exists()
    assert rules_for("layer-000") == []
    logged = Activity.objects.filter(change_request=change_request)
    assert {(row.kind, row.key, row.op) for row in logged} >= {
        *(("profile", key, "update") for key in USERS),
        ("layer", "layer-000", "delete"),
    }
    assert not found, report(found)

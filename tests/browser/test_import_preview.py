"""The upload's preview in a real browser (issue 21): upload a file, read what it would change
and its impact, confirm Import; a file that touches protected profiles is proposed as one
change set instead, whose page shows its entries and impact. Axe finds no serious or critical
violation on the preview or the change set's page, light and dark."""

import copy

import pytest
from playwright.sync_api import expect

from profiles.models import ChangeRequest, Environment, Layer
from resolver.documents import dump_yaml
from tests.browser.conftest import sign_in
from tests.browser.test_accessibility import blocking_violations
from tests.profiles.conftest import release_workspace

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def edited_file(tmp_path):
    document = copy.deepcopy(release_workspace())
    document["layers"].append(
        {
            "key": "release-notes",
            "name": "Release notes",
            "items": [{"path": "2026-12.md", "title": "December", "body": "Cards refund fast."}],
        }
    )
    document["profiles"][1]["budget"] = 650
    path = tmp_path / "release.yaml"
    path.write_text(dump_yaml(document), encoding="utf-8")
    return path


def preview(page, live_server, tmp_path):
    page.goto(f"{live_server.url}/workspace/upload/")
    page.get_by_label("Workspace file (YAML or JSON)").set_input_files(edited_file(tmp_path))
    page.get_by_role("button", name="Preview the import").click()
    expect(
        page.get_by_role("heading", name="What importing release.yaml would change")
    ).to_be_visible()


@pytest.mark.usefixtures("release")
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_upload__preview_then_import__the_file_is_imported(page, live_server, tmp_path, scheme):
    page.emulate_media(color_scheme=scheme)
    sign_in(page, live_server, "dana")

    preview(page, live_server, tmp_path)

    main = page.locator("#import-preview")
    expect(main).to_contain_text("release-notes")
    expect(main).to_contain_text("Impact on the saved scenarios")
    expect(main.locator(".impact-table")).to_contain_text("refund question")
    assert not Layer.objects.filter(key="release-notes").exists()
    assert blocking_violations(page) == []
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page.locator("main")).to_contain_text("Imported.")
    assert Layer.objects.filter(key="release-notes").exists()


@pytest.mark.usefixtures("release")
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_upload__protected_file__proposed_as_a_change_set(page, live_server, tmp_path, scheme):
    page.emulate_media(color_scheme=scheme)
    Environment.objects.create(key="production", requires_change_request=True)
    sign_in(page, live_server, "dana")

    preview(page, live_server, tmp_path)

    expect(page.locator("#import-preview")).to_contain_text("changes what protected profiles read")
    expect(page.get_by_role("button", name="Import", exact=True)).to_have_count(0)
    assert blocking_violations(page) == []
    page.get_by_label("Title of the change request").fill("Release notes")
    page.get_by_role("button", name="Propose as a change request").click()
    expect(page.get_by_role("heading", name="Release notes")).to_be_visible()
    expect(page.locator("main")).to_contain_text("a change set over")
    expect(page.locator("#set-heading")).to_be_visible()
    assert blocking_violations(page) == []
    change_request = ChangeRequest.objects.get()
    assert change_request.is_change_set
    assert not Layer.objects.filter(key="release-notes").exists()

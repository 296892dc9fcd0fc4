"""A layer's bulk upload in a real browser: from the item list, a file with a bad line is
refused on the form with its line, a corrected file goes to the job's page and its summary.
Axe finds no serious or critical violation on the refused form or the job's page."""

import json

import pytest
from playwright.sync_api import expect

from profiles.models import Item
from tests.browser.test_accessibility import blocking_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def batch_file(tmp_path, lines, name: str = "tickets.ndjson"):
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_bulk_upload__bad_line_then_corrected_file__refused_then_ingested(
    signed_in, live_server, tmp_path, scheme
):
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    page.goto(f"{live_server.url}/layers/tickets/items/")
    page.get_by_role("link", name="Bulk upload items").click()
    expect(page.get_by_role("heading", name="Bulk upload items of")).to_be_visible()
    field = page.get_by_label("Batch file (NDJSON or a JSON array)")
    good = {"path": "T-3001", "title": "Parcel lost", "metadata": {"customer_id": "C-7"}}

    # A file whose second line has metadata that is not an object: refused, its line named
    field.set_input_files(batch_file(tmp_path, [good, {"path": "T-3002", "metadata": "x"}]))
    page.get_by_role("button", name="Upload and ingest").click()
    expect(page.get_by_role("alert")).to_contain_text("Nothing was written: 1 error.")
    expect(page.get_by_role("alert")).to_contain_text("line 2, column")
    assert not Item.objects.filter(path="T-3001").exists()
    assert blocking_violations(page) == []

    # The corrected file: the job's page, then its summary
    page.get_by_label("Batch file (NDJSON or a JSON array)").set_input_files(
        batch_file(tmp_path, [good, {"op": "delete", "path": "T-0950"}])
    )
    page.get_by_role("button", name="Upload and ingest").click()
    expect(page.locator("#bulk-job")).to_contain_text("Done. 2 operations applied.")
    assert Item.objects.filter(layer__key="tickets", path="T-3001").exists()
    assert not Item.objects.filter(layer__key="tickets", path="T-0950").exists()
    assert blocking_violations(page) == []

"""What the preview shows and loads on demand: per-stage counts, a layer's rows a page at a
time with filters, the cut units, the scenario picker's state, the shareable link and the
handoff snippets."""

# ruff: noqa: F811 (the studio's editor fixtures, imported: the tests' arguments)

import html as html_module
import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest

from profiles.import_export.imports import workspace_import
from profiles.models import Scenario
from tests.profiles.conftest import load_case_01
from tests.profiles.formdata import editor_form_data
from tests.profiles.studio.fixtures import editor, editor_client  # noqa: F401 (the studio's)

EDITOR = "/profiles/support-answer/"
PREVIEW = EDITOR + "preview/"
ROWS = EDITOR + "preview/rows/"
CUT = EDITOR + "preview/cut/"
HANDOFF = EDITOR + "preview/handoff/"
LOAD = EDITOR + "scenario/load/"
HTMX = {"HX-Request": "true"}

pytestmark = pytest.mark.django_db


def saved_form(client, url=EDITOR) -> dict:
    return editor_form_data(client.get(url).content.decode())


def big_kb(extra: int) -> None:
    """Add ``extra`` items to the kb layer of conformance case 01 (none matches the message)."""
    document = load_case_01()["workspace"]
    kb = next(layer for layer in document["layers"] if layer["key"] == "kb")
    kb["items"] += [
        {"path": f"kb/extra-{n:04}.md", "title": f"Extra {n}", "body": f"Unrelated note {n}."}
        for n in range(extra)
    ]
    workspace_import(document=document, mode="replace")


def test_preview__big_layer__counts_per_stage_and_no_item_row(editor_client, workspace):
    big_kb(300)
    data = saved_form(editor_client)

    html = editor_client.post(PREVIEW, data, headers=HTMX).content.decode()

    kb = html.split('data-layer="kb"')[1].split("</li>\n")[0]
    assert re.search(r"Items: \d+ in the text · 3\d\d other references", kb)
    assert "kb/extra-" not in html  # rows load when the layer is opened
    assert len(html) < 60_000


def test_rows__first_page__twenty_rows_per_stage_and_show_more(editor_client, workspace):
    big_kb(300)
    data = saved_form(editor_client) | {"layer": "kb"}

    html = editor_client.post(ROWS, data, headers=HTMX).content.decode()

    not_retrieved = html.split('data-group="NOT_RETRIEVED"')[1].split("</table>")[0]
    assert not_retrieved.count("<tr class=") == 20 + 1  # 20 rows and the "show more" row
    assert "Show 100 more" in not_retrieved and "(20 of 30" in not_retrieved


@pytest.mark.parametrize("start", ["%C2%B2", "\u00b2", "\u0663", "9" * 5_000])
def test_rows__start_not_ascii_digits__the_first_page(editor_client, workspace, start):
    big_kb(300)
    data = saved_form(editor_client) | {"layer": "kb", "group": "NOT_RETRIEVED"}

    first = editor_client.post(ROWS, data | {"start": "0"}, headers=HTMX)
    response = editor_client.post(ROWS, data | {"start": start}, headers=HTMX)

    assert response.status_code == 200
    assert response.content == first.content


@pytest.mark.parametrize("scenario", ["\u00b2", "\u0663", "9" * 5_000])
def test_scenario_save__loaded_scenario_not_ascii_digits__saved_as_no_scenario_loaded(
    editor_client, workspace, scenario
):
    data = saved_form(editor_client) | {"loaded_scenario": scenario, "scenario_name": "Other"}

    response = editor_client.post(EDITOR + "scenario/save/", data, headers=HTMX)

    assert response.status_code == 200
    assert Scenario.objects.filter(name="Other").exists()


def test_rows__next_page__the_following_rows_only(editor_client, workspace):
    big_kb(300)
    data = saved_form(editor_client) | {"layer": "kb", "group": "NOT_RETRIEVED", "start": "20"}

    html = editor_client.post(ROWS, data, headers=HTMX).content.decode()

    paths = re.findall(r'data-item="(kb/extra-\d+\.md)"', html)
    assert len(paths) == 100
    first = editor_client.post(ROWS, data | {"start": "0", "group": ""}, headers=HTMX)
    assert not set(paths) & set(
        re.findall(r'data-item="(kb/extra-\d+\.md)"', first.content.decode())
    )
    assert "(120 of 3" in html


def test_rows__only_trimmed__other_stages_left_out(editor_client, workspace):
    data = saved_form(editor_client) | {"layer": "tickets", "rows": "trimmed", "budget": "150"}

    html = editor_client.post(ROWS, data, headers=HTMX).content.decode()

    assert 'data-group="trimmed"' in html
    assert 'data-group="admitted"' not in html
    assert "BUDGET_TRIMMED" in html


def test_rows__only_what_changed__rows_whose_fate_differs_from_the_saved_profile(
    editor_client, workspace
):
    data = saved_form(editor_client) | {"layer": "tickets", "rows": "changed"}

    unchanged = editor_client.post(ROWS, data, headers=HTMX).content.decode()
    changed = editor_client.post(
        ROWS, data | {"tickets-maxItems": "1"}, headers=HTMX
    ).content.decode()

    assert "No item matches" in unchanged
    assert 'data-group="BEYOND_MAX_ITEMS"' in changed
    assert 'data-group="admitted"' not in changed


def test_rows__unknown_layer__400(editor_client, workspace):
    data = saved_form(editor_client) | {"layer": "nope"}

    assert editor_client.post(ROWS, data, headers=HTMX).status_code == 400


def test_cut__lower_budget__trimmed_units_listed(editor_client, workspace):
    data = saved_form(editor_client) | {"budget": "120"}

    html = editor_client.post(CUT, data, headers=HTMX).content.decode()

    assert "BUDGET_TRIMMED" in html


def test_load_scenario__htmx__sample_replaced_picker_shows_it_and_preview_out_of_band(
    editor_client, workspace
):
    other = Scenario.objects.create(
        name="Marcus comes back",
        profile=workspace,
        input={"message": "hello again", "customer_id": "C-9"},
        now="2026-11-29T12:00:00Z",
    )
    data = saved_form(editor_client) | {"scenario": str(other.pk), "kb-participation": "exclude"}

    response = editor_client.post(LOAD, data, headers=HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert f'<option value="{other.pk}" selected>Marcus comes back</option>' in html
    assert 'value="C-9"' in html and "hello again" in html
    assert '<div id="preview" hx-swap-oob="innerHTML">' in html
    assert "Showing scenario <strong>Marcus comes back</strong>" in html
    assert response["HX-Replace-Url"] == f"{EDITOR}?scenario={other.pk}"
    # The unsaved rule edit stays in the draft.
    assert "EXCLUDED_BY_PROFILE" in html


def test_editor__loaded_then_reopened__picker_shows_the_default_scenario(editor_client, workspace):
    # Issue 38 item 17: the editor no longer reopens the last loaded scenario across visits.
    other = Scenario.objects.create(
        name="Marcus comes back", profile=workspace, input={"customer_id": "C-9"}
    )
    editor_client.post(LOAD, saved_form(editor_client) | {"scenario": str(other.pk)})

    html = editor_client.get(EDITOR).content.decode()

    assert "selected>Dana&#x27;s card refund (default)</option>" in html
    assert f'<option value="{other.pk}">Marcus comes back</option>' in html  # listed, not selected
    named = editor_client.get(f"{EDITOR}?scenario={other.pk}").content.decode()
    assert f'<option value="{other.pk}" selected>' in named


def test_preview__sample_edited__state_says_edited_and_url_carries_the_sample(
    editor_client, workspace
):
    data = saved_form(editor_client) | {"input:customer_id": "C-9"}

    response = editor_client.post(PREVIEW, data, headers=HTMX)

    html = response.content.decode()
    assert "<em>edited</em> since it was loaded" in html
    query = parse_qs(urlsplit(response["HX-Replace-Url"]).query)
    assert query["input:customer_id"] == ["C-9"]
    assert query["message"] == [data["message"]]


def test_editor__shared_link__opens_on_the_sample_it_carries(editor_client, workspace):
    data = saved_form(editor_client) | {"input:customer_id": "C-9", "message": "wallet"}
    link = editor_client.post(PREVIEW, data, headers=HTMX)["HX-Replace-Url"]

    # A reviewer (another session) opens the link.
    editor_client.logout()
    from django.contrib.auth.models import User

    editor_client.force_login(User.objects.create_superuser("reviewer", "", "x"))
    form = editor_form_data(editor_client.get(link).content.decode())

    assert (form["input:customer_id"], form["message"]) == ("C-9", "wallet")


def test_handoff__saved_profile__resolve_call_with_summary_detail(editor_client, workspace):
    data = saved_form(editor_client)

    html = editor_client.post(HANDOFF, data, headers=HTMX).content.decode()

    assert "http://testserver/api/v1/resolve" in html
    curl = html_module.unescape(html.split('id="snippet-curl"')[1].split("</pre>")[0])
    body = json.loads(curl.split("-d '", 1)[1].rsplit("'", 1)[0])
    assert body["profile"] == "support-answer" and body["detail"] == "summary"
    assert body["input"]["customer_id"] == data["input:customer_id"]
    assert "requests.post(" in html and "await fetch(" in html
    assert "CONTEXT_STUDIO_TOKEN" in html


def test_handoff__unsaved_edit__preview_call_with_only_the_edited_rule(editor_client, workspace):
    data = saved_form(editor_client) | {"kb-participation": "exclude", "budget": "700"}

    html = editor_client.post(HANDOFF, data, headers=HTMX).content.decode()

    curl = html_module.unescape(html.split('id="snippet-curl"')[1].split("</pre>")[0])
    body = json.loads(curl.split("-d '", 1)[1].rsplit("'", 1)[0])
    assert "/api/v1/profiles/support-answer/preview" in curl
    assert body["detail"] == "summary"
    assert body["budget"] == 700
    assert list(body["rules"]) == ["kb"]
    assert body["rules"]["kb"]["participation"] == "exclude"

"""Starting right in the studio: what a new profile's rules start from, and the editor's
count of the layers on the default rule."""

# ruff: noqa: F811 (the studio's editor fixtures, imported: the tests' arguments)

import re

import pytest

from profiles.models import Consumer, Item, Rule
from tests.profiles.studio.fixtures import editor, editor_client  # noqa: F401 (the studio's)

pytestmark = pytest.mark.django_db

LAYERS = ["policies", "customer", "tickets", "kb", "release-notes", "runbooks", "glossary"]


def new_profile(**extra) -> dict:
    consumer = Consumer.objects.get(key="ops-agent")
    return {
        "name": "Release bot",
        "key": "release-bot",
        "consumer": consumer.pk,
        "objective": "changelog",
        "budget": "400",
        **extra,
    }


def rules_of(key: str) -> dict:
    return {
        rule.layer.key: rule.participation
        for rule in Rule.objects.filter(profile__key=key).select_related("layer")
    }


def test_profile_create__page__offers_the_four_starts_and_every_layer_and_profile(
    editor_client, workspace
):
    html = editor_client.get("/profiles/_new/").content.decode()

    assert "<legend>Start from</legend>" in html
    assert set(re.findall(r'name="start" value="([a-z]+)"', html)) == {
        "default",
        "none",
        "layers",
        "copy",
    }
    assert "<legend>Layers to start with</legend>" in html
    assert set(re.findall(r'name="start_layers" value="([a-z-]+)"', html)) >= set(LAYERS)
    assert '<option value="qa-review">qa-review</option>' in html


def test_profile_create__these_layers__the_others_excluded(editor_client, workspace):
    response = editor_client.post(
        "/profiles/_new/", new_profile(start="layers", start_layers=["release-notes"])
    )

    assert response.status_code == 302
    rules = rules_of("release-bot")
    assert "release-notes" not in rules
    assert rules == {key: "exclude" for key in rules} and len(rules) == 7


def test_profile_create__copy__gets_that_profiles_rules(editor_client, workspace):
    response = editor_client.post(
        "/profiles/_new/", new_profile(start="copy", start_copy="qa-review")
    )

    assert response.status_code == 302
    assert rules_of("release-bot") == rules_of("qa-review")


def test_profile_create__these_layers_none_checked__error_beside_the_checkboxes(
    editor_client, workspace
):
    response = editor_client.post("/profiles/_new/", new_profile(start="layers"))

    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="id_start_layers_error">check at least one layer' in html
    assert not rules_of("release-bot")


def test_profile_create__no_start_given__every_layer_on_the_default_rule(editor_client, workspace):
    response = editor_client.post("/profiles/_new/", new_profile())

    assert response.status_code == 302
    assert rules_of("release-bot") == {}
    html = editor_client.get("/profiles/release-bot/").content.decode()
    assert "<strong>8 of 8 layers on the default rule</strong>" in html


def test_editor__some_layers_on_the_default_rule__counted_and_linked_to_their_rows(
    editor_client, workspace
):
    editor_client.post("/profiles/_new/", new_profile(start="none"))
    Rule.objects.filter(profile__key="release-bot", layer__key="kb").delete()

    html = editor_client.get("/profiles/release-bot/").content.decode()

    summary = html.split('id="default-rule-summary"')[1].split("</p>")[0]
    assert "<strong>1 of 8 layers on the default rule</strong>" in summary
    assert '<a href="#rule-kb">kb</a>' in summary
    assert 'id="rule-kb" tabindex="-1"' in html


# --- suggestions instead of free text --------------------------------------------------------


def test_layer_edit__free_text_fields__suggest_what_the_workspace_knows(editor_client, workspace):
    html = editor_client.get("/layers/tickets/").content.decode()

    objectives = html.split('<datalist id="id_objectives_suggestions">')[1].split("</datalist>")[0]
    assert '<option value="answer-ticket"' in objectives
    assert '<option value="review-answer"' in objectives
    assert 'list="id_objectives_suggestions"' in html
    consumers = html.split('<datalist id="id_consumers_suggestions">')[1].split("</datalist>")[0]
    assert '<option value="qa-bot"' in consumers
    inputs = html.split('<datalist id="id_requires_input_text_suggestions">')[1]
    assert '<option value="customer_id" label="used by 2 layers">' in inputs
    # The item filter names metadata fields: the ones the layer's items have, with counts.
    known = html.split('id="id_item_filter_text_known"')[1].split("</span>\n")[0]
    assert "<code>customer_id</code> <span" in known and "(on 4 of 4 items)" in known


def test_layer_edit__filter_field_on_no_item__warned_and_still_saved(editor_client, workspace):
    html = editor_client.get("/layers/tickets/").content.decode()
    assert 'class="field-warning"' not in html
    data = {
        "name": "Customer tickets",
        "key": "tickets",
        "availability": "auto",
        "item_filter_text": "customerId = customer_id",
        "etag": re.search(r'name="etag" value="([^"]*)"', html).group(1).replace("&quot;", '"'),
    }

    response = editor_client.post("/layers/tickets/", data, follow=True)

    assert response.status_code == 200
    page = response.content.decode()
    assert "no item of this layer has a “customerId” field" in page


def test_editor__currentness_field__suggests_the_layers_metadata_fields_with_counts(
    editor_client, workspace
):
    html = editor_client.get("/profiles/support-answer/").content.decode()

    control = html.split('id="r-release-notes-currentness-field"')[1].split(">")[0]
    assert 'list="md-release-notes"' in control
    assert 'aria-describedby="err-release-notes-currentness-field warn-release-notes-' in control
    datalist = html.split('<datalist id="md-release-notes">')[1].split("</datalist>")[0]
    assert datalist == '<option value="date" label="on 2 of 2 items"></option>'
    assert '<span class="field-warning" id="warn-release-notes-currentness-field"' in html


# --- metadata as key/value rows ---------------------------------------------------------------


def item_page(client) -> tuple[str, str]:
    item = Item.objects.filter(layer__key="customer").order_by("position").first()
    url = f"/layers/customer/items/{item.pk}/"
    return url, client.get(url).content.decode()


def test_item_edit__metadata__one_row_per_field_and_blanks_rows_chosen(editor_client, workspace):
    _url, html = item_page(editor_client)

    # One row per field, in the stored order (PostgreSQL's jsonb orders keys by length).
    keys = re.findall(r'name="metadata_key_(\d)" id="metadata_key_\d" value="([^"]*)"', html)
    values = dict(
        re.findall(r'name="metadata_value_(\d)" id="metadata_value_\d" value="([^"]*)"', html)
    )
    rows = {key: values[i] for i, key in keys if key}
    assert rows == {"customer_id": "C-7", "updated": "2026-11-01"}
    assert 'name="metadata_key_4" id="metadata_key_4" value=""' in html  # three blank rows
    assert '<input type="hidden" name="metadata_rows" value="5">' in html
    assert (
        'name="metadata_mode" value="rows"' in html
        and "checked" in html.split('name="metadata_mode" value="rows"')[1].split(">")[0]
    )
    assert 'name="metadata_text"' in html  # raw JSON stays an option


def rows_post(html: str, rows: list[tuple[str, str]], mode: str = "rows") -> dict:
    data = {
        "path": re.search(r'name="path"[^>]*value="([^"]*)"', html).group(1),
        "title": "Dana",
        "body": "Customer Dana.",
        "metadata_mode": mode,
        "metadata_text": '{"ignored": true}',
        "metadata_rows": str(len(rows)),
        "etag": re.search(r'name="etag" value="([^"]*)"', html).group(1).replace("&quot;", '"'),
    }
    for i, (key, value) in enumerate(rows):
        data[f"metadata_key_{i}"], data[f"metadata_value_{i}"] = key, value
    return data


def test_item_edit__rows__saved_with_json_values_read_as_json(editor_client, workspace):
    url, html = item_page(editor_client)
    rows = [("customer_id", "C-7"), ("updated", "2026-11-03"), ("", ""), ("tier", "3")]
    rows += [("vip", "true"), ("code", '"007"')]

    response = editor_client.post(url, rows_post(html, rows))

    assert response.status_code == 302
    item = Item.objects.get(layer__key="customer", path=rows_post(html, [])["path"])
    assert item.metadata == {
        "customer_id": "C-7",
        "updated": "2026-11-03",
        "tier": 3,
        "vip": True,
        "code": "007",
    }


def test_item_edit__bad_rows__an_error_beside_each_row_nothing_saved(editor_client, workspace):
    url, html = item_page(editor_client)
    before = Item.objects.get(layer__key="customer", path=rows_post(html, [])["path"]).metadata
    rows = [("customer_id", "C-7"), ("", "orphan"), ("customer_id", "C-8"), ("list", "[1, 2")]

    response = editor_client.post(url, rows_post(html, rows))

    assert response.status_code == 400
    page = response.content.decode()
    assert '<span class="field-error" id="metadata_error_1">row 2: give the field a name' in page
    assert 'id="metadata_error_2">row 3: “customer_id” is already row 1</span>' in page
    assert 'id="metadata_error_3">row 4: not valid JSON' in page
    assert 'aria-describedby="metadata_error_3"' in page
    assert 'value="orphan"' in page  # what was typed stays
    assert Item.objects.get(layer__key="customer", path=rows_post(html, [])["path"]).metadata == (
        before
    )


def test_item_edit__raw_json_chosen__the_json_is_saved(editor_client, workspace):
    url, html = item_page(editor_client)
    data = rows_post(html, [("ignored", "x")], mode="json") | {
        "metadata_text": '{"customer_id": "C-7", "updated": "2026-11-04"}'
    }

    assert editor_client.post(url, data).status_code == 302
    item = Item.objects.get(layer__key="customer", path=data["path"])
    assert item.metadata == {"customer_id": "C-7", "updated": "2026-11-04"}


@pytest.mark.parametrize("count", ["abc", "-3", "99999999999999999999", "٣"])
def test_item_edit__row_count_not_a_number__no_rows_read_no_crash(editor_client, workspace, count):
    url, html = item_page(editor_client)
    data = rows_post(html, [("customer_id", "C-7")]) | {"metadata_rows": count}

    response = editor_client.post(url, data)

    assert response.status_code in (302, 400)

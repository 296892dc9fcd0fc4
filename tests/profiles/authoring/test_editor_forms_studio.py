"""The editor's forms: one rule form per layer prefixed by its key, errors beside the fields,
sample-input fields from the layers, numbers no database column holds refused in words."""

# ruff: noqa: F811 (the studio's editor fixtures, imported: the tests' arguments)

import re

import pytest

from profiles.import_export.imports import workspace_import
from profiles.models import Profile, Rule, Scenario
from tests.profiles.conftest import load_case_01
from tests.profiles.formdata import editor_form_data
from tests.profiles.studio.fixtures import editor, editor_client  # noqa: F401 (the studio's)

EDITOR = "/profiles/support-answer/"
PREVIEW = "/profiles/support-answer/preview/"
SAVE = "/profiles/support-answer/save/"
HUGE = "9" * 5000  # more digits than Python converts to an int (4,300)

pytestmark = pytest.mark.django_db


def saved_form(client, url=EDITOR) -> dict:
    return editor_form_data(client.get(url).content.decode())


def control(html: str, control_id: str) -> str:
    """Return the opening tag of the control with this id."""
    return re.search(rf'<(?:input|select|textarea)[^>]*id="{control_id}"[^>]*>', html).group(0)


def test_editor__rule_controls__named_by_layer_key_prefix(editor_client, workspace):
    form = saved_form(editor_client)

    layers = [layer["key"] for layer in load_case_01()["workspace"]["layers"]]
    for layer in layers:
        assert f"{layer}-participation" in form and f"{layer}-currentness.maxAgeDays" in form
    # Sample-input names carry a ":" no layer key has: they never collide with a rule field.
    assert "input:customer_id" in form and "avail:kb" in form


@pytest.mark.parametrize("field", ["budget", "tickets-maxItems", "kb-currentness.maxAgeDays"])
def test_preview__integer_of_5000_digits__error_beside_the_field(editor_client, workspace, field):
    data = saved_form(editor_client) | {field: HUGE}

    response = editor_client.post(PREVIEW, data, headers={"HX-Request": "true"})

    html = response.content.decode()
    assert response.status_code == 200
    assert "Not previewed" in html
    assert "must be at most 2147483647" in html


def test_save__budget_of_5000_digits__400_field_error_and_nothing_saved(editor_client, workspace):
    data = saved_form(editor_client) | {"budget": HUGE, "tickets-maxItems": "1"}

    response = editor_client.post(SAVE, data)

    html = response.content.decode()
    assert response.status_code == 400
    assert 'data-error-for="budget">must be at most 2147483647<' in html
    assert Profile.objects.get(key="support-answer").budget == 600
    assert Rule.objects.get(profile=workspace, layer__key="tickets").max_items == 2


def test_preview__not_a_number__error_in_words(editor_client, workspace):
    data = saved_form(editor_client) | {"kb-priority": "high", "kb-mode": "sometimes"}

    html = editor_client.post(PREVIEW, data, headers={"HX-Request": "true"}).content.decode()

    assert "kb priority</code>: must be a number" in html
    assert "kb mode</code>: must be one of inline, retrieve, on-demand" in html


def test_save__engine_issue__on_the_rule_field_with_add_error(editor_client, workspace):
    data = saved_form(editor_client) | {"customer-participation": "exclude"}

    response = editor_client.post(SAVE, data)

    html = response.content.decode()
    assert response.status_code == 400
    assert 'aria-invalid="true"' in control(html, "r-customer-required")
    assert (
        'data-error-for="customer required">a required layer cannot have participation exclude'
        in html
    )


def test_editor__profile_without_scenario__sample_input_has_the_layers_input_fields(
    editor_client, workspace
):
    # Given a new profile that has no saved scenario
    document = load_case_01()["workspace"]
    document["profiles"].append(
        {
            "key": "fresh",
            "consumer": document["consumers"][0]["key"],
            "objective": "brand-new",
            "budget": 500,
        }
    )
    workspace_import(document=document, mode="replace")
    assert not Scenario.objects.filter(profile__key="fresh").exists()

    form = saved_form(editor_client, "/profiles/fresh/")

    assert "input:customer_id" in form
    data = form | {"input:customer_id": "C-7"}
    html = editor_client.post(
        "/profiles/fresh/preview/", data, headers={"HX-Request": "true"}
    ).content.decode()
    assert "MATCHED" in html  # the customer-scoped layer is previewed for C-7


def test_editor__page__controls_carry_their_saved_value_for_edit_marks(editor_client, workspace):
    html = editor_client.get(EDITOR).content.decode()

    assert 'data-saved="2"' in control(html, "r-tickets-maxItems")
    assert 'data-saved="600"' in control(html, "budget-input")

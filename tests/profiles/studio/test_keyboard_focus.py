"""Keyboard and focus in the editor, server side: Save skips the empty impact step, the
jump links between the timeline and the rules, the scenario status after saving one."""

# ruff: noqa: F811 (the studio's editor fixtures, imported: the tests' arguments)

import pytest
from django.urls import reverse

from profiles.models import Profile, Scenario
from tests.profiles.formdata import editor_form_data
from tests.profiles.studio.fixtures import editor, editor_client  # noqa: F401 (the studio's)

pytestmark = pytest.mark.django_db

EDITOR = "/profiles/support-answer/"
IMPACT = reverse("profile-save-impact", args=["support-answer"])


def test_save_impact__no_saved_scenario__no_panel_the_page_is_told_to_save(
    editor_client, workspace
):
    Scenario.objects.all().delete()
    data = editor_form_data(editor_client.get(EDITOR).content.decode()) | {"budget": "650"}

    response = editor_client.post(IMPACT, data, headers={"HX-Request": "true"})

    assert response.status_code == 200
    assert response.content == b""
    assert response["HX-Trigger"] == "save-impact-none"
    assert Profile.objects.get(key="support-answer").budget == 600  # nothing saved yet


def test_save_impact__a_saved_scenario__the_panel_to_confirm(editor_client, workspace):
    data = editor_form_data(editor_client.get(EDITOR).content.decode()) | {"budget": "650"}

    response = editor_client.post(IMPACT, data, headers={"HX-Request": "true"})

    assert "HX-Trigger" not in response
    html = response.content.decode()
    assert '<h2 id="save-impact-heading" tabindex="-1">Before you save</h2>' in html
    assert "data-keep-editing" in html


def test_editor__timeline_card_and_rule_row__link_to_each_other_with_names(
    editor_client, workspace
):
    html = editor_client.get(EDITOR).content.decode()

    row = html.split('id="rule-kb" tabindex="-1"')[1].split("</th>")[0]
    assert (
        '<a class="jump-link" href="#tl-kb">timeline<span class="visually-hidden"> decision of '
        "kb</span>" in row
    )
    card = html.split('id="tl-kb" tabindex="-1"')[1].split('<ol class="stages">')[0]
    assert (
        '<a class="jump-link" href="#rule-kb">rule<span class="visually-hidden"> of kb in the '
        "rules table</span>" in card
    )

""" "Save as scenario" on a decision log entry: a logged production request becomes a saved
scenario of its profile (name suggested, editable), through the authoring service; refused,
and nothing written, when the input was not stored or the name is taken."""

import datetime as dt

import pytest
from django.urls import reverse

from profiles.authoring.scenarios import ScenarioInvalid
from profiles.import_export.imports import workspace_import
from profiles.models import DecisionLog, Scenario
from profiles.resolution.decision_log import decision_log_save_as_scenario
from tests.profiles.conftest import load_case_01
from tests.profiles.doors.test_rendered_pages import assert_no_template_syntax

pytestmark = pytest.mark.django_db

SERVED = dt.datetime(2026, 11, 30, 9, 15, 42, 123456, tzinfo=dt.UTC)


@pytest.fixture
def entry():
    workspace_import(document=load_case_01()["workspace"], mode="replace")
    return DecisionLog.objects.create(
        created_at=SERVED,
        profile_key="support-answer",
        request_fingerprint="a" * 64,
        input={"customer_id": "C-7", "message": "Where is my refund?"},
        status="RESOLVED",
    )


def change_page(entry) -> str:
    return reverse("admin:profiles_decisionlog_change", args=[entry.pk])


def save_url(entry) -> str:
    return reverse("admin:profiles_decisionlog_save_scenario", args=[entry.pk])


def test_change_page__stored_input__offers_save_as_scenario_with_a_suggested_name(
    admin_client, entry
):
    response = admin_client.get(change_page(entry))

    assert_no_template_syntax(response, "the decision log entry page")
    html = response.content.decode()
    assert "Save as scenario" in html
    assert f'value="support-answer request {entry.pk} (2026-11-30 09:15)"' in html
    assert f'action="{save_url(entry)}"' in html


def test_save_as_scenario__a_name__scenario_of_the_profile_with_input_and_time(admin_client, entry):
    response = admin_client.post(save_url(entry), {"name": "Refund from traffic"}, follow=True)

    scenario = Scenario.objects.get(name="Refund from traffic")
    assert scenario.profile.key == "support-answer"
    assert scenario.input == entry.input
    assert scenario.now == "2026-11-30T09:15:42Z"
    assert f"request {entry.pk}" in scenario.description
    assert not scenario.is_default
    html = response.content.decode()
    assert "Saved as scenario “Refund from traffic” of profile support-answer" in html
    assert f"/profiles/support-answer/?scenario={scenario.pk}" in html


def test_save_as_scenario__input_not_stored__refused_clearly_nothing_written(admin_client, entry):
    entry.input = None
    entry.save()

    page = admin_client.get(change_page(entry)).content.decode()
    response = admin_client.post(save_url(entry), {"name": "No input"}, follow=True)

    assert "The input of this request was not stored" in page
    assert 'id="save-scenario-form"' not in page
    assert "Not saved as a scenario: input: was not stored" in response.content.decode()
    assert not Scenario.objects.filter(name="No input").exists()


def test_save_as_scenario__name_taken__refused_naming_the_field(admin_client, entry):
    decision_log_save_as_scenario(entry=entry, name="Taken")

    response = admin_client.post(save_url(entry), {"name": "Taken"}, follow=True)

    html = response.content.decode()
    message = html.split("Not saved as a scenario: ", 1)[1].split("</li>", 1)[0]
    assert message == "name: scenario &quot;Taken&quot; already exists"
    assert Scenario.objects.filter(name="Taken").count() == 1


def test_save_as_scenario__empty_name__refused_naming_the_field(admin_client, entry):
    with pytest.raises(ScenarioInvalid) as refused:
        decision_log_save_as_scenario(entry=entry, name="  ")

    assert refused.value.issues[0].path == "name"
    assert not Scenario.objects.exists()


def test_save_as_scenario__get__method_not_allowed(admin_client, entry):
    assert admin_client.get(save_url(entry)).status_code == 405

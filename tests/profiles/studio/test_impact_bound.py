"""The studio under the bound of one impact: "Before you save" and a change request's page say
how many scenarios were not resolved, and why."""

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse

from profiles.authoring.scenarios import scenarios_upsert
from profiles.import_export.workspace import workspace_import
from profiles.safechange.change_requests import change_request_create
from profiles.workspace.permissions import EDITORS_GROUP
from tests.profiles.api.conftest import RELEASE_SCENARIOS, release_workspace
from tests.profiles.studio.formdata import editor_form_data

pytestmark = pytest.mark.django_db

EDITOR = "/profiles/profile-0/"


@pytest.fixture
def dana(client, settings):
    # Given a bound of 4 resolutions (2 scenarios) and profile-0's 3 saved scenarios,
    settings.IMPACT_MAX_RESOLUTIONS = 4
    workspace_import(document=release_workspace())
    scenarios_upsert(scenarios=RELEASE_SCENARIOS)
    user = User.objects.create_user("dana", password="dana-password-1")
    user.groups.add(Group.objects.get_or_create(name=EDITORS_GROUP)[0])
    client.force_login(user)
    return user


def test_save_impact__more_scenarios_than_the_bound__says_one_was_not_resolved(client, dana):
    data = editor_form_data(client.get(EDITOR).content.decode())
    data["layer-000-maxItems"] = "1"

    response = client.post(
        reverse("profile-save-impact", args=["profile-0"]), data, headers={"HX-Request": "true"}
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert "This change alters 2 of 3 scenarios (1 not resolved" in html
    assert "one impact resolves at most 2 scenarios" in html


def test_change_request_page__skipped_scenario__row_says_not_resolved(client, dana):
    change_request = change_request_create(
        profile_key="profile-0",
        title="Fewer items",
        changes={"rules": {"layer-000": {"maxItems": 1}}},
        user=dana,
    )

    html = client.get(reverse("change-request", args=[change_request.pk])).content.decode()

    assert "This change alters 2 of 3 scenarios (1 not resolved" in html
    # One row (the skipped scenario) says why, and how to see it.
    assert html.count("scenarios (preview it, or run the API's dry run") == 1

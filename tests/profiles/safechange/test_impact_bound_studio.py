"""The studio under the bound of one impact: "Before you save" and a change request's page say
how many scenarios were not resolved, and why."""

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse

from profiles.authoring.profiles import profile_update
from profiles.authoring.scenarios import scenarios_upsert
from profiles.import_export.imports import workspace_import
from profiles.safechange.change_requests import change_request_create
from profiles.workspace.permissions import EDITORS_GROUP
from tests.profiles.conftest import RELEASE_SCENARIOS, release_workspace
from tests.profiles.formdata import editor_form_data

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


def skipped_name(change_request) -> str:
    (name,) = [entry["scenario"] for entry in change_request.impact if entry.get("skipped")]
    return name


def fewer_items(user):
    return change_request_create(
        profile_key="profile-0",
        title="Fewer items",
        changes={"rules": {"layer-000": {"maxItems": 1}}},
        user=user,
    )


def test_change_request_page__skipped_scenario__one_row_offers_to_resolve_the_rest(client, dana):
    change_request = fewer_items(dana)
    more_url = reverse("change-request-impact-more", args=[change_request.pk]) + "?offset=2"

    html = client.get(reverse("change-request", args=[change_request.pk])).content.decode()

    assert "This change alters 2 of 3 scenarios (1 not resolved" in html
    assert "1 more scenario not resolved yet: one impact resolves at most 2." in html
    assert f'hx-get="{more_url}"' in html
    assert "Resolve the next 1<" in html
    # The skipped scenario has no row of its own: only the two resolved ones do.
    assert html.count('class="impact-changed"') + html.count('class="impact-same"') == 2
    assert f'<th scope="row">{skipped_name(change_request)}' not in html


def test_change_request_impact_more__resolves_the_skipped_scenario_as_the_stored_impact_would(
    client, dana, settings
):
    change_request = fewer_items(dana)
    url = reverse("change-request-impact-more", args=[change_request.pk]) + "?offset=2"

    fragment = client.get(url, headers={"HX-Request": "true"})

    html = fragment.content.decode()
    assert fragment.status_code == 200
    name = skipped_name(change_request)
    assert f'<th scope="row">{name}' in html  # the third saved scenario, now resolved
    assert "<html" not in html and "impact-more" not in html  # nothing is left after it
    # With a bound that covers every scenario, the stored impact agrees with that row.
    settings.IMPACT_MAX_RESOLUTIONS = 10
    whole = fewer_items(dana)
    stored = next(entry for entry in whole.impact if entry["scenario"] == name)
    row_class = "impact-changed" if stored["changed"] else "impact-same"
    assert f'<tr class="{row_class}">' in html


def test_change_request_impact_more__without_htmx__a_page_with_the_rows(client, dana):
    change_request = fewer_items(dana)
    url = reverse("change-request-impact-more", args=[change_request.pk]) + "?offset=2"

    page = client.get(url)

    html = page.content.decode()
    assert page.status_code == 200
    assert "<h1>More of the impact" in html
    assert f'<th scope="row">{skipped_name(change_request)}' in html


@pytest.mark.parametrize("offset", ["", "-1", "x", "²", "1" * 19])
def test_change_request_impact_more__bad_offset__400(client, dana, offset):
    change_request = fewer_items(dana)
    url = reverse("change-request-impact-more", args=[change_request.pk])

    assert client.get(url, {"offset": offset}).status_code == 400


def test_change_request_impact_more__stale_request__says_rebase_and_resolves_nothing(client, dana):
    change_request = fewer_items(dana)
    profile_update(key="profile-0", changes={"budget": 777}, replace=False, user=dana)
    url = reverse("change-request-impact-more", args=[change_request.pk]) + "?offset=2"

    html = client.get(url, headers={"HX-Request": "true"}).content.decode()

    assert "rebase the request to resolve them" in html
    assert f'<th scope="row">{skipped_name(change_request)}' not in html


def test_change_request_impact_more__throttled_in_the_impact_scope(client, dana, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "impact": "1/minute",
        },
    }
    change_request = fewer_items(dana)
    url = reverse("change-request-impact-more", args=[change_request.pk]) + "?offset=2"

    assert client.get(url).status_code == 200
    refused = client.get(url)

    assert refused.status_code == 429
    assert int(refused["Retry-After"]) >= 1

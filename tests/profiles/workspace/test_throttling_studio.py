"""The studio's resolution doors count on the API's per-user counters: 429 with Retry-After and
a message once a user's rate is used up, whichever door used it."""

import pytest
from django.contrib.auth.models import Group, User
from django.core.cache import cache
from django.urls import reverse
from rest_framework.test import APIClient

from profiles.authoring.scenarios import scenarios_upsert
from profiles.import_export.imports import workspace_import
from profiles.workspace.permissions import EDITORS_GROUP
from tests.profiles.conftest import API, RELEASE_SCENARIOS, api_key_for, release_workspace
from tests.profiles.formdata import editor_form_data

pytestmark = pytest.mark.django_db

EDITOR = "/profiles/profile-0/"
REQUEST = {"profile": "profile-0", "input": {"message": "refund", "customer_id": "C-1"}}


def forget_counts() -> None:
    cache.clear()


@pytest.fixture(autouse=True)
def fresh_counters():
    forget_counts()
    yield
    forget_counts()


@pytest.fixture
def rates(settings):
    def set_rates(**rates):
        settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}

    return set_rates


@pytest.fixture
def dana(db):
    workspace_import(document=release_workspace())
    scenarios_upsert(scenarios=RELEASE_SCENARIOS)
    user = User.objects.create_user("dana", password="dana-password-1")
    user.groups.add(Group.objects.get_or_create(name=EDITORS_GROUP)[0])
    return user


def api_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_key_for(user)}")
    return client


def test_preview__rate_used_through_the_api__studio_preview_429_with_retry_after(
    client, dana, rates
):
    # Given a preview rate of 3 a minute, of which the API used 3 for dana,
    client.force_login(dana)
    data = editor_form_data(client.get(EDITOR).content.decode())
    forget_counts()  # the page (a preview itself) was read to fill the form
    rates(preview="3/minute")
    api = api_client(dana)
    statuses = [
        api.post(API + "profiles/profile-0/preview", {}, format="json").status_code
        for _ in range(3)
    ]
    assert statuses == [200, 200, 200]

    # when the studio's preview asks for one more,
    response = client.post(EDITOR + "preview/", data, headers={"HX-Request": "true"})

    # then it is refused like the API's fourth would be, with a message for the preview.
    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1
    html = response.content.decode()
    assert 'role="alert"' in html and "Try again in" in html
    assert "<html" not in html  # a fragment for htmx
    assert api.post(API + "profiles/profile-0/preview", {}, format="json").status_code == 429


def test_preview__rate_used_in_the_studio__api_preview_429(client, dana, rates):
    client.force_login(dana)
    data = editor_form_data(client.get(EDITOR).content.decode())
    forget_counts()
    rates(preview="2/minute")
    for _ in range(2):
        assert client.post(EDITOR + "preview/", data).status_code == 200

    response = api_client(dana).post(API + "profiles/profile-0/preview", {}, format="json")

    assert response.status_code == 429
    assert response.json()["error"]["code"] == "THROTTLED"


def test_preview__other_user__has_their_own_count(client, dana, rates):
    rates(preview="1/minute")
    assert (
        api_client(dana).post(API + "profiles/profile-0/preview", {}, format="json").status_code
        == 200
    )
    other = User.objects.create_user("lee", password="lee-password-1")
    client.force_login(other)

    assert client.get(EDITOR).status_code == 200


@pytest.mark.parametrize(
    ("url", "extra"),
    [
        (EDITOR + "preview/rows/", {"layer": "layer-000"}),
        (EDITOR + "preview/cut/", {}),
        (EDITOR + "preview/handoff/", {}),
    ],
)
def test_preview_doors__rate_used_through_the_api__429(client, dana, rates, url, extra):
    client.force_login(dana)
    data = {**editor_form_data(client.get(EDITOR).content.decode()), **extra}
    forget_counts()
    rates(preview="1/minute")
    assert (
        api_client(dana).post(API + "profiles/profile-0/preview", {}, format="json").status_code
        == 200
    )

    response = client.post(url, data, headers={"HX-Request": "true"})

    assert response.status_code == 429
    assert "Retry-After" in response


def test_editor_page__rate_used__429_page_with_a_way_back(client, dana, rates):
    client.force_login(dana)
    rates(preview="1/minute")
    assert client.get(EDITOR).status_code == 200

    response = client.get(EDITOR)

    assert response.status_code == 429
    html = response.content.decode()
    assert "<h1>Too many requests</h1>" in html and "Try again in" in html


def test_save_impact__impact_rate_used_through_the_api__studio_429(client, dana, rates):
    client.force_login(dana)
    data = editor_form_data(client.get(EDITOR).content.decode())
    rates(impact="2/minute")
    api = api_client(dana)
    for _ in range(2):
        assert api.post(API + "profiles/profile-0/impact", {}, format="json").status_code == 200

    url = reverse("profile-save-impact", args=["profile-0"])
    response = client.post(url, data, headers={"HX-Request": "true"})

    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1
    # "Keep editing" resolves nothing: it is never refused.
    assert client.post(url, {**data, "dismiss": "1"}).status_code == 200


def test_compare__resolves_two_profiles__counts_two_resolutions(client, dana, rates):
    client.force_login(dana)
    rates(resolve="3/minute")
    api = api_client(dana)
    assert api.post(API + "resolve", REQUEST, format="json").status_code == 200
    compare = reverse("profile-compare") + "?a=profile-0&b=profile-0-staging"

    assert client.get(compare).status_code == 200  # 1 + 2 = 3
    assert client.get(compare).status_code == 429
    assert api.post(API + "resolve", REQUEST, format="json").status_code == 429

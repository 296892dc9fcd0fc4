"""Environments over the API, and protection: in an environment that requires change requests,
every direct write of a profile or its rules answers 409 CHANGE_REQUEST_REQUIRED and changes
nothing (Flagsmith #8367 was the API bypassing change requests)."""

import logging

import pytest

from profiles.models import Environment, Profile, ProfileVersion, Rule, WorkspaceVersion
from tests.profiles.conftest import API

pytestmark = pytest.mark.django_db

PRODUCTION = API + "profiles/profile-0"


@pytest.fixture
def protected(release):
    Environment.objects.create(key="production", requires_change_request=True, approvals=1)
    return release


def test_get__environment_used_by_a_profile__unprotected_by_default(release, reader_client):
    response = reader_client.get(API + "environments/production")

    assert response.status_code == 200
    assert response.json() == {
        "key": "production",
        "requiresChangeRequest": False,
        "approvals": 1,
    }


def test_get__environment_nobody_uses__404(release, reader_client):
    assert reader_client.get(API + "environments/nowhere").status_code == 404


def test_list__environments_of_profiles__by_key(release, reader_client):
    response = reader_client.get(API + "environments/")

    assert [entry["key"] for entry in response.json()["results"]] == ["production", "staging"]


def test_put__staff__protects_the_environment(release, staff_client):
    response = staff_client.put(
        API + "environments/production",
        {"key": "production", "requiresChangeRequest": True, "approvals": 2},
        format="json",
    )

    assert response.status_code == 200
    assert response.json() == {"key": "production", "requiresChangeRequest": True, "approvals": 2}
    row = Environment.objects.get(key="production")
    assert (row.requires_change_request, row.approvals) == (True, 2)


def test_put__new_environment_before_any_profile__configures_it(release, staff_client):
    response = staff_client.put(
        API + "environments/canary", {"requiresChangeRequest": True}, format="json"
    )

    assert response.status_code == 200
    assert response.json()["approvals"] == 1


def test_put__editor__403_and_unchanged(release, editor_client):
    response = editor_client.put(
        API + "environments/production", {"requiresChangeRequest": True}, format="json"
    )

    assert response.status_code == 403
    assert not Environment.objects.exists()


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"requiresChangeRequest": True, "approvals": 11}, "approvals"),
        ({"requiresChangeRequest": True, "approvals": "1"}, "approvals"),
        ({"requiresChangeRequest": "yes"}, "requiresChangeRequest"),
        ({"requiresChangeRequest": True, "colour": "red"}, "colour"),
    ],
)
def test_put__bad_body__400_naming_the_field(release, staff_client, body, path):
    response = staff_client.put(API + "environments/production", body, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["path"] == path
    assert not Environment.objects.exists()


DIRECT_WRITES = [
    ("patch", "profiles/profile-0", {"budget": 1}),
    ("put", "profiles/profile-0", {"consumer": "assistant", "objective": "objective-0",
                                   "environment": "production", "budget": 1}),
    ("delete", "profiles/profile-0", None),
    ("patch", "profiles/profile-0/rules/layer-000", {"maxItems": 1}),
    ("put", "profiles/profile-0/rules/layer-000", {"maxItems": 1}),
    ("delete", "profiles/profile-0/rules/layer-000", None),
    # Moving a profile into, or creating one in, the protected environment.
    ("patch", "profiles/profile-1", {"environment": "production"}),
    ("post", "profiles/", {"key": "new-one", "consumer": "reviewer", "objective": "x",
                           "environment": "production", "budget": 5}),
]  # fmt: skip


@pytest.mark.parametrize(("method", "url", "body"), DIRECT_WRITES)
def test_direct_write__protected_environment__409_and_nothing_changes(
    protected, editor_client, method, url, body
):
    etag = editor_client.get(PRODUCTION)["ETag"]
    token = WorkspaceVersion.current_token()
    count = ProfileVersion.objects.count()

    response = getattr(editor_client, method)(API + url, body, format="json")

    assert response.status_code == 409, response.content
    assert response.json()["error"]["code"] == "CHANGE_REQUEST_REQUIRED"
    assert response.json()["error"]["path"] == "environment"
    assert editor_client.get(PRODUCTION)["ETag"] == etag
    assert WorkspaceVersion.current_token() == token
    assert ProfileVersion.objects.count() == count
    assert not Profile.objects.filter(key="new-one").exists()


def test_restore__protected_environment__409_and_no_version(release, editor_client):
    editor_client.patch(PRODUCTION, {"budget": 5}, format="json")
    Environment.objects.create(key="production", requires_change_request=True)

    response = editor_client.post(PRODUCTION + "/versions/1/restore")

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "CHANGE_REQUEST_REQUIRED"
    assert Profile.objects.get(key="profile-0").budget == 5
    assert ProfileVersion.objects.filter(profile_key="profile-0").count() == 2


def test_import_job__changes_a_protected_profile__fails_with_change_request_required(
    protected, editor_client
):
    etag = editor_client.get(PRODUCTION)["ETag"]
    count = ProfileVersion.objects.count()
    document = {"profiles": [{"key": "profile-0", "consumer": "assistant",
                              "objective": "objective-0", "environment": "production",
                              "budget": 2}]}  # fmt: skip

    response = editor_client.post(API + "workspace", document, format="json")

    # The import is a job (the suite runs jobs at once): it fails, writing nothing.
    assert response.status_code == 202
    job = editor_client.get(response.json()["url"]).json()
    assert job["status"] == "failed"
    assert job["error"]["code"] == "CHANGE_REQUEST_REQUIRED"
    assert editor_client.get(PRODUCTION)["ETag"] == etag
    assert ProfileVersion.objects.count() == count


def test_direct_write__moving_a_profile_out_of_production__409(protected, editor_client):
    response = editor_client.patch(PRODUCTION, {"environment": "canary"}, format="json")

    assert response.status_code == 409
    assert Profile.objects.get(key="profile-0").environment == "production"


def test_direct_write__unprotected_staging__saved(protected, editor_client):
    response = editor_client.patch(
        API + "profiles/profile-0-staging/rules/layer-000", {"maxItems": 2}, format="json"
    )

    assert response.status_code == 200
    assert Rule.objects.get(profile__key="profile-0-staging", layer__key="layer-000").max_items == 2


def test_direct_write__staff_without_the_bypass_setting__409(protected, staff_client, settings):
    settings.SAFE_CHANGE_STAFF_BYPASS = False

    response = staff_client.patch(PRODUCTION, {"budget": 5}, format="json")

    assert response.status_code == 409


def test_direct_write__staff_with_the_bypass_setting__saved_flagged_and_logged(
    protected, staff_client, settings, caplog
):
    settings.SAFE_CHANGE_STAFF_BYPASS = True

    with caplog.at_level(logging.WARNING, logger="profiles.safechange"):
        response = staff_client.patch(PRODUCTION, {"budget": 5}, format="json")

    assert response.status_code == 200
    latest = ProfileVersion.objects.filter(profile_key="profile-0").order_by("-number").first()
    assert latest.protection_bypassed is True
    assert "protected write bypassed: staff wrote profile profile-0" in caplog.text


def test_direct_write__editor_with_the_bypass_setting__still_409(
    protected, editor_client, settings
):
    settings.SAFE_CHANGE_STAFF_BYPASS = True

    assert editor_client.patch(PRODUCTION, {"budget": 5}, format="json").status_code == 409


def test_protection_lifted__direct_write__saved(protected, staff_client, editor_client):
    staff_client.put(
        API + "environments/production", {"requiresChangeRequest": False}, format="json"
    )

    assert editor_client.patch(PRODUCTION, {"budget": 5}, format="json").status_code == 200

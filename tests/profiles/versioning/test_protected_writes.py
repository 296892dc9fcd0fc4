"""Protected environments on every door that is not the API: the studio (save, create, delete,
upload), the admin (change, add, delete, inline rules, simple-history revert, a layer's
cascade), the import command and the services themselves. Each refuses, writes nothing, and
the same door records a version when the environment is not protected."""

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from profiles.authoring.profiles import profile_create, profile_save_rules
from profiles.authoring.scenarios import scenarios_upsert
from profiles.import_export.documents import workspace_export
from profiles.import_export.imports import workspace_import
from profiles.models import (
    Environment,
    ImportJob,
    Layer,
    Profile,
    ProfileVersion,
    Rule,
    WorkspaceVersion,
)
from profiles.versioning.environments import ChangeRequestRequired
from tests.profiles.conftest import RELEASE_SCENARIOS, release_workspace
from tests.profiles.formdata import editor_form_data

pytestmark = pytest.mark.django_db

EDITOR = "/profiles/profile-0/"


@pytest.fixture
def release(db):
    workspace_import(document=release_workspace())
    scenarios_upsert(scenarios=RELEASE_SCENARIOS)


@pytest.fixture
def protected(release):
    Environment.objects.create(key="production", requires_change_request=True)


@pytest.fixture
def admin_client(client, db):
    client.force_login(User.objects.create_superuser("admin", "", "admin-pass-123"))
    return client


class Unchanged:
    """Snapshot of what a refused write must leave as it was."""

    def __init__(self):
        self.token = WorkspaceVersion.current_token()
        self.versions = ProfileVersion.objects.count()
        self.document = workspace_export()

    def check(self):
        assert WorkspaceVersion.current_token() == self.token
        assert ProfileVersion.objects.count() == self.versions
        assert workspace_export() == self.document


def versions_of(key: str) -> list[int]:
    return list(
        ProfileVersion.objects.filter(profile_key=key)
        .order_by("number")
        .values_list("number", flat=True)
    )


# --- studio --------------------------------------------------------------------------------


def studio_save(client, key="profile-0", **fields):
    data = editor_form_data(client.get(f"/profiles/{key}/").content.decode())
    data.update(fields)
    return client.post(f"/profiles/{key}/save/", data)


def test_studio_save__protected__409_with_the_reason_and_nothing_saved(protected, admin_client):
    unchanged = Unchanged()

    response = studio_save(admin_client, **{"layer-000-maxItems": "1"})

    assert response.status_code == 409
    assert "requires a change request" in response.content.decode()
    unchanged.check()


def test_studio_save__unprotected__one_version(release, admin_client):
    response = studio_save(admin_client, **{"layer-000-maxItems": "1", "budget": "500"})

    assert response.status_code == 302
    assert versions_of("profile-0") == [1, 2]
    latest = ProfileVersion.objects.get(profile_key="profile-0", number=2)
    assert latest.author.username == "admin"
    assert (latest.document["budget"], latest.document["rules"]["layer-000"]["maxItems"]) == (
        500,
        1,
    )


def test_studio_delete__protected__refused_and_kept(protected, admin_client):
    unchanged = Unchanged()

    response = admin_client.post(EDITOR + "delete/")

    assert response.status_code == 409
    assert "requires a change request" in response.content.decode()
    assert Profile.objects.filter(key="profile-0").exists()
    unchanged.check()


def test_studio_delete__unprotected__records_the_deletion(release, admin_client):
    admin_client.post("/profiles/profile-1/delete/")

    assert not Profile.objects.filter(key="profile-1").exists()
    assert ProfileVersion.objects.get(profile_key="profile-1", number=2).document is None


def test_studio_create__in_protected_environment__error_on_environment(protected, admin_client):
    response = admin_client.post(
        "/profiles/_new/",
        {
            "key": "new-one",
            "name": "",
            "consumer": Profile.objects.get(key="profile-1").consumer_id,
            "objective": "new-objective",
            "environment": "production",
            "budget": "100",
        },
    )

    assert response.status_code == 400
    assert "requires a change request" in response.content.decode()
    assert not Profile.objects.filter(key="new-one").exists()
    assert not ProfileVersion.objects.filter(profile_key="new-one").exists()


def test_studio_upload__changes_a_protected_profile__job_fails_and_nothing_imported(
    protected, admin_client
):
    unchanged = Unchanged()
    text = (
        "profiles:\n  - key: profile-0\n    consumer: assistant\n    objective: objective-0\n"
        "    environment: production\n    budget: 3\n"
    )
    upload = SimpleUploadedFile("workspace.yaml", text.encode(), "application/yaml")

    response = admin_client.post(
        "/workspace/upload/", {"file": upload, "mode": "merge"}, follow=True
    )

    # The upload is a background job (the suite runs jobs at once); its page says why.
    assert "requires a change request" in response.content.decode()
    assert ImportJob.objects.get().status == "failed"
    unchanged.check()


# --- admin ---------------------------------------------------------------------------------


def admin_change_url(model: str, pk: int) -> str:
    return f"/admin/profiles/{model}/{pk}/change/"


def test_admin_profile__protected__shown_read_only_and_post_refused(protected, admin_client):
    profile = Profile.objects.get(key="profile-0")
    unchanged = Unchanged()

    page = admin_client.get(admin_change_url("profile", profile.pk))
    response = admin_client.post(
        admin_change_url("profile", profile.pk),
        {"key": "profile-0", "consumer": profile.consumer_id, "objective": "objective-0",
         "environment": "production", "budget": "5", "rules-TOTAL_FORMS": "0",
         "rules-INITIAL_FORMS": "0"},
    )  # fmt: skip

    assert page.status_code == 200
    assert 'name="budget"' not in page.content.decode()  # read-only: no input
    assert response.status_code == 403
    unchanged.check()


def test_admin_profile__unprotected_budget_change__one_version(release, admin_client):
    profile = Profile.objects.get(key="profile-1")
    page = admin_client.get(admin_change_url("profile", profile.pk)).content.decode()
    data = editor_form_data_admin(page)
    data["budget"] = "321"

    response = admin_client.post(admin_change_url("profile", profile.pk), data)

    assert response.status_code == 302, response.content.decode()[:2000]
    assert versions_of("profile-1") == [1, 2]
    assert ProfileVersion.objects.get(profile_key="profile-1", number=2).document["budget"] == 321


def test_admin_profile__add_in_protected_environment__refused(protected, admin_client):
    consumer = Profile.objects.get(key="profile-1").consumer_id

    response = admin_client.post(
        "/admin/profiles/profile/add/",
        {"key": "new-one", "consumer": consumer, "objective": "x", "environment": "production",
         "budget": "5", "rules-TOTAL_FORMS": "0", "rules-INITIAL_FORMS": "0"},
        follow=True,
    )  # fmt: skip

    assert "requires a change request" in response.content.decode()
    assert not Profile.objects.filter(key="new-one").exists()


def test_admin_profile__delete_protected__403(protected, admin_client):
    profile = Profile.objects.get(key="profile-0")

    response = admin_client.post(f"/admin/profiles/profile/{profile.pk}/delete/", {"post": "yes"})

    assert response.status_code == 403
    assert Profile.objects.filter(key="profile-0").exists()


def test_admin_rule__protected__post_refused(protected, admin_client):
    rule = Rule.objects.get(profile__key="profile-0", layer__key="layer-000")
    unchanged = Unchanged()

    response = admin_client.post(
        admin_change_url("rule", rule.pk),
        {"profile": rule.profile_id, "layer": rule.layer_id, "max_items": "1"},
    )

    assert response.status_code == 403
    unchanged.check()


def test_admin_rule__add_to_protected_profile__refused_with_message(protected, admin_client):
    profile = Profile.objects.get(key="profile-0")
    layer = Layer.objects.get(key="layer-001")
    unchanged = Unchanged()

    response = admin_client.post(
        "/admin/profiles/rule/add/",
        {"profile": profile.pk, "layer": layer.pk, "max_items": "1"},
        follow=True,
    )

    assert "requires a change request" in response.content.decode()
    assert not Rule.objects.filter(profile=profile, layer=layer).exists()
    unchanged.check()


def test_admin_history_revert__protected_profile__refused(protected, admin_client):
    profile = Profile.objects.get(key="profile-0")
    history_id = profile.history.first().history_id
    unchanged = Unchanged()

    response = admin_client.post(
        f"/admin/profiles/profile/{profile.pk}/history/{history_id}/",
        {"key": "profile-0", "consumer": profile.consumer_id, "objective": "objective-0",
         "environment": "production", "budget": "9"},
        follow=True,
    )  # fmt: skip

    assert "Nothing was reverted" in response.content.decode()
    unchanged.check()


def test_admin_layer_delete__cascading_to_a_protected_profile_rule__403(protected, admin_client):
    layer = Layer.objects.get(key="layer-000")
    unchanged = Unchanged()

    response = admin_client.post(f"/admin/profiles/layer/{layer.pk}/delete/", {"post": "yes"})

    assert response.status_code == 403  # the admin may not delete the protected rule
    assert Layer.objects.filter(key="layer-000").exists()
    unchanged.check()


# --- import command and services -----------------------------------------------------------


def test_import_command__changes_a_protected_profile__error_and_nothing_imported(
    protected, tmp_path
):
    path = tmp_path / "workspace.yaml"
    path.write_text(
        "profiles:\n  - key: profile-0\n    consumer: assistant\n    objective: objective-0\n"
        "    environment: production\n    budget: 3\n",
        encoding="utf-8",
    )
    unchanged = Unchanged()

    with pytest.raises(CommandError, match="requires a change request"):
        call_command("import_workspace", str(path), stdout=StringIO())

    unchanged.check()


def test_import__replace_deleting_a_protected_profile__refused(protected):
    document = release_workspace()
    document["profiles"] = [entry for entry in document["profiles"] if entry["key"] != "profile-0"]

    with pytest.raises(ChangeRequestRequired):
        workspace_import(document=document, mode="replace")

    assert Profile.objects.filter(key="profile-0").exists()


def test_import__same_file_again__no_new_versions(protected):
    workspace_import(document=release_workspace())

    assert ProfileVersion.objects.count() == 3


def test_services__rules_and_create__refused_in_protected_environment(protected):
    with pytest.raises(ChangeRequestRequired):
        profile_save_rules(profile="profile-0", rules={"layer-000": {"maxItems": 1}})
    with pytest.raises(ChangeRequestRequired):
        profile_create(
            document={
                "key": "new-one",
                "consumer": "reviewer",
                "objective": "x",
                "environment": "production",
                "budget": 5,
            }
        )

    assert Rule.objects.get(profile__key="profile-0", layer__key="layer-000").max_items == 3
    assert not Profile.objects.filter(key="new-one").exists()


# --- helpers -------------------------------------------------------------------------------


def editor_form_data_admin(html: str) -> dict:
    """Read the admin's change form (id profile_form) as a browser would submit it."""
    from tests.profiles.formdata import _FormReader

    reader = _FormReader("profile_form")
    reader.feed(html)
    return {name: value for name, value in reader.data.items() if value is not None}

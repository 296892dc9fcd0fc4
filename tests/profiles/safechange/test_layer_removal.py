"""Deleting a layer that profiles use (issue 38 item 18): its rules removed and the layer
deleted in one transaction, or, where protection asks for one, one change request holding the
rule removals and the deletion."""

import pytest

from profiles.import_export.documents import workspace_export
from profiles.import_export.imports import workspace_import
from profiles.models import Activity, ChangeRequest, Environment, Item, Layer, ProfileVersion
from profiles.safechange.change_requests import change_request_apply
from profiles.safechange.layer_removal import (
    layer_delete_removing_rules,
    layer_rule_users_list,
)
from profiles.versioning.environments import ChangeRequestRequired
from profiles.workspace.concurrency import PreconditionFailed, layer_etag
from profiles.workspace.origin import STUDIO
from profiles.workspace.permissions import ROLE_CAPABILITIES, WRITE_RULES, Role
from tests.profiles.conftest import small_workspace
from tests.profiles.safechange.test_change_sets import approve, editor_named, versions

pytestmark = pytest.mark.django_db


class Unchanged:
    """What a refused removal leaves as it was: rows, versions, activity."""

    def __init__(self):
        self.document = workspace_export()
        self.versions = ProfileVersion.objects.count()
        self.activity = Activity.objects.count()

    def check(self):
        assert workspace_export() == self.document
        assert ProfileVersion.objects.count() == self.versions
        assert Activity.objects.count() == self.activity


@pytest.fixture
def author(db):
    return editor_named("author")


@pytest.fixture
def unprotected(db):
    workspace_import(document=small_workspace())


@pytest.fixture
def production(db):
    """profile-0 in production (protected); profile-1 in no environment."""
    document = small_workspace()
    document["profiles"][0]["environment"] = "production"
    workspace_import(document=document)
    Environment.objects.create(key="production", requires_change_request=True)


def test_users__layer_with_rules__each_profile_its_environment_and_protection(production):
    users = layer_rule_users_list(key="layer-000")

    assert [(u.key, u.environment, u.protected) for u in users] == [
        ("profile-0", "production", True),
        ("profile-1", None, False),
    ]
    assert layer_rule_users_list(key="layer-001") == []


def test_remove__two_unprotected_profiles__rules_removed_layer_gone_versions_and_activity(
    unprotected, author
):
    # Given layer-000, with a rule in profile-0 and profile-1
    before = {key: versions(key) for key in ("profile-0", "profile-1")}
    layer = Layer.objects.get(key="layer-000")

    # When its rules are removed and it is deleted
    removal = layer_delete_removing_rules(
        key="layer-000",
        user=author,
        origin=STUDIO,
        if_match=layer_etag(layer),
        profiles=["profile-0", "profile-1"],
    )

    # Then both rules are gone, the layer and its items too, one new version per profile
    assert removal.applied and removal.profiles == ["profile-0", "profile-1"]
    assert not Layer.objects.filter(key="layer-000").exists()
    assert not Item.objects.filter(layer_id=layer.pk).exists()
    profiles = {p["key"]: p for p in workspace_export()["profiles"]}
    for key in ("profile-0", "profile-1"):
        assert "layer-000" not in (profiles[key].get("rules") or {})
        assert versions(key) == [*before[key], before[key][-1] + 1]
        latest = ProfileVersion.objects.get(profile_key=key, number=versions(key)[-1])
        assert latest.author == author
    logged = {(row.kind, row.key, row.op, row.origin) for row in Activity.objects.all()}
    assert {
        ("profile", "profile-0", "update", "studio"),
        ("profile", "profile-1", "update", "studio"),
        ("layer", "layer-000", "delete", "studio"),
        ("item", "layer-000", "delete", "studio"),
    } <= logged


def test_remove__stale_etag__precondition_failed_and_nothing_changed(unprotected, author):
    unchanged = Unchanged()

    with pytest.raises(PreconditionFailed):
        layer_delete_removing_rules(key="layer-000", user=author, if_match='"stale"')

    unchanged.check()


def test_remove__profiles_shown_are_no_longer_those__precondition_failed_nothing_changed(
    unprotected, author
):
    # The page showed only profile-0; profile-1 has a rule for the layer too (since then)
    unchanged = Unchanged()

    with pytest.raises(PreconditionFailed):
        layer_delete_removing_rules(key="layer-000", user=author, profiles=["profile-0"])

    unchanged.check()


def test_remove__protected_profile_without_proposal__change_request_required_nothing_written(
    production, author
):
    unchanged = Unchanged()

    with pytest.raises(ChangeRequestRequired) as caught:
        layer_delete_removing_rules(key="layer-000", user=author)

    assert "profile-0" in caught.value.profiles
    unchanged.check()
    assert not ChangeRequest.objects.exists()


def test_remove__protected_profile__change_request_with_removals_and_deletion_then_applied(
    production, author
):
    # Given layer-000, with a rule in profile-0 (production, protected) and profile-1
    unchanged = Unchanged()

    # When its rules are removed and it is deleted, with a proposal
    removal = layer_delete_removing_rules(
        key="layer-000", user=author, origin=STUDIO, proposal={"description": "Retired."}
    )

    # Then a change request holds the two rule removals and the deletion; nothing is written
    change_request = removal.change_request
    assert not removal.applied and removal.profiles == ["profile-0", "profile-1"]
    assert change_request.title == "Delete layer layer-000 and its rule in 2 profiles"
    assert change_request.description == "Retired."
    assert [
        (c["kind"], c["op"], c["key"], c.get("value")) for c in change_request.entity_changes
    ] == [
        ("profile", "update", "profile-0", {"rules": {"layer-000": None}}),
        ("profile", "update", "profile-1", {"rules": {"layer-000": None}}),
        ("layer", "delete", "layer-000", None),
    ]
    assert "profile-0" in change_request.affected_profiles
    unchanged.check()

    # When another editor approves it and it is applied
    approver = editor_named("approver")
    approve(change_request, approver)
    change_request_apply(pk=change_request.pk, user=approver)

    # Then the rules are gone and the layer too, recorded under the request
    assert not Layer.objects.filter(key="layer-000").exists()
    profiles = {p["key"]: p for p in workspace_export()["profiles"]}
    assert all("layer-000" not in (p.get("rules") or {}) for p in profiles.values())
    logged = {
        (row.kind, row.key, row.op)
        for row in Activity.objects.filter(change_request=change_request)
    }
    assert {
        ("profile", "profile-0", "update"),
        ("profile", "profile-1", "update"),
        ("layer", "layer-000", "delete"),
    } <= logged


# --- the API's door: DELETE /api/v1/layers/<key>?removeRules=true, the same service ---------


def test_api_delete_remove_rules__unprotected__204_rules_removed_layer_gone(
    unprotected, editor_client
):
    response = editor_client.delete("/api/v1/layers/layer-000?removeRules=true")

    assert response.status_code == 204
    assert not Layer.objects.filter(key="layer-000").exists()
    profiles = workspace_export()["profiles"]
    assert all("layer-000" not in (p.get("rules") or {}) for p in profiles)
    assert Activity.objects.filter(kind="profile", op="update", origin="api").count() == 2


def test_api_delete__without_remove_rules__409_as_before(unprotected, editor_client):
    unchanged = Unchanged()

    response = editor_client.delete("/api/v1/layers/layer-000")

    assert response.status_code == 409
    unchanged.check()


def test_api_delete_remove_rules__protected_profile__409_change_request_required(
    production, editor_client
):
    unchanged = Unchanged()

    response = editor_client.delete("/api/v1/layers/layer-000?removeRules=true")

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "CHANGE_REQUEST_REQUIRED"
    unchanged.check()
    assert not ChangeRequest.objects.exists()


def test_api_delete_remove_rules__stale_if_match__412_nothing_changed(unprotected, editor_client):
    unchanged = Unchanged()

    response = editor_client.delete(
        "/api/v1/layers/layer-000?removeRules=true", HTTP_IF_MATCH='"stale"'
    )

    assert response.status_code == 412
    unchanged.check()


def test_remove_rules__without_write_rules__api_403_and_studio_offers_nothing(
    unprotected, editor_client, client, monkeypatch
):
    # Given editors who may write material but not rules
    monkeypatch.setitem(
        ROLE_CAPABILITIES, Role.EDITOR, ROLE_CAPABILITIES[Role.EDITOR] - {WRITE_RULES}
    )
    author = editor_named("author")
    client.force_login(author)
    unchanged = Unchanged()

    api = editor_client.delete("/api/v1/layers/layer-000?removeRules=true")
    page = client.get("/layers/layer-000/delete/").content.decode()
    posted = client.post("/layers/layer-000/delete/", {"remove_rules": "1"})

    assert api.status_code == 403 and api.json()["error"]["path"] == "removeRules"
    assert "Remove its rules and delete" not in page and "profile-1" in page
    assert posted.status_code == 403
    unchanged.check()

"""What a protected answer depends on beyond its profile: a layer's conditions, a new layer, a
consumer's render settings and the items of governed layers. Each write is refused with
``409 CHANGE_REQUEST_REQUIRED`` naming the protected profiles it affects, at every door (API,
studio, admin, import, CLI), and writes nothing; the same write goes through when no protected
profile reads what it changes. Every write that goes through is in the activity log once, with
its door.

The release workspace: ``profile-0`` is in production (protected) and reads ``layer-000`` and
``layer-002`` on its own rules and ``layer-001`` (customer-scoped by ``itemFilter``) on the
default rule; ``profile-0-staging`` and ``profile-1`` are not protected.
"""

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from profiles.authoring.profiles import profile_save_rules
from profiles.authoring.scenarios import scenarios_upsert
from profiles.import_export.documents import workspace_export
from profiles.import_export.imports import workspace_import
from profiles.material.items import item_update
from profiles.material.layers import layer_create, layer_update
from profiles.models import Activity, Environment, Item, Layer, ProfileVersion, WorkspaceVersion
from profiles.versioning.environments import ChangeRequestRequired
from profiles.versioning.protection import GovernedByStaff, profile_reads
from tests.profiles.conftest import RELEASE_SCENARIOS, release_workspace

pytestmark = pytest.mark.django_db


@pytest.fixture
def release(db):
    workspace_import(document=release_workspace())
    scenarios_upsert(scenarios=RELEASE_SCENARIOS)
    Activity.objects.all().delete()  # the set-up's own entries (an import's): tests read theirs


@pytest.fixture
def protected(release):
    Environment.objects.create(key="production", requires_change_request=True)


@pytest.fixture
def admin_client(db):
    from django.test import Client

    client = Client()  # its own session, beside the editor's
    client.force_login(User.objects.create_superuser("admin", "", "admin-pass-123"))
    return client


@pytest.fixture
def editor_session(client, editor):
    client.force_login(editor)
    return client


class Unchanged:
    """What a refused write must leave as it was: rows, versions, activity."""

    def __init__(self):
        self.token = WorkspaceVersion.current_token()
        self.versions = ProfileVersion.objects.count()
        self.activity = Activity.objects.count()
        self.document = workspace_export()

    def check(self):
        assert WorkspaceVersion.current_token() == self.token
        assert ProfileVersion.objects.count() == self.versions
        assert Activity.objects.count() == self.activity
        assert workspace_export() == self.document


def refused(response, profiles=("profile-0",)):
    assert response.status_code == 409, response.content
    error = response.json()["error"]
    assert error["code"] == "CHANGE_REQUEST_REQUIRED"
    assert error["profiles"] == list(profiles)
    return error


# --- the rule --------------------------------------------------------------------------------


def test_profile_reads__default_rule_applicable_layer__reads():
    profile = {"key": "p", "consumer": "c", "objective": "o", "rules": {}}

    assert profile_reads(profile, {"key": "kb"})
    assert profile_reads(profile, {"key": "kb", "appliesTo": {"objectives": ["o", "x"]}})
    assert not profile_reads(profile, {"key": "kb", "appliesTo": {"objectives": ["x"]}})
    assert not profile_reads(profile, {"key": "kb", "appliesTo": {"consumers": ["other"]}})
    excluded = {**profile, "rules": {"kb": {"participation": "exclude"}}}
    assert not profile_reads(excluded, {"key": "kb"})


# --- API ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes, path",
    [
        ({"itemFilter": None}, "itemFilter"),
        ({"appliesTo": {"objectives": ["objective-1"]}}, "appliesTo"),
        ({"requiresInput": ["customer_id"]}, "requiresInput"),
        ({"availability": "unavailable"}, "availability"),
        ({"name": "Everybody's tickets"}, "name"),
    ],
)
def test_api_layer_patch__answer_field_of_a_layer_protected_profiles_read__409(
    protected, editor_client, changes, path
):
    unchanged = Unchanged()

    response = editor_client.patch("/api/v1/layers/layer-001", changes, format="json")

    error = refused(response)
    assert error["path"] == path
    unchanged.check()


def test_api_layer_patch__removing_item_filter_unprotected__200_and_logged(release, editor_client):
    response = editor_client.patch("/api/v1/layers/layer-001", {"itemFilter": None}, format="json")

    assert response.status_code == 200
    entry = Activity.objects.get(kind="layer", key="layer-001")
    assert (entry.origin, entry.op, entry.actor_name) == ("api", "update", "editor")
    assert entry.fields == [
        {"path": "itemFilter", "from": {"customer_id": "customer_id"}, "to": None}
    ]


def test_api_layer_patch__description_only__200(protected, editor_client):
    response = editor_client.patch(
        "/api/v1/layers/layer-001", {"description": "Customer tickets."}, format="json"
    )

    assert response.status_code == 200


def test_api_layer_patch__layer_the_protected_profile_excludes__200(release, editor_client):
    profile_save_rules(profile="profile-0", rules={"layer-001": {"participation": "exclude"}})
    Environment.objects.create(key="production", requires_change_request=True)

    response = editor_client.patch("/api/v1/layers/layer-001", {"itemFilter": None}, format="json")

    assert response.status_code == 200


def test_api_layer_create__protected_profile_would_read_it__409(protected, editor_client):
    unchanged = Unchanged()

    response = editor_client.post(
        "/api/v1/layers/",
        {"key": "release-notes", "items": [{"path": "a", "body": "Refunds are instant."}]},
        format="json",
    )

    refused(response)
    assert not Layer.objects.filter(key="release-notes").exists()
    unchanged.check()


def test_api_layer_create__out_of_the_protected_profiles_scope__201(protected, editor_client):
    response = editor_client.post(
        "/api/v1/layers/",
        {"key": "release-notes", "appliesTo": {"objectives": ["objective-1"]}},
        format="json",
    )

    assert response.status_code == 201
    assert Activity.objects.filter(kind="layer", key="release-notes", op="create").count() == 1


def test_api_layer_delete__read_by_a_protected_profile__409(protected, editor_client):
    unchanged = Unchanged()

    refused(editor_client.delete("/api/v1/layers/layer-001"))

    unchanged.check()


def test_api_consumer_patch__render_of_a_protected_profiles_consumer__409(protected, editor_client):
    unchanged = Unchanged()

    response = editor_client.patch(
        "/api/v1/consumers/assistant", {"render": {"format": "xml"}}, format="json"
    )

    error = refused(response)
    assert error["path"] == "render"
    unchanged.check()


def test_api_consumer_patch__name_only_or_unprotected_consumer__200(protected, editor_client):
    assert (
        editor_client.patch(
            "/api/v1/consumers/assistant", {"name": "The assistant"}, format="json"
        ).status_code
        == 200
    )
    # "reviewer" renders profile-1 only, which is not protected.
    response = editor_client.patch(
        "/api/v1/consumers/reviewer", {"render": {"format": "markdown"}}, format="json"
    )
    assert response.status_code == 200


# --- governed layers ---------------------------------------------------------------------------


def test_api_governed__editor_sets_it__403_and_unchanged(protected, editor_client):
    response = editor_client.patch("/api/v1/layers/layer-000", {"governed": True}, format="json")

    assert response.status_code == 403
    assert response.json()["error"]["path"] == "governed"
    assert not Layer.objects.get(key="layer-000").governed


def test_api_governed__staff_sets_it__200_shown_and_logged(protected, staff_client):
    response = staff_client.patch("/api/v1/layers/layer-000", {"governed": True}, format="json")

    assert response.status_code == 200
    assert response.json()["governed"] is True
    assert staff_client.get("/api/v1/layers/layer-000").json()["governed"] is True
    entry = Activity.objects.get(kind="layer", key="layer-000")
    assert {"path": "governed", "from": False, "to": True} in entry.fields


def test_api_item_writes__governed_layer_read_by_protected_profile__409_each(
    protected, editor_client
):
    Layer.objects.filter(key="layer-000").update(governed=True)
    unchanged = Unchanged()
    path = "docs/item-0000.md"

    refused(
        editor_client.post(
            "/api/v1/layers/layer-000/items/", {"path": "new.md", "body": "x"}, format="json"
        )
    )
    refused(
        editor_client.patch(
            f"/api/v1/layers/layer-000/items/{path}", {"body": "Refunds: never."}, format="json"
        )
    )
    refused(editor_client.delete(f"/api/v1/layers/layer-000/items/{path}"))

    unchanged.check()


def test_api_item_writes__ungoverned_layer__write_directly(protected, editor_client):
    response = editor_client.post(
        "/api/v1/layers/layer-001/items/",
        {"path": "T-9", "body": "A new ticket.", "metadata": {"customer_id": "C-1"}},
        format="json",
    )

    assert response.status_code == 201
    entry = Activity.objects.get(kind="item", key="layer-001", path="T-9")
    assert (entry.op, entry.origin) == ("create", "api")


def test_api_item_write__governed_layer_no_protected_reader__201(release, editor_client):
    Layer.objects.filter(key="layer-000").update(governed=True)  # nothing is protected

    response = editor_client.post(
        "/api/v1/layers/layer-000/items/", {"path": "new.md", "body": "x"}, format="json"
    )

    assert response.status_code == 201


def test_services__governed_flag_by_non_staff__refused(protected, editor_client):
    editor = User.objects.get(username="editor")

    with pytest.raises(GovernedByStaff):
        layer_update(key="layer-000", changes={}, governed=True, user=editor)
    with pytest.raises(GovernedByStaff):
        layer_create(document={"key": "x", "appliesTo": {"objectives": ["o"]}}, governed=True,
                     user=editor)  # fmt: skip


def test_services__governed_item_update__refused_and_unchanged(protected):
    Layer.objects.filter(key="layer-000").update(governed=True)
    unchanged = Unchanged()

    with pytest.raises(ChangeRequestRequired) as caught:
        item_update(layer="layer-000", path="docs/item-0000.md", changes={"body": "changed"})

    assert caught.value.profiles == ["profile-0"]
    unchanged.check()


# --- studio ------------------------------------------------------------------------------------


def layer_form(key: str, **fields) -> dict:
    data = {
        "key": key,
        "name": "",
        "description": "",
        "availability": "auto",
        "objectives": "",
        "consumers": "",
        "requires_input_text": "",
        "item_filter_text": "",
        "etag": "",
    }
    data.update(fields)
    return data


def test_studio_layer_edit__item_filter_removed__refused_names_profile_and_offers_propose(
    protected, editor_session
):
    unchanged = Unchanged()

    response = editor_session.post(
        "/layers/layer-001/", layer_form("layer-001", name="Layer 1", item_filter_text="")
    )

    page = response.content.decode()
    assert response.status_code == 400
    assert "requires a change request" in page
    assert "profile-0" in page
    unchanged.check()


def test_studio_layer_create__protected_reader__refused(protected, editor_session):
    unchanged = Unchanged()

    response = editor_session.post("/layers/_new/", layer_form("release-notes"))

    assert response.status_code == 400
    assert "requires a change request" in response.content.decode()
    unchanged.check()


def test_studio_item_create__governed_layer__refused(protected, editor_session):
    Layer.objects.filter(key="layer-000").update(governed=True)
    unchanged = Unchanged()

    response = editor_session.post(
        "/layers/layer-000/items/_new/",
        {"path": "new.md", "title": "", "body": "x", "metadata_text": "{}"},
    )

    assert response.status_code == 400
    assert "requires a change request" in response.content.decode()
    unchanged.check()


def test_studio_layer_form__governed_box_only_for_staff(protected, editor_session, admin_client):
    assert 'name="governed"' not in editor_session.get("/layers/layer-000/").content.decode()
    assert 'name="governed"' in admin_client.get("/layers/layer-000/").content.decode()


def test_studio_layer_edit__editor_posts_governed__ignored(protected, editor_session):
    editor_session.post(
        "/layers/layer-000/", layer_form("layer-000", name="Layer 0", governed="on")
    )

    assert not Layer.objects.get(key="layer-000").governed


# --- admin -------------------------------------------------------------------------------------


def test_admin_layer_change__item_filter_removed__nothing_saved(protected, admin_client):
    layer = Layer.objects.get(key="layer-001")
    unchanged = Unchanged()

    response = admin_client.post(
        f"/admin/profiles/layer/{layer.pk}/change/",
        {"key": "layer-001", "name": "Layer 1", "description": "", "availability": "auto",
         "applies_to_objectives": "[]", "applies_to_consumers": "[]", "requires_input": "[]",
         "item_filter": "{}"},
        follow=True,
    )  # fmt: skip

    assert "Nothing was saved" in response.content.decode()
    assert "requires a change request" in response.content.decode()
    unchanged.check()


def test_admin_item_change__governed_layer__nothing_saved(protected, admin_client):
    Layer.objects.filter(key="layer-000").update(governed=True)
    item = Item.objects.get(layer__key="layer-000", path="docs/item-0000.md")
    unchanged = Unchanged()

    response = admin_client.post(
        f"/admin/profiles/item/{item.pk}/change/",
        {"layer": item.layer_id, "path": item.path, "title": item.title, "body": "changed",
         "metadata": "{}"},
        follow=True,
    )  # fmt: skip

    assert "Nothing was saved" in response.content.decode()
    unchanged.check()


def test_admin_layer_delete__read_by_protected_profile__nothing_deleted(protected, admin_client):
    layer = Layer.objects.get(key="layer-001")
    unchanged = Unchanged()

    response = admin_client.post(
        f"/admin/profiles/layer/{layer.pk}/delete/", {"post": "yes"}, follow=True
    )

    assert "Nothing was deleted" in response.content.decode()
    unchanged.check()


# --- import and CLI ----------------------------------------------------------------------------


def test_import__file_removes_the_item_filter__refused_naming_profile(protected):
    document = release_workspace()
    document["layers"][1].pop("itemFilter")
    unchanged = Unchanged()

    with pytest.raises(ChangeRequestRequired) as caught:
        workspace_import(document=document)

    assert caught.value.profiles == ["profile-0"]
    unchanged.check()


def test_import__new_layer_the_protected_profile_excludes__imported_and_logged(protected):
    document = {
        "layers": [{"key": "release-notes", "items": [{"path": "a", "body": "x"}]}],
    }
    # Excluding it in profile-0 is a change of the protected profile itself: refused too.
    with pytest.raises(ChangeRequestRequired):
        workspace_import(document=document)

    document["layers"][0]["appliesTo"] = {"objectives": ["objective-1"]}
    workspace_import(document=document)

    origins = set(Activity.objects.filter(key="release-notes").values_list("kind", "op", "origin"))
    assert origins == {("layer", "create", "import"), ("item", "create", "import")}


def test_import_command__file_changes_a_layer_condition__error_and_nothing_imported(
    protected, tmp_path
):
    path = tmp_path / "workspace.yaml"
    path.write_text("layers:\n  - key: layer-001\n    name: Layer 1\n", encoding="utf-8")
    unchanged = Unchanged()

    with pytest.raises(CommandError, match="requires a change request"):
        call_command("import_workspace", str(path), stdout=StringIO())

    unchanged.check()


# --- the activity log names every door once ------------------------------------------------------


def test_activity__studio_admin_api_writes__one_entry_each_with_its_door(
    release, editor_session, admin_client, editor_client
):
    editor_client.patch("/api/v1/layers/layer-002", {"description": "via API"}, format="json")
    editor_session.post("/layers/layer-002/", layer_form("layer-002", name="Layer 2 (studio)"))
    layer = Layer.objects.get(key="layer-002")
    admin_client.post(
        f"/admin/profiles/layer/{layer.pk}/change/",
        {"key": "layer-002", "name": "Layer 2 (admin)", "description": "", "availability": "auto",
         "applies_to_objectives": "[]", "applies_to_consumers": "[]", "requires_input": "[]",
         "item_filter": "{}"},
    )  # fmt: skip
    editor_client.patch(
        "/api/v1/profiles/profile-1/rules/layer-002", {"maxItems": 1}, format="json"
    )

    entries = list(
        Activity.objects.order_by("id").values_list("kind", "key", "origin", "actor_name")
    )
    assert entries == [
        ("layer", "layer-002", "api", "editor"),
        ("layer", "layer-002", "studio", "editor"),
        ("layer", "layer-002", "admin", "admin"),
        ("profile", "profile-1", "api", "editor"),
    ]


def test_studio_new_layer_page__protected_profiles__says_so_before_anyone_types(
    protected, editor_session
):
    page = editor_session.get("/layers/_new/").content.decode()

    assert "Protected profiles (profile-0) read a new layer" in page


def test_studio_new_layer_page__nothing_protected__no_warning(release, editor_session):
    assert "Protected profiles" not in editor_session.get("/layers/_new/").content.decode()


# --- "Propose change" where the studio refused -----------------------------------------------


def test_studio_layer_create__propose_with_exclude__one_change_set_nothing_written(
    protected, editor_session
):
    from profiles.models import ChangeRequest

    unchanged = Unchanged()
    refused_page = editor_session.post("/layers/_new/", layer_form("release-notes"))
    assert 'name="proposal_read_profile-0"' in refused_page.content.decode()

    response = editor_session.post(
        "/layers/_new/",
        layer_form(
            "release-notes",
            propose="1",
            proposal_title="Release notes, not in production",
            **{"proposal_read_profile-0": "exclude"},
        ),
    )

    change_request = ChangeRequest.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/changes/{change_request.pk}/"
    assert change_request.title == "Release notes, not in production"
    assert [(c["kind"], c["op"], c.get("key")) for c in change_request.entity_changes] == [
        ("layer", "create", "release-notes"),
        ("profile", "update", "profile-0"),
    ]
    assert change_request.entity_changes[1]["value"] == {
        "rules": {"release-notes": {"participation": "exclude"}}
    }
    assert not Layer.objects.filter(key="release-notes").exists()
    unchanged.check()


def test_studio_layer_create__propose_including__no_exclude_rule(protected, editor_session):
    from profiles.models import ChangeRequest

    editor_session.post(
        "/layers/_new/",
        layer_form("release-notes", propose="1", **{"proposal_read_profile-0": "include"}),
    )

    kinds = [c["kind"] for c in ChangeRequest.objects.get().entity_changes]
    assert kinds == ["layer"]


def test_studio_governed_item_edit__propose__change_set_of_that_item(protected, editor_session):
    from profiles.models import ChangeRequest

    Layer.objects.filter(key="layer-000").update(governed=True)
    item = Item.objects.get(layer__key="layer-000", path="docs/item-0000.md")

    editor_session.post(
        f"/layers/layer-000/items/{item.pk}/",
        {"path": item.path, "title": item.title, "body": "Refunds take 3 days.",
         "metadata_text": "{}", "etag": "", "propose": "1"},
    )  # fmt: skip

    (change,) = ChangeRequest.objects.get().entity_changes
    assert (change["kind"], change["op"], change["layer"], change["path"]) == (
        "item",
        "update",
        "layer-000",
        "docs/item-0000.md",
    )
    assert change["value"]["body"] == "Refunds take 3 days."
    assert Item.objects.get(pk=item.pk).body != "Refunds take 3 days."


def test_studio_layer_delete__refused__offers_and_proposes_the_deletion(protected, editor_session):
    from profiles.models import ChangeRequest

    refused_page = editor_session.post("/layers/layer-001/delete/")
    assert refused_page.status_code == 409
    assert "Propose deletion" in refused_page.content.decode()

    response = editor_session.post("/layers/layer-001/delete/", {"propose": "1"})

    assert response.status_code == 302
    (change,) = ChangeRequest.objects.get().entity_changes
    assert (change["kind"], change["op"], change["key"]) == ("layer", "delete", "layer-001")
    assert Layer.objects.filter(key="layer-001").exists()

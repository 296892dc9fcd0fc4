"""Every door, for each protected dependency (issue 21): the doors and dependencies that
``test_governed_writes.py`` does not already cover one by one. Each write is refused naming
the protected profile, writes nothing (rows, versions, activity, the workspace token) and
never fails the page.

The release workspace: ``profile-0`` (production, protected) reads ``layer-000`` and
``layer-002`` on its own rules and ``layer-001`` (customer-scoped) on the default rule; its
consumer is ``assistant``.
"""

# ruff: noqa: F811 (the fixtures imported below are the arguments of the tests)

from io import StringIO

import pytest
import yaml
from django.core.management import CommandError, call_command

from profiles.import_export.documents import workspace_export
from profiles.import_export.imports import workspace_import
from profiles.material.layers import layer_update
from profiles.models import Consumer, Environment, ImportJob, Item, Layer
from profiles.versioning.environments import ChangeRequestRequired
from tests.profiles.safechange.test_governed_writes import (  # noqa: F401 (fixtures)
    Unchanged,
    admin_client,
    editor_session,
    layer_form,
    protected,
    release,
)

pytestmark = pytest.mark.django_db

REFUSED = "requires a change request"


@pytest.fixture
def governed(protected):
    Layer.objects.filter(key="layer-000").update(governed=True)


def layer_admin_form(key: str, **fields) -> dict:
    data = {
        "key": key,
        "name": "",
        "description": "",
        "availability": "auto",
        "applies_to_objectives": "[]",
        "applies_to_consumers": "[]",
        "requires_input": "[]",
        "item_filter": "{}",
    }
    data.update(fields)
    return data


# --- admin -------------------------------------------------------------------------------------


def test_admin_layer_add__protected_profile_would_read_it__nothing_saved(protected, admin_client):
    unchanged = Unchanged()

    response = admin_client.post(
        "/admin/profiles/layer/add/", layer_admin_form("release-notes"), follow=True
    )

    page = response.content.decode()
    assert response.status_code == 200
    assert "Nothing was saved" in page and REFUSED in page and "profile-0" in page
    assert not Layer.objects.filter(key="release-notes").exists()
    unchanged.check()


def test_admin_consumer_change__render_of_a_protected_profiles_consumer__nothing_saved(
    protected, admin_client
):
    consumer = Consumer.objects.get(key="assistant")
    unchanged = Unchanged()

    response = admin_client.post(
        f"/admin/profiles/consumer/{consumer.pk}/change/",
        {"key": "assistant", "name": "Assistant", "render_format": "xml",
         "include_currentness": "unknown"},
        follow=True,
    )  # fmt: skip

    page = response.content.decode()
    assert "Nothing was saved" in page and REFUSED in page
    assert Consumer.objects.get(pk=consumer.pk).render_format == "markdown"
    unchanged.check()


def test_admin_history_revert__layer_back_to_no_item_filter__refused_not_a_500(
    release, admin_client
):
    # Given a history record of layer-001 without its itemFilter (an earlier, unprotected
    # edit, since undone), and production protected since
    layer_update(key="layer-001", changes={"itemFilter": None})
    layer_update(key="layer-001", changes={"itemFilter": {"customer_id": "customer_id"}})
    layer = Layer.objects.get(key="layer-001")
    without_filter = layer.history.all()[1]
    assert without_filter.item_filter in (None, {})
    Environment.objects.create(key="production", requires_change_request=True)
    unchanged = Unchanged()

    # When staff revert to it from the admin's history
    response = admin_client.post(
        f"/admin/profiles/layer/{layer.pk}/history/{without_filter.history_id}/",
        layer_admin_form("layer-001", name="Layer 1"),
        follow=True,
    )

    # Then the page says why, and nothing changed
    page = response.content.decode()
    assert response.status_code == 200
    assert "Nothing was reverted" in page and REFUSED in page
    assert Layer.objects.get(pk=layer.pk).item_filter == {"customer_id": "customer_id"}
    unchanged.check()


# --- studio ------------------------------------------------------------------------------------


def test_studio_consumer_edit__render_of_a_protected_profiles_consumer__refused_offers_propose(
    protected, editor_session
):
    unchanged = Unchanged()

    response = editor_session.post(
        "/consumers/assistant/",
        {"key": "assistant", "name": "Assistant", "render_format": "xml",
         "include_currentness": "", "etag": ""},
    )  # fmt: skip

    page = response.content.decode()
    assert response.status_code == 400
    assert REFUSED in page and "profile-0" in page
    assert "Propose change request" in page
    unchanged.check()


def test_studio_governed_item_edit__refused_and_unchanged(governed, editor_session):
    item = Item.objects.get(layer__key="layer-000", path="docs/item-0000.md")
    unchanged = Unchanged()

    response = editor_session.post(
        f"/layers/layer-000/items/{item.pk}/",
        {"path": item.path, "title": item.title, "body": "Refunds: never.",
         "metadata_mode": "json", "metadata_text": "{}", "etag": ""},
    )  # fmt: skip

    assert response.status_code == 400
    assert REFUSED in response.content.decode()
    unchanged.check()


def test_studio_governed_item_delete__refused_offers_propose(governed, editor_session):
    item = Item.objects.get(layer__key="layer-000", path="docs/item-0000.md")
    unchanged = Unchanged()

    response = editor_session.post(f"/layers/layer-000/items/{item.pk}/delete/")

    page = response.content.decode()
    assert response.status_code == 409
    assert REFUSED in page and "Propose deletion" in page
    assert Item.objects.filter(pk=item.pk).exists()
    unchanged.check()


# --- import (service, API job with ?layer=, replace mode) and the command line ------------------


def test_import__file_changes_a_protected_profiles_consumer_render__refused(protected):
    document = workspace_export()
    document["consumers"][0]["render"] = {"format": "xml"}
    unchanged = Unchanged()

    with pytest.raises(ChangeRequestRequired) as caught:
        workspace_import(document=document)

    assert caught.value.profiles == ["profile-0"]
    unchanged.check()


def test_import__file_changes_a_governed_item__refused(governed):
    document = workspace_export()
    document["layers"][0]["items"][0]["body"] = "Refunds: never."
    unchanged = Unchanged()

    with pytest.raises(ChangeRequestRequired) as caught:
        workspace_import(document=document)

    assert caught.value.profiles == ["profile-0"]
    unchanged.check()


def test_import_replace__file_without_a_layer_production_reads__refused(protected):
    document = workspace_export()
    document["layers"] = [layer for layer in document["layers"] if layer["key"] != "layer-001"]
    unchanged = Unchanged()

    with pytest.raises(ChangeRequestRequired) as caught:
        workspace_import(document=document, mode="replace")

    assert caught.value.profiles == ["profile-0"]
    unchanged.check()


def test_api_import_one_layer__governed_item_changed__job_fails_naming_profile(
    governed, editor_client
):
    document = workspace_export()
    layer = document["layers"][0]
    layer["items"][0]["body"] = "Refunds: never."
    unchanged = Unchanged()

    response = editor_client.post(
        "/api/v1/workspace?layer=layer-000",
        yaml.safe_dump({"layers": [layer]}),
        content_type="application/yaml",
    )

    assert response.status_code == 202, response.content
    job = editor_client.get(response["Location"]).json()
    assert job["status"] == "failed"
    assert (job["error"]["code"], job["error"]["profiles"]) == (
        "CHANGE_REQUEST_REQUIRED",
        ["profile-0"],
    )
    assert ImportJob.objects.get().status == "failed"
    unchanged.check()


def test_import_command__new_layer_production_would_read__error_and_nothing_imported(
    protected, tmp_path
):
    path = tmp_path / "workspace.yaml"
    path.write_text(
        "layers:\n  - key: release-notes\n    items:\n      - path: a\n        body: x\n",
        encoding="utf-8",
    )
    unchanged = Unchanged()

    with pytest.raises(CommandError, match=REFUSED):
        call_command("import_workspace", str(path), stdout=StringIO())

    assert not Layer.objects.filter(key="release-notes").exists()
    unchanged.check()


# --- "Propose change" where a material write is refused: with reviewers ---------------------


def test_studio_refused_layer_edit__propose_with_a_reviewer__asked_and_emailed(
    protected, editor_session, reviewer, mailoutbox, django_capture_on_commit_callbacks
):
    from profiles.models import ChangeRequest

    reviewer.email = "reviewer@example.com"
    reviewer.save()
    refused = editor_session.post(
        "/layers/layer-001/", layer_form("layer-001", name="Layer 1", item_filter_text="")
    )
    assert 'name="proposal_reviewers"' in refused.content.decode()
    assert '<option value="reviewer">' in refused.content.decode()
    assert '<option value="editor">' not in refused.content.decode()  # never the author

    with django_capture_on_commit_callbacks(execute=True):
        response = editor_session.post(
            "/layers/layer-001/",
            layer_form(
                "layer-001", name="Layer 1", item_filter_text="", propose="1",
                proposal_reviewers=["reviewer"],
            ),
        )  # fmt: skip

    change_request = ChangeRequest.objects.get()
    assert response.status_code == 302
    assert [user.username for user in change_request.reviewers.all()] == ["reviewer"]
    assert [message.to for message in mailoutbox] == [["reviewer@example.com"]]
    assert Layer.objects.get(key="layer-001").item_filter == {"customer_id": "customer_id"}


def test_studio_refused_delete__propose_naming_someone_who_may_not_review__nothing_opened(
    protected, editor_session
):
    from profiles.models import ChangeRequest

    response = editor_session.post(
        "/layers/layer-001/delete/", {"propose": "1", "proposal_reviewers": ["nobody"]}
    )

    assert response.status_code == 409
    assert "Nothing was proposed" in response.content.decode()
    assert not ChangeRequest.objects.exists()


def test_studio_refused_layer_create__the_alert_links_to_the_proposal(protected, editor_session):
    page = editor_session.post("/layers/_new/", layer_form("release-notes")).content.decode()

    assert '<a href="#proposal">Propose it as a change request instead' in page
    assert '<fieldset class="proposal" id="proposal"' in page

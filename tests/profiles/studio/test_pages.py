"""Profiles list, create/duplicate/delete, layers, items and the workspace file."""

# ruff: noqa: F811 (the studio's editor fixtures, imported: the tests' arguments)

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

import resolver.reasons as reasons
from profiles.models import Item, Layer, Profile, Rule
from profiles.resolution.explain import REASON_SENTENCES, explain
from tests.profiles.studio.fixtures import editor, editor_client  # noqa: F401 (the studio's)

pytestmark = pytest.mark.django_db


def test_reason_sentences__every_code_of_the_engine__has_a_sentence():
    codes = {
        value.rstrip(":")
        for name, value in vars(reasons).items()
        if name.isupper()
        and isinstance(value, str)
        and value.upper() == value
        and name != "RESOLVER_ID"
    }
    assert codes - set(REASON_SENTENCES) == set()


def test_explain__code_with_argument__names_the_input_escaped():
    assert explain("INPUT_NOT_PROVIDED:customer_id") == (
        "Input <code>customer_id</code> was not provided."
    )
    assert "&lt;b&gt;" in explain("MATCHED:<b>")


def test_profile_list__default_scenario__status_badge_and_last_change(editor_client, workspace):
    html = editor_client.get("/profiles/").content.decode()

    row = html.split('data-profile="support-answer"')[1].split("</tr>")[0]
    assert "status-RESOLVED" in row and "Dana&#x27;s card refund" in row
    assert "support-assistant" in row and "answer-ticket" in row and ">600<" in row
    qa_row = html.split('data-profile="qa-review"')[1].split("</tr>")[0]
    assert "no scenario" in qa_row


def test_profile_list__anonymous__redirects_to_login(client, workspace):
    assert client.get("/profiles/").url.startswith("/accounts/login/")


def test_profile_create__valid__profile_on_default_rules(editor_client, workspace):
    response = editor_client.post(
        "/profiles/_new/",
        {
            "key": "support-draft",
            "name": "Drafts",
            "consumer": workspace.consumer.pk,
            "objective": "draft-reply",
            "environment": "",
            "budget": "500",
        },
    )

    assert response.status_code == 302 and response.url == "/profiles/support-draft/"
    profile = Profile.objects.get(key="support-draft")
    assert (profile.objective, profile.environment, profile.rules.count()) == (
        "draft-reply",
        None,
        0,
    )


def test_profile_create__same_selection_as_another__error_and_nothing_created(
    editor_client, workspace
):
    response = editor_client.post(
        "/profiles/_new/",
        {
            "key": "clash",
            "consumer": workspace.consumer.pk,
            "objective": "answer-ticket",
            "budget": "500",
        },
    )

    # Bad input is a 4xx with the error on the page, in words (no document path).
    assert response.status_code == 400
    html = response.content.decode()
    assert "already has consumer &quot;support-assistant&quot;" in html
    assert "profiles[" not in html
    assert not Profile.objects.filter(key="clash").exists()


def test_profile_duplicate__new_environment__copies_every_rule(editor_client, workspace):
    response = editor_client.post(
        "/profiles/support-answer/duplicate/",
        {
            "key": "support-answer-staging",
            "name": "Staging",
            "consumer": workspace.consumer.pk,
            "objective": "answer-ticket",
            "environment": "staging",
            "budget": "600",
        },
    )

    assert response.status_code == 302
    copy = Profile.objects.get(key="support-answer-staging")
    original = {r.layer.key: r.max_items for r in workspace.rules.select_related("layer")}
    copied = {r.layer.key: r.max_items for r in copy.rules.select_related("layer")}
    assert copied == original


def test_profile_delete__get_asks__post_deletes(editor_client, workspace):
    confirm = editor_client.get("/profiles/support-answer/delete/")
    assert "Delete profile" in confirm.content.decode()
    assert Profile.objects.filter(key="support-answer").exists()

    response = editor_client.post("/profiles/support-answer/delete/")

    assert response.status_code == 302
    assert not Profile.objects.filter(key="support-answer").exists()
    assert not Rule.objects.filter(profile__key="support-answer").exists()


def test_profile_delete__without_permission__forbidden(client, viewer, workspace):
    client.force_login(viewer)
    assert client.post("/profiles/support-answer/delete/").status_code == 403
    assert Profile.objects.filter(key="support-answer").exists()


def test_layer_list__conditions_shown(editor_client, workspace):
    html = editor_client.get("/layers/").content.decode()

    customer = html.split('data-layer-row="customer"')[1].split("</tr>")[0]
    assert "<code>customer_id</code>" in customer
    status = html.split('data-layer-row="status-page"')[1].split("</tr>")[0]
    assert "unavailable" in status


def test_layer_edit__new_conditions__saved(editor_client, workspace):
    response = editor_client.post(
        "/layers/kb/",
        {
            "name": "Knowledge base",
            "description": "",
            "availability": "unknown",
            "objectives": "answer-ticket",
            "consumers": "",
            "requires_input_text": "customer_id",
            "item_filter_text": "",
        },
    )

    assert response.status_code == 302
    layer = Layer.objects.get(key="kb")
    assert (layer.availability, layer.applies_to_objectives, layer.requires_input) == (
        "unknown",
        ["answer-ticket"],
        ["customer_id"],
    )


def test_layer_edit__bad_item_filter_line__error_and_nothing_saved(editor_client, workspace):
    response = editor_client.post(
        "/layers/kb/",
        {"name": "KB", "availability": "auto", "item_filter_text": "customer_id"},
    )

    assert "metadata field = input key" in response.content.decode()
    assert Layer.objects.get(key="kb").name == "Knowledge base"


def test_item_list__search__filters_and_paginates(editor_client, workspace):
    html = editor_client.get("/layers/kb/items/?q=safari").content.decode()

    assert "kb/safari-login.md" in html
    assert "kb/password-reset.md" not in html
    assert "1 item matching" in html


def test_item_edit__metadata_not_json__error_and_nothing_saved(editor_client, workspace):
    item = Item.objects.get(layer__key="kb", path="kb/chargebacks.md")

    response = editor_client.post(
        f"/layers/kb/items/{item.pk}/",
        {"title": "Changed", "body": "x", "metadata_text": "{updated: 2026}"},
    )

    assert "not valid JSON" in response.content.decode()
    item.refresh_from_db()
    assert item.title == "Chargebacks and disputes"


def test_item_edit__valid__saved(editor_client, workspace):
    item = Item.objects.get(layer__key="kb", path="kb/chargebacks.md")

    response = editor_client.post(
        f"/layers/kb/items/{item.pk}/",
        {
            "title": "Disputes",
            "body": "New body.",
            "metadata_text": json.dumps({"updated": "2026-11-28"}),
        },
    )

    assert response.status_code == 302
    item.refresh_from_db()
    assert (item.title, item.metadata) == ("Disputes", {"updated": "2026-11-28"})


def test_workspace_download__yaml_attachment(editor_client, workspace):
    response = editor_client.get("/workspace/download/")

    assert response["Content-Disposition"] == 'attachment; filename="workspace.yaml"'
    assert "support-answer" in b"".join(response.streaming_content).decode()


def test_workspace_upload__invalid_file__issues_listed_and_nothing_changed(
    editor_client, workspace
):
    text = "version: 1\nconsumers: []\nlayers: []\nprofiles:\n- key: x\n  budget: 0\n"
    response = editor_client.post(
        "/workspace/upload/",
        {"file": SimpleUploadedFile("w.yaml", text.encode()), "mode": "replace"},
        follow=True,
    )

    # The import ran as a job (at once, in tests); its page lists the issues.
    assert response.redirect_chain[0][0].startswith("/workspace/imports/")
    assert "Nothing was imported" in response.content.decode()
    assert "profiles[0].budget" in response.content.decode()
    assert Profile.objects.filter(key="support-answer").exists()


def test_workspace_upload__download_round_trip__nothing_changes(editor_client, workspace):
    text = b"".join(editor_client.get("/workspace/download/").streaming_content)

    response = editor_client.post(
        "/workspace/upload/",
        {"file": SimpleUploadedFile("w.yaml", text), "mode": "replace"},
        follow=True,
    )

    assert "Imported." in response.content.decode()
    assert Rule.objects.get(profile__key="support-answer", layer__key="tickets").max_items == 2


def test_workspace_upload__file_over_the_limit__refused_and_nothing_changed(
    editor_client, workspace, settings
):
    # Given a 2 KB limit, when a 4 KB file is uploaded,
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2048
    text = b"".join(editor_client.get("/workspace/download/").streaming_content)
    big = text + b"#" * 4096  # a YAML comment: valid, only too large
    response = editor_client.post(
        "/workspace/upload/",
        {"file": SimpleUploadedFile("w.yaml", big), "mode": "replace"},
    )
    # then the form names the limit, and the workspace is unchanged.
    assert response.status_code == 200
    assert "at most 2,048 bytes are accepted" in response.content.decode()
    assert Profile.objects.filter(key="support-answer").exists()


def test_workspace_upload__body_far_over_the_limit__413_before_reading(
    editor_client, workspace, settings
):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    huge = b"x" * (200 * 1024)
    response = editor_client.post(
        "/workspace/upload/", {"file": SimpleUploadedFile("w.yaml", huge), "mode": "merge"}
    )
    assert response.status_code == 413
    assert "nothing was" in response.content.decode().lower()  # refused before any view

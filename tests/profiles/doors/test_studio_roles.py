"""The studio as each role sees it: controls a user cannot use are not rendered, a reader's
editor shows resolutions with itemFilter respected, an editor can do what the API allows."""

import time
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.cache import cache as django_cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from profiles.models import ChangeRequest, Consumer, ImportJob, Item, Layer, Profile, Scenario
from profiles.team.invitations import invitation_create
from profiles.workspace import cache
from profiles.workspace.origin import STUDIO
from profiles.workspace.permissions import EDITORS_GROUP
from profiles.workspace.throttling import throttle_key
from tests.profiles.conftest import api_key_for
from tests.profiles.doors.roles import (
    ITEM,
    LAYER,
    OTHER_CUSTOMER_MATERIAL,
    PROFILE,
    People,
    load_workspace,
    make_people,
)
from tests.profiles.formdata import editor_form_data

TEMPLATES = Path(settings.BASE_DIR) / "templates"


@pytest.fixture
def people(db, settings) -> People:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.workspace_cache_clear()
    load_workspace()
    yield make_people()
    cache.workspace_cache_clear()
    django_cache.clear()  # the throttle counters a test used up


def rate_used_up(scope: str, username: str = "reader") -> None:
    """Use up a user's rate in ``scope`` for the current minute (the counters the studio and
    the API share)."""
    user = User.objects.get(username=username)
    django_cache.set(f"{throttle_key(scope, user.pk)}:{int(time.time() // 60)}", 10**9, 120)


def invitation_token() -> str:
    staff = User.objects.get(username="staff")
    sent = invitation_create(email="invitee@example.com", role="editor", actor=staff, origin=STUDIO)
    return sent.token


def cr_id() -> int:
    return ChangeRequest.objects.get().pk


def item_id() -> int:
    return Item.objects.get(layer__key=LAYER, path=ITEM).pk


def write_controls() -> dict[str, str]:
    """Return each write control (or link to a page readers may not open) by its mark-up."""
    return {
        "New profile": f'href="{reverse("profile-create")}"',
        "Duplicate": f'href="{reverse("profile-duplicate", args=[PROFILE])}"',
        "Delete": f'href="{reverse("profile-delete", args=[PROFILE])}"',
        "Save rules": 'id="save-button"',
        "Save as scenario": 'value="save-scenario"',
        "Items link": f'href="{reverse("item-list", args=[LAYER])}"',
        "New item": f'href="{reverse("item-create", args=[LAYER])}"',
        "Bulk upload items": f'href="{reverse("item-bulk", args=[LAYER])}"',
        "Workspace link": f'href="{reverse("workspace-upload")}"',
        "Download": f'href="{reverse("workspace-download")}"',
        "Admin link": f'href="{reverse("admin:index")}"',
        "Team link": f'href="{reverse("team")}"',
        "Save button": ">Save</button>",
        "Upload button": ">Preview the import</button>",
        "New layer": f'href="{reverse("layer-create")}"',
        "New consumer": f'href="{reverse("consumer-create")}"',
        "Delete layer": f'href="{reverse("layer-delete", args=[LAYER])}"',
        "Edit profile details": f'href="{reverse("profile-edit", args=[PROFILE])}"',
        "Approve": 'value="approve"',
        "Reject": 'value="reject"',
        "Apply": 'value="apply"',
        "Restore button": ">Restore version 1</button>",
        "Promote": 'class="button small">Promote',
        "Protect": 'name="requires_change_request"',
    }


# Every studio page template: the URL that renders it, and what a reader gets there.
STUDIO_TEMPLATES = {
    "profiles/profile_list.html": (lambda: reverse("profile-list"), 200),
    "profiles/editor.html": (lambda: reverse("profile-editor", args=[PROFILE]), 200),
    "profiles/layer_list.html": (lambda: reverse("layer-list"), 200),
    # One page template for every create/edit page; a reader sees a layer read-only.
    "profiles/entry_form.html": (lambda: reverse("layer-edit", args=[LAYER]), 200),
    "profiles/confirm_delete.html": (lambda: reverse("profile-delete", args=[PROFILE]), 403),
    "profiles/consumer_list.html": (lambda: reverse("consumer-list"), 200),
    "profiles/compare.html": (lambda: reverse("profile-compare"), 200),
    "profiles/playground.html": (lambda: reverse("profile-playground"), 200),
    "profiles/tokens.html": (lambda: reverse("token-list"), 200),
    "profiles/item_list.html": (lambda: reverse("item-list", args=[LAYER]), 403),
    # A layer's bulk upload and its job: WRITE_MATERIAL.
    "profiles/item_bulk.html": (lambda: reverse("item-bulk", args=[LAYER]), 403),
    "profiles/item_bulk_job.html": (
        lambda: reverse("item-bulk-job", args=[LAYER, "00000000-0000-0000-0000-000000000000"]),
        403,
    ),
    "profiles/workspace.html": (lambda: reverse("workspace-upload"), 403),
    "profiles/import_job.html": (
        lambda: reverse("workspace-import-job", args=["00000000-0000-0000-0000-000000000000"]),
        403,
    ),
    "profiles/home.html": (lambda: reverse("home"), 302),  # signed in: on to the profiles
    # Versioning and safe change (profiles.studio.views.{versioning,safechange}); the fixture's
    # change request is the staff's.
    "profiles/history.html": (lambda: reverse("profile-history", args=[PROFILE]), 200),
    "profiles/version_restore.html": (
        lambda: reverse("profile-version-restore", args=[PROFILE, 1]),
        403,
    ),
    "profiles/change_request_list.html": (lambda: reverse("change-request-list"), 200),
    "profiles/change_request.html": (lambda: reverse("change-request", args=[cr_id()]), 200),
    "profiles/change_request_impact.html": (
        lambda: reverse("change-request-impact-more", args=[cr_id()]),
        200,
    ),
    "profiles/environments.html": (lambda: reverse("environment-list"), 200),
    # The confirmation of Propose and Promote (profiles.studio.views.reviews): editors only.
    "profiles/change_request_propose.html": (
        lambda: reverse("profile-propose-confirm", args=[PROFILE]),
        403,
    ),
    "profiles/help_safe_change.html": (lambda: reverse("help-safe-change"), 200),
    "profiles/help_reasons.html": (lambda: reverse("help-reasons"), 200),
    "profiles/activity.html": (lambda: reverse("activity"), 200),  # without item rows
    # Webhooks are staff's (MANAGE_WEBHOOKS): refused before any webhook is looked up.
    "profiles/webhooks.html": (lambda: reverse("webhook-list"), 403),
    "profiles/webhook.html": (lambda: reverse("webhook", args=[1]), 403),
    # The team is staff's (ADMINISTER): refused before any member is looked up. An invitation's
    # page, opened signed in, asks to sign out first and shows no form.
    "profiles/team.html": (lambda: reverse("team"), 403),
    "profiles/team_member_active.html": (lambda: reverse("team-member-active", args=[1]), 403),
    "profiles/team_join.html": (lambda: reverse("team-join", args=[invitation_token()]), 200),
    # A resolution door once the user's rate is used up (API and studio together).
    "profiles/throttled.html": (
        lambda: rate_used_up("resolve") or reverse("profile-compare"),
        429,
    ),
}

# What an editor (the group, not staff) must see, proving the marks above are the real ones.
EDITOR_SEES = {
    "profiles/profile_list.html": ["New profile", "Duplicate", "Delete", "Workspace link"],
    "profiles/editor.html": ["Save rules", "Save as scenario", "Edit profile details"],
    "profiles/layer_list.html": ["Items link", "New layer"],
    "profiles/item_list.html": ["New item", "Bulk upload items"],
    "profiles/entry_form.html": ["Save button", "Items link", "Delete layer"],
    "profiles/consumer_list.html": ["New consumer"],
    "profiles/workspace.html": ["Download", "Upload button"],
    "profiles/change_request.html": ["Approve", "Reject"],
    "profiles/version_restore.html": ["Restore button"],
}


def test_studio_templates__every_page_template__is_in_the_reader_table():
    pages = {
        str(path.relative_to(TEMPLATES))
        for path in (TEMPLATES / "profiles").glob("*.html")
        if not path.name.startswith("_")
    }

    assert pages == set(STUDIO_TEMPLATES)


@pytest.mark.parametrize("template", sorted(STUDIO_TEMPLATES))
def test_studio_template__reader__renders_no_write_control(people, template):
    url, status = STUDIO_TEMPLATES[template]

    response = people.clients["reader"].get(url())

    assert response.status_code == status
    if status == 200:
        assert template in [t.name for t in response.templates]
        html = response.content.decode()
        shown = [name for name, mark in write_controls().items() if mark in html]
        assert shown == []


@pytest.mark.parametrize("template", sorted(EDITOR_SEES))
def test_studio_template__editor__renders_its_write_controls(people, template):
    url, _ = STUDIO_TEMPLATES[template]

    response = people.clients["editor"].get(url())

    assert response.status_code == 200
    html = response.content.decode()
    controls = write_controls()
    assert [name for name in EDITOR_SEES[template] if controls[name] not in html] == []
    assert controls["Admin link"] not in html  # the admin is for staff
    assert controls["Team link"] not in html  # and so is the team


def test_studio_nav__staff__links_the_admin_and_the_team(people):
    html = people.clients["staff"].get(reverse("profile-list")).content.decode()

    assert write_controls()["Admin link"] in html
    assert write_controls()["Team link"] in html


def test_layer_form__reader__fields_are_read_only(people):
    response = people.clients["reader"].get(reverse("layer-edit", args=[LAYER]))

    form = response.context["form"]
    assert all(field.disabled for field in form.fields.values())


# --- a reader's resolutions -----------------------------------------------------------------


def test_editor_page__reader__shows_the_timeline_without_other_customers_material(people):
    response = people.clients["reader"].get(reverse("profile-editor", args=[PROFILE]))

    html = response.content.decode()
    assert response.status_code == 200
    assert "Decision timeline" in html
    assert "Refund not received" in html  # customer C-7's ticket, as the resolution shows it
    assert [text for text in OTHER_CUSTOMER_MATERIAL if text in html] == []


def test_preview__reader__shows_only_the_filtered_items(people):
    client = people.clients["reader"]
    data = editor_form_data(client.get(reverse("profile-editor", args=[PROFILE])).content.decode())
    data["tickets-maxItems"] = "10"

    response = client.post(
        reverse("profile-preview", args=[PROFILE]), data, headers={"HX-Request": "true"}
    )
    # What the preview loads on demand: each layer's item rows, the cut units, the handoff.
    on_demand = [
        client.post(
            reverse("profile-preview-rows", args=[PROFILE]),
            {**data, "layer": layer.key},
            headers={"HX-Request": "true"},
        )
        for layer in Layer.objects.all()
    ] + [
        client.post(reverse(name, args=[PROFILE]), data, headers={"HX-Request": "true"})
        for name in ("profile-preview-cut", "profile-preview-handoff", "profile-preview-sweep")
    ]

    html = "".join(r.content.decode() for r in [response, *on_demand])
    assert {r.status_code for r in [response, *on_demand]} == {200}
    assert "T-1001" in html
    assert [text for text in OTHER_CUSTOMER_MATERIAL if text in html] == []


def test_editor_page__reader_posts_save__403_and_nothing_saved(people):
    client = people.clients["reader"]
    data = editor_form_data(client.get(reverse("profile-editor", args=[PROFILE])).content.decode())
    data["budget"] = "123"

    response = client.post(reverse("profile-save", args=[PROFILE]), data)

    assert response.status_code == 403
    assert Profile.objects.get(key=PROFILE).budget != 123


# --- an editor (the group, not staff) does in the studio what the API allows ------------------


def test_studio__editor__saves_rules(people):
    client = people.clients["editor"]
    data = editor_form_data(client.get(reverse("profile-editor", args=[PROFILE])).content.decode())
    data["budget"] = "1234"

    response = client.post(reverse("profile-save", args=[PROFILE]), data)

    assert response.status_code == 302
    assert Profile.objects.get(key=PROFILE).budget == 1234


def test_studio__editor__saves_a_scenario(people):
    client = people.clients["editor"]
    data = editor_form_data(client.get(reverse("profile-editor", args=[PROFILE])).content.decode())
    data["scenario_name"] = "Editor's case"

    response = client.post(reverse("profile-scenario-save", args=[PROFILE]), data)

    assert response.status_code == 200
    assert Scenario.objects.filter(name="Editor's case", profile__key=PROFILE).exists()


def test_studio__editor__creates_a_profile(people):
    consumer = Consumer.objects.get(key="support-assistant")
    data = {"key": "by-editor", "consumer": consumer.pk, "objective": "triage", "budget": 500}

    response = people.clients["editor"].post(reverse("profile-create"), data)

    assert response.status_code == 302
    assert Profile.objects.filter(key="by-editor", objective="triage").exists()


def test_studio__editor__duplicates_and_deletes_a_profile(people):
    client = people.clients["editor"]
    source = Profile.objects.get(key=PROFILE)
    data = {
        "key": "copy",
        "consumer": source.consumer_id,
        "objective": "other-objective",
        "budget": source.budget,
    }

    duplicated = client.post(reverse("profile-duplicate", args=[PROFILE]), data)
    deleted = client.post(reverse("profile-delete", args=["copy"]))

    assert (duplicated.status_code, deleted.status_code) == (302, 302)
    assert not Profile.objects.filter(key="copy").exists()


def test_studio__editor__edits_a_layer_and_an_item(people):
    client = people.clients["editor"]
    layer = Layer.objects.get(key=LAYER)
    item = Item.objects.get(layer=layer, path=ITEM)

    layer_response = client.post(
        reverse("layer-edit", args=[LAYER]),
        {
            "name": "Tickets (edited)",
            "description": "",
            "availability": layer.availability,
            "item_filter_text": "customer_id = customer_id",
        },
    )
    item_response = client.post(
        reverse("item-edit", args=[LAYER, item.pk]),
        {"title": "Refund still missing", "body": item.body, "metadata_text": "{}"},
    )

    assert (layer_response.status_code, item_response.status_code) == (302, 302)
    assert Layer.objects.get(key=LAYER).name == "Tickets (edited)"
    assert Item.objects.get(pk=item.pk).title == "Refund still missing"


def test_studio__editor__downloads_and_uploads_the_workspace(people):
    client = people.clients["editor"]

    download = client.get(reverse("workspace-download"))
    document = yaml.safe_load(b"".join(download.streaming_content))
    document["profiles"][0]["budget"] = 777
    upload = client.post(
        reverse("workspace-upload"),
        {
            "mode": "merge",
            "file": SimpleUploadedFile("workspace.yaml", yaml.safe_dump(document).encode()),
        },
    )

    assert download.status_code == 200
    assert upload.status_code == 302
    assert Profile.objects.get(key=document["profiles"][0]["key"]).budget == 777


def test_import_job__another_editors_job__404_unless_staff(people):
    job = ImportJob.objects.create(user=people.users["editor"], source_bytes=1)
    other = User.objects.create_user("other-editor")
    other.groups.add(Group.objects.get(name=EDITORS_GROUP))
    other_client = people.clients["anonymous"]
    other_client.force_login(other)
    token = api_key_for(other)
    page = reverse("workspace-import-job", args=[job.pk])
    api = reverse("api:import-job", args=[job.pk])

    statuses = {
        "other editor, studio": other_client.get(page).status_code,
        "other editor, API": other_client.get(
            api, headers={"Authorization": f"Token {token}"}
        ).status_code,
        "owner": people.clients["editor"].get(page).status_code,
        "staff": people.clients["staff"].get(page).status_code,
    }

    assert statuses == {
        "other editor, studio": 404,
        "other editor, API": 404,
        "owner": 200,
        "staff": 200,
    }

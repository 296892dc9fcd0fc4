"""The studio's safe-change pages: history with diff and restore, the impact shown before Save,
Propose change, change requests (lists, a request, review actions, the preview of its draft),
environments with comparison and promotion."""

import re
from html import unescape

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse

from profiles.authoring.profiles import profile_save_rules
from profiles.authoring.scenarios import scenarios_upsert
from profiles.import_export.imports import workspace_import
from profiles.models import ChangeRequest, Environment, Profile, ProfileVersion
from profiles.safechange.change_requests import (
    change_request_apply,
    change_request_create,
    change_request_update,
)
from profiles.workspace.permissions import EDITORS_GROUP
from tests.profiles.conftest import RELEASE_SCENARIOS, release_workspace
from tests.profiles.formdata import editor_form_data

pytestmark = pytest.mark.django_db

EDITOR = "/profiles/profile-0/"


@pytest.fixture
def release(db):
    workspace_import(document=release_workspace())
    scenarios_upsert(scenarios=RELEASE_SCENARIOS)


def editor_user(name: str) -> User:
    user = User.objects.create_user(name, password=f"{name}-password-1")
    user.groups.add(Group.objects.get_or_create(name=EDITORS_GROUP)[0])
    return user


@pytest.fixture
def author(client, release):
    client.force_login(editor_user("dana"))
    return client


@pytest.fixture
def reviewer(release):
    from django.test import Client

    client = Client()
    client.force_login(editor_user("lee"))
    return client


def editor_data(client, **fields) -> dict:
    data = editor_form_data(client.get(EDITOR).content.decode())
    data.update(fields)
    return data


# --- history -------------------------------------------------------------------------------


def test_history__two_versions__lists_them_and_diffs_latest_side_by_side(author):
    profile_save_rules(profile="profile-0", rules={"layer-000": {"maxItems": 1}}, budget=640)

    html = author.get(reverse("profile-history", args=["profile-0"])).content.decode()

    assert 'data-version="2"' in html and 'data-version="1"' in html
    diff = html.split('class="list diff-table"')[1].split("</table>")[0]
    assert "<code>budget</code>" in diff
    assert "<code>800</code>" in diff and "<code>640</code>" in diff
    assert "<code>rules.layer-000.maxItems</code>" in diff


def test_history__compare_any_two__query_picks_the_versions(author):
    for budget in (700, 600):
        profile_save_rules(profile="profile-0", rules={}, budget=budget)

    page = author.get(reverse("profile-history", args=["profile-0"]) + "?from=1&to=3").content
    diff = page.decode().split('class="list diff-table"')[1].split("</table>")[0]

    assert "<code>800</code>" in diff and "<code>600</code>" in diff
    assert "<code>700</code>" not in diff


def test_editor__links_its_history(author):
    html = author.get(EDITOR).content.decode()

    assert f'href="{reverse("profile-history", args=["profile-0"])}"' in html
    assert "All versions, diffs and restore" in html


def test_restore__confirm_then_post__appends_a_version_equal_to_the_old_one(author):
    profile_save_rules(profile="profile-0", rules={}, budget=640)
    url = reverse("profile-version-restore", args=["profile-0", 1])

    page = author.get(url).content.decode()
    etag = unescape(page.split('name="etag" value="')[1].split('"')[0])
    response = author.post(url, {"etag": etag})

    assert "<code>640</code>" in page and "<code>800</code>" in page  # what it changes
    assert response.status_code == 302
    assert Profile.objects.get(key="profile-0").budget == 800
    latest = ProfileVersion.objects.get(profile_key="profile-0", number=3)
    assert latest.restored_from == 1


def test_restore__protected_environment__proposes_a_change_request_instead(author):
    profile_save_rules(profile="profile-0", rules={}, budget=640)
    Environment.objects.create(key="production", requires_change_request=True)
    url = reverse("profile-version-restore", args=["profile-0", 1])

    assert "Propose restore" in author.get(url).content.decode()
    response = author.post(url)

    change_request = ChangeRequest.objects.get()
    assert response["Location"] == reverse("change-request", args=[change_request.pk])
    assert change_request.changes == {"budget": 800}
    assert Profile.objects.get(key="profile-0").budget == 640


# --- Save shows the impact first; Propose change ------------------------------------------


def test_save_impact__fewer_items__says_how_many_scenarios_change_and_lists_them(author):
    data = editor_data(author, **{"layer-000-maxItems": "1"})

    response = author.post(
        reverse("profile-save-impact", args=["profile-0"]), data, headers={"HX-Request": "true"}
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert "This change alters 3 of 3 scenarios" in html
    assert html.count("− layer-000/") >= 2  # the items each scenario loses
    assert 'formaction="/profiles/profile-0/save/"' in html  # Confirm save
    assert Profile.objects.get(key="profile-0").version == 1  # nothing saved


def test_save_impact__no_change__alters_none(author):
    html = author.post(
        reverse("profile-save-impact", args=["profile-0"]), editor_data(author)
    ).content.decode()

    assert "This change alters 0 of 3 scenarios" in html


def test_editor__save_button__asks_for_the_impact_first(author):
    html = author.get(EDITOR).content.decode()

    button = html.split('id="save-button"')[1].split(">")[0]
    assert f'hx-post="{reverse("profile-save-impact", args=["profile-0"])}"' in button
    assert 'id="save-impact"' in html


def test_editor__protected_environment__propose_change_instead_of_save(author):
    Environment.objects.create(key="production", requires_change_request=True)

    html = author.get(EDITOR).content.decode()

    assert "Propose change" in html
    assert 'id="save-button"' not in html


def test_propose__draft__opens_a_change_request_with_only_what_changed(author):
    Environment.objects.create(key="production", requires_change_request=True)
    data = editor_data(author, **{"layer-000-maxItems": "2", "budget": "900"})

    response = author.post(reverse("profile-propose", args=["profile-0"]), data)

    change_request = ChangeRequest.objects.get()
    assert response["Location"] == reverse("change-request", args=[change_request.pk])
    assert change_request.changes == {"budget": 900, "rules": {"layer-000": {"maxItems": 2}}}
    assert change_request.author.username == "dana"
    assert len(change_request.impact) == 3


@pytest.mark.parametrize("query", ["to=%C2%B2", "from=%D9%A3", "to=abc", "from=0"])
def test_history__version_number_not_in_ascii_digits__400_naming_the_parameter(author, query):
    response = author.get(reverse("profile-history", args=["profile-0"]) + "?" + query)

    assert response.status_code == 400
    name = query.split("=")[0]
    assert f"{name.capitalize()}: must be a version number" in unescape(response.content.decode())


def history_rows(client) -> dict[int, str]:
    """Return each version's "What" cell, as text, by version number."""
    html = client.get(reverse("profile-history", args=["profile-0"])).content.decode()
    rows = re.findall(r'<tr data-version="(\d+)">(.*?)</tr>', html, flags=re.S)
    cells = {
        int(number): re.findall(r"<td[^>]*>(.*?)</td>", row, flags=re.S) for number, row in rows
    }
    return {n: " ".join(unescape(re.sub(r"<[^>]+>", "", c[2])).split()) for n, c in cells.items()}


def test_save__with_a_message__version_records_it_and_history_says_what_and_why(author):
    data = editor_data(author, budget="640", save_message="  Trim for the mobile app  ")

    response = author.post(reverse("profile-save", args=["profile-0"]), data)

    assert response.status_code == 302
    version = ProfileVersion.objects.get(profile_key="profile-0", number=2)
    assert (version.message, version.door) == ("Trim for the mobile app", "studio")
    what = history_rows(author)
    assert what[2] == "Saved in the studio: budget 800 → 640 “Trim for the mobile app”"
    assert what[1].startswith("Created by a workspace import")


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ("bell\x07here", "Save message: must not contain a control character (U+0007)."),
        ("two\nlines", "Save message: must not contain a control character (U+000A)."),
        ("x" * 501, "Save message: at most 500 characters (501 given)."),
    ],
)
def test_save__message_with_a_control_character_or_too_long__refused_naming_the_field(
    author, message, error
):
    data = editor_data(author, budget="640", save_message=message)

    response = author.post(reverse("profile-save", args=["profile-0"]), data)

    assert response.status_code == 400
    html = unescape(response.content.decode())
    assert f'<span class="field-error" id="save-message-error">{error}</span>' in html
    assert 'id="save-message"' in html and 'aria-invalid="true"' in html
    assert Profile.objects.get(key="profile-0").budget == 800
    assert ProfileVersion.objects.filter(profile_key="profile-0").count() == 1


def test_save__message_with_a_nul__refused_before_the_view_naming_the_field(author):
    data = editor_data(author, budget="640", save_message="nul\x00here")

    response = author.post(reverse("profile-save", args=["profile-0"]), data)

    assert response.status_code == 400
    assert "(save_message)" in response.content.decode()  # the text rule's page, by name
    assert ProfileVersion.objects.filter(profile_key="profile-0").count() == 1


def test_history__restore_and_change_request__each_says_what_it_is_once(author, reviewer):
    profile_save_rules(profile="profile-0", rules={}, budget=640)  # v2, a service's own write
    url = reverse("profile-version-restore", args=["profile-0", 1])
    page = author.get(url).content.decode()
    author.post(url, {"etag": unescape(page.split('name="etag" value="')[1].split('"')[0])})
    change_request = propose(author)
    approve(reviewer, change_request)
    author.post(reverse("change-request", args=[change_request.pk]), {"action": "apply"})

    what = history_rows(author)

    assert what[2] == "Saved: budget 800 → 640"
    assert what[3] == "Restored from version 1: budget 640 → 800"  # not twice
    assert ProfileVersion.objects.get(profile_key="profile-0", number=3).message == ""
    assert what[4] == (
        f"Applied change request #{change_request.pk}, approved by lee: "
        f"layer-000.maxItems 3 → 1 “{change_request.title}”"
    )


# --- change requests -----------------------------------------------------------------------


def propose(client) -> ChangeRequest:
    data = editor_data(client, **{"layer-000-maxItems": "1"})
    client.post(reverse("profile-propose", args=["profile-0"]), data)
    return ChangeRequest.objects.latest("pk")


def approve(client, change_request: ChangeRequest, *, etag: str | None = None):
    """Press Approve on the page as it was read (its form carries the revision shown)."""
    url = reverse("change-request", args=[change_request.pk])
    if etag is None:
        etag = unescape(
            re.search(r'name="etag" value="([^"]*)"', client.get(url).content.decode())[1]
        )
    return client.post(url, {"action": "approve", "etag": etag})


def test_change_request_page__shows_rules_diff_and_impact_with_preview_links(author):
    change_request = propose(author)

    html = author.get(reverse("change-request", args=[change_request.pk])).content.decode()

    assert "<code>rules.layer-000.maxItems</code>" in html
    assert "This change alters 3 of 3 scenarios" in html
    preview = reverse("change-request-preview", args=[change_request.pk])
    assert html.count(f'href="{preview}?scenario=') == 3
    assert "someone else approves it" in html
    assert 'value="approve"' not in html  # not for its author


def test_change_request__approve_by_another_then_apply__new_version(author, reviewer):
    change_request = propose(author)
    url = reverse("change-request", args=[change_request.pk])

    assert approve(reviewer, change_request).status_code == 302
    response = author.post(url, {"action": "apply"})

    assert response.status_code == 302
    change_request.refresh_from_db()
    assert change_request.status == "applied"
    version = ProfileVersion.objects.get(profile_key="profile-0", number=2)
    assert (version.author.username, version.approvers) == ("dana", ["lee"])


def test_change_request__author_posts_approve__403_with_the_reason(author):
    change_request = propose(author)

    response = author.post(
        reverse("change-request", args=[change_request.pk]), {"action": "approve"}
    )

    assert response.status_code == 403
    assert "cannot approve it" in response.content.decode()


def test_change_request__stale__offers_rebase(author, reviewer):
    change_request = propose(author)
    profile_save_rules(profile="profile-0", rules={}, budget=640)

    html = author.get(reverse("change-request", args=[change_request.pk])).content.decode()

    assert "The profile moved on" in html
    assert 'value="rebase"' in html


def test_change_request_preview__editor_opens_with_the_proposed_draft(author):
    change_request = propose(author)
    scenario = change_request.impact[0]["scenario"]
    from profiles.models import Scenario

    scenario_id = Scenario.objects.get(name=scenario).pk

    html = author.get(
        reverse("change-request-preview", args=[change_request.pk]) + f"?scenario={scenario_id}"
    ).content.decode()

    assert "Unsaved changes" in html
    assert 'name="layer-000-maxItems" value="1"' in html.replace("\n", " ") or (
        'value="1"' in html.split('name="layer-000-maxItems"')[1].split(">")[0]
    )
    assert f"Previewing change request #{change_request.pk}" in html


@pytest.mark.parametrize("scenario", ["abc", "%C2%B2", "1.5"])
def test_change_request_preview__scenario_not_an_id__400_naming_the_parameter(author, scenario):
    change_request = propose(author)
    url = reverse("change-request-preview", args=[change_request.pk])

    response = author.get(f"{url}?scenario={scenario}")

    assert response.status_code == 400
    assert "Scenario: must be a scenario id" in unescape(response.content.decode())


def test_change_request_preview__unknown_scenario__404(author):
    change_request = propose(author)
    url = reverse("change-request-preview", args=[change_request.pk])

    assert author.get(f"{url}?scenario=999999").status_code == 404


def test_change_request_list__tabs(author, reviewer):
    mine = propose(author)

    own = author.get(reverse("change-request-list") + "?tab=mine").content.decode()
    to_review = reviewer.get(reverse("change-request-list") + "?tab=review").content.decode()
    nothing = author.get(reverse("change-request-list") + "?tab=review").content.decode()

    assert f'data-change-request="{mine.pk}"' in own
    assert f'data-change-request="{mine.pk}"' in to_review
    assert "Nothing waits for your review" in nothing


# --- environments --------------------------------------------------------------------------


def test_environments__comparison__production_and_staging_side_by_side(author):
    html = author.get(reverse("environment-list")).content.decode()

    assert 'data-environment="production"' in html and 'data-environment="staging"' in html
    assert "assistant · objective-0" in html
    assert "production vs staging" in html


def test_environments__promote__opens_the_change_request(author):
    response = author.post(
        reverse("profile-promote", args=["profile-0-staging"]), {"to": "production"}
    )

    change_request = ChangeRequest.objects.get()
    assert response["Location"] == reverse("change-request", args=[change_request.pk])
    assert (change_request.profile_key, change_request.promoted_from) == (
        "profile-0",
        "profile-0-staging",
    )


def test_environments__staff_protects_production(client, release):
    client.force_login(User.objects.create_user("boss", is_staff=True))

    client.post(
        reverse("environment-list"),
        {"key": "production", "requires_change_request": "on", "approvals": "2"},
    )

    environment = Environment.objects.get(key="production")
    assert (environment.requires_change_request, environment.approvals) == (True, 2)


def test_change_request__approve_a_revision_edited_since_the_page_was_read__412_nothing_approved(
    author, reviewer
):
    # Given the reviewer's page, read before the author edits the request,
    change_request = propose(author)
    url = reverse("change-request", args=[change_request.pk])
    seen = unescape(
        re.search(r'name="etag" value="([^"]*)"', reviewer.get(url).content.decode())[1]
    )
    change_request_update(pk=change_request.pk, user=change_request.author, changes={"budget": 5})

    # When they press Approve on it,
    response = approve(reviewer, change_request, etag=seen)

    # Then nothing is approved and the page says why, showing the request as it is now.
    assert response.status_code == 412
    html = unescape(response.content.decode())
    assert "changed since you read it" in html
    assert "<code>budget</code>" in html
    assert not change_request.approvals.exists()
    assert approve(reviewer, change_request).status_code == 302  # the page read again
    assert change_request.approvals.count() == 1


def test_propose__page_opened_before_another_change_was_applied__409_and_nothing_proposed(
    author, reviewer
):
    # Given an editor page opened on version 1 of a protected profile,
    Environment.objects.create(key="production", requires_change_request=True)
    stale_page = editor_data(author, **{"layer-000-maxItems": "4"})
    # and someone else's change applied since (version 2: budget 640),
    other = change_request_create(
        profile_key="profile-0", title="Budget 640", changes={"budget": 640}, user=reviewer_user()
    )
    approve(author, other)
    change_request_apply(pk=other.pk, user=reviewer_user())
    assert Profile.objects.get(key="profile-0").budget == 640

    # When the stale page proposes its draft,
    response = author.post(reverse("profile-propose", args=["profile-0"]), stale_page)

    # Then nothing is proposed (it would have carried budget 640 -> 800 back), and the editor
    # keeps the draft and says why.
    assert response.status_code == 409
    assert ChangeRequest.objects.exclude(pk=other.pk).count() == 0
    html = unescape(response.content.decode())
    assert "Someone else changed this profile after you opened it" in html
    assert 'value="4"' in html.split('name="layer-000-maxItems"')[1].split(">")[0]
    assert Profile.objects.get(key="profile-0").budget == 640


def reviewer_user() -> User:
    return User.objects.get(username="lee")

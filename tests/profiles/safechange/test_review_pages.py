"""The studio's review pages (issue 21): Propose and Promote confirm what they will open (diff,
impact, title, description, reviewers) before opening it; a reviewer's preview is read-only;
the request page carries the thread, Approve / Request changes, reviewers and the schedule."""

import datetime as dt
import re
from html import unescape

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from profiles.authoring.scenarios import scenarios_upsert
from profiles.import_export.imports import workspace_import
from profiles.models import ChangeRequest, Environment
from profiles.safechange.change_requests import change_request_create, change_request_update
from profiles.workspace.permissions import EDITORS_GROUP
from tests.profiles.conftest import RELEASE_SCENARIOS, release_workspace
from tests.profiles.formdata import editor_form_data

pytestmark = pytest.mark.django_db

EDITOR = "/profiles/profile-0/"


def editor_user(name: str) -> User:
    user = User.objects.create_user(name, password=f"{name}-password-1")
    user.groups.add(Group.objects.get_or_create(name=EDITORS_GROUP)[0])
    return user


@pytest.fixture
def release(db):
    workspace_import(document=release_workspace())
    scenarios_upsert(scenarios=RELEASE_SCENARIOS)
    Environment.objects.create(key="production", requires_change_request=True)


@pytest.fixture
def dana(release):
    return editor_user("dana")


@pytest.fixture
def lee(release):
    return editor_user("lee")


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def hidden_fields(html: str) -> list[tuple[str, str]]:
    return [
        (unescape(name), unescape(value))
        for name, value in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', html)
    ]


def confirm_page(client) -> str:
    data = editor_form_data(client.get(EDITOR).content.decode())
    data["layer-000-maxItems"] = "1"
    response = client.post(reverse("profile-propose-confirm", args=["profile-0"]), data)
    assert response.status_code == 200
    return response.content.decode()


def opened_by(user, *, reviewers=()) -> ChangeRequest:
    change_request = change_request_create(
        profile_key="profile-0", title="Smaller budget", changes={"budget": 650}, user=user
    )
    change_request.reviewers.set(reviewers)
    return change_request


def page_of(client, change_request) -> str:
    return client.get(reverse("change-request", args=[change_request.pk])).content.decode()


# --- the confirmation step -------------------------------------------------------------------


def test_propose__confirmation__shows_diff_impact_and_fields_and_opens_nothing(dana, lee):
    html = unescape(confirm_page(signed_in(dana)))

    assert not ChangeRequest.objects.exists()
    assert "rules.layer-000.maxItems" in html
    assert "This change alters 3 of 3 scenarios" in html
    assert 'value="Change profile-0: rules.layer-000.maxItems"' in html
    assert '<label for="id_description">' in html and '<label for="id_reviewers">' in html
    assert '<option value="lee">lee</option>' in html
    assert '<option value="dana">' not in html  # the author cannot review
    assert "Open change request" in html


def test_propose__confirmed__opens_it_with_title_description_and_reviewers(dana, lee):
    client = signed_in(dana)
    data = hidden_fields(confirm_page(client))
    data += [("title", "One KB item"), ("description", "Shorter answers."), ("reviewers", "lee")]

    response = client.post(reverse("profile-propose", args=["profile-0"]), dict(data))

    change_request = ChangeRequest.objects.get()
    assert response["Location"] == reverse("change-request", args=[change_request.pk])
    assert (change_request.title, change_request.description) == ("One KB item", "Shorter answers.")
    assert change_request.changes == {"rules": {"layer-000": {"maxItems": 1}}}
    assert [user.username for user in change_request.reviewers.all()] == ["lee"]


def test_propose__confirmed_with_a_reviewer_who_may_not_review__nothing_opened(dana, lee):
    client = signed_in(dana)
    data = dict(hidden_fields(confirm_page(client)))
    data.update({"title": "x", "reviewers": "dana"})

    client.post(reverse("profile-propose", args=["profile-0"]), data)

    assert not ChangeRequest.objects.exists()


def test_promote__confirmation__names_the_target_and_opens_nothing(dana, lee):
    client = signed_in(dana)

    response = client.post(
        reverse("profile-promote-confirm", args=["profile-0-staging"]), {"to": "production"}
    )

    html = unescape(response.content.decode())
    assert response.status_code == 200
    assert "Promote profile-0-staging to production" in html
    assert "budget" in html and "This change alters" in html
    assert not ChangeRequest.objects.exists()
    # Confirmed: the request opens with its reviewers.
    data = dict(hidden_fields(response.content.decode()))
    data.update({"title": "Promote staging", "reviewers": "lee"})
    client.post(reverse("profile-promote", args=["profile-0-staging"]), data)
    change_request = ChangeRequest.objects.get()
    assert (change_request.profile_key, change_request.promoted_from) == (
        "profile-0",
        "profile-0-staging",
    )
    assert [user.username for user in change_request.reviewers.all()] == ["lee"]


def test_editor__protected__propose_change_goes_to_the_confirmation(dana):
    html = signed_in(dana).get(EDITOR).content.decode()

    assert f'formaction="{reverse("profile-propose-confirm", args=["profile-0"])}"' in html


def test_preview__a_reviewer_previews_a_request__no_save_no_propose(dana, lee):
    change_request = opened_by(dana)

    html = signed_in(lee).get(reverse("change-request-preview", args=[change_request.pk]))

    text = html.content.decode()
    assert html.status_code == 200
    assert "Propose change" not in text
    assert 'id="save-button"' not in text and ">Discard<" not in text
    assert f"Back to change request #{change_request.pk}" in text
    assert "Update change request" not in text  # only its author changes what it proposes


def test_preview__the_author_updates_the_changes__a_new_revision_without_the_old_verdicts(
    dana, lee
):
    change_request = opened_by(dana)
    reviewer = signed_in(lee)
    reviewer.post(
        reverse("change-request-review", args=[change_request.pk]),
        {"verdict": "request-changes", "body": "700, please."},
    )
    author = signed_in(dana)
    preview = author.get(reverse("change-request-preview", args=[change_request.pk]))
    assert "Update change request" in preview.content.decode()
    data = editor_form_data(preview.content.decode())
    data["budget"] = "700"

    response = author.post(reverse("change-request-update-changes", args=[change_request.pk]), data)

    assert response.status_code == 302
    change_request.refresh_from_db()
    assert (change_request.revision, change_request.changes) == (2, {"budget": 700})
    assert "Changes requested</strong>" not in page_of(author, change_request)


# --- the request page ------------------------------------------------------------------------


def test_request_page__comment__shown_on_its_revision_then_marked_outdated(dana, lee):
    change_request = opened_by(dana, reviewers=[lee])
    reviewer = signed_in(lee)

    response = reviewer.post(
        reverse("change-request-comment", args=[change_request.pk]), {"body": "Why 650?"}
    )

    assert response.status_code == 302
    html = page_of(reviewer, change_request)
    assert "Why 650?" in html and "on revision 1" in html
    assert "Review requested of <strong>lee</strong>" in html
    assert "outdated" not in html.split('id="thread"')[1].split("</ol>")[0]
    change_request_update(pk=change_request.pk, user=dana, changes={"budget": 660})
    html = page_of(reviewer, change_request)
    assert "outdated: the request is at revision 2" in html


def test_request_page__request_changes__banner_and_no_apply_until_a_new_revision(dana, lee):
    Environment.objects.filter(key="production").update(approvals=0)
    change_request = opened_by(dana)
    reviewer = signed_in(lee)
    html = page_of(reviewer, change_request)
    assert 'value="apply"' in html  # no approval needed here
    etag = re.search(r'name="etag" value="([^"]+)"', html).group(1)

    reviewer.post(
        reverse("change-request-review", args=[change_request.pk]),
        {"verdict": "request-changes", "body": "Keep 800.", "etag": unescape(etag)},
    )

    html = page_of(reviewer, change_request)
    assert "Changes requested</strong> by lee on revision 1" in html
    assert 'value="apply"' not in html
    assert "requested changes" in html and "Keep 800." in html


def test_request_page__request_changes_without_words__refused(dana, lee):
    change_request = opened_by(dana)
    reviewer = signed_in(lee)

    response = reviewer.post(
        reverse("change-request-review", args=[change_request.pk]),
        {"verdict": "request-changes", "body": ""},
        follow=True,
    )

    assert "body: is required" in response.content.decode()
    assert not change_request.comments.exists()


def test_request_page__author__edits_reviewers_but_has_no_verdict_form(dana, lee):
    change_request = opened_by(dana)
    author = signed_in(dana)

    html = page_of(author, change_request)
    assert 'name="verdict"' not in html
    author.post(reverse("change-request-reviewers", args=[change_request.pk]), {"reviewers": "lee"})

    assert [user.username for user in change_request.reviewers.all()] == ["lee"]


def test_request_page__approved__schedule_apply_stores_the_time(dana, lee):
    Environment.objects.filter(key="production").update(approvals=0)
    change_request = opened_by(dana)
    client = signed_in(lee)
    assert 'id="apply-at"' in page_of(client, change_request)
    moment = (timezone.now() + dt.timedelta(days=1)).replace(second=0, microsecond=0)

    client.post(
        reverse("change-request-schedule", args=[change_request.pk]),
        {"apply_at": moment.strftime("%Y-%m-%dT%H:%M")},
    )

    change_request.refresh_from_db()
    assert (change_request.apply_at, change_request.apply_scheduled_by) == (moment, lee)
    assert "Applies at" in page_of(client, change_request)
    client.post(reverse("change-request-schedule", args=[change_request.pk]), {"clear": "1"})
    change_request.refresh_from_db()
    assert change_request.apply_at is None


def test_request_page__not_approved__no_schedule_control(dana, lee):
    change_request = opened_by(dana)

    assert 'id="apply-at"' not in page_of(signed_in(lee), change_request)


def test_list__review_requests_for_me__the_requests_asking_for_mine(dana, lee):
    asked = opened_by(dana, reviewers=[lee])
    opened_by(dana)

    html = signed_in(lee).get(reverse("change-request-list") + "?tab=requested").content.decode()

    assert re.findall(r'data-change-request="(\d+)"', html) == [str(asked.pk)]
    assert "Review requests for me" in html

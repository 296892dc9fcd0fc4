"""Reviews with people in them over the API (issue 21): requested reviewers, the review thread
with the revision of each entry, "request changes" blocking apply until a new revision,
approvals recorded in the thread, scheduled apply, and the emails each of them sends."""

import datetime as dt
import json
import logging

import pytest
from django.core import mail
from django.utils import timezone

from profiles.models import ChangeRequest, ChangeRequestComment, Profile
from tests.profiles.conftest import API, token_client

pytestmark = pytest.mark.django_db

CHANGE_REQUESTS = API + "change-requests"


@pytest.fixture
def people(editor, reviewer):
    """The author (editor) and the reviewer, with email addresses."""
    editor.email = "editor@example.com"
    editor.save()
    reviewer.email = "reviewer@example.com"
    reviewer.save()
    return editor, reviewer


def send(client, method: str, url: str, body: dict | None = None, **headers):
    return getattr(client, method)(
        url,
        json.dumps(body if body is not None else {}),
        content_type="application/json",
        **headers,
    )


def propose(client, **fields):
    body = {"profile": "profile-0", "title": "Smaller budget", "changes": {"budget": 650}}
    return send(client, "post", CHANGE_REQUESTS, {**body, **fields})


def etag_of(client, change_request_id: int) -> str:
    return client.get(f"{CHANGE_REQUESTS}/{change_request_id}").headers["ETag"]


def comments_of(client, change_request_id: int) -> list[dict]:
    response = client.get(f"{CHANGE_REQUESTS}/{change_request_id}/comments")
    assert response.status_code == 200
    return response.json()["results"]


def request_changes(client, change_request_id: int, body="Keep the budget at 700."):
    return send(
        client, "post", f"{CHANGE_REQUESTS}/{change_request_id}/request-changes", {"body": body}
    )


def approve(client, change_request_id: int, body=None):
    return send(
        client,
        "post",
        f"{CHANGE_REQUESTS}/{change_request_id}/approve",
        {} if body is None else {"body": body},
        HTTP_IF_MATCH=etag_of(client, change_request_id),
    )


def apply(client, change_request_id: int):
    return client.post(f"{CHANGE_REQUESTS}/{change_request_id}/apply")


# --- requested reviewers ---------------------------------------------------------------------


def test_create__with_a_reviewer__listed_and_emailed_with_a_link_after_commit(
    release, people, editor_client, django_capture_on_commit_callbacks, settings
):
    settings.SITE_URL = "https://studio.example.com"
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = propose(editor_client, reviewers=["reviewer"])

    assert response.status_code == 201
    assert response.json()["reviewers"] == ["reviewer"]
    assert len(callbacks) == 1  # sent once the request was stored, not before
    (message,) = mail.outbox
    assert message.to == ["reviewer@example.com"]
    assert "your review is requested" in message.subject
    assert f"https://studio.example.com/changes/{response.json()['id']}/" in message.body


@pytest.mark.parametrize(
    ("reviewers", "path", "words"),
    [
        (["reviewer", "nobody"], "reviewers[1]", '"nobody" is not a user who may review'),
        (["reader"], "reviewers[0]", "is not a user who may review"),
        (["editor"], "reviewers[0]", "the author of a change request cannot review it"),
        ("reviewer", "reviewers", "must be a list of usernames"),
        ([7], "reviewers[0]", "must be a username"),
    ],
)
def test_create__reviewer_not_allowed__400_naming_it_and_nothing_opened(
    release, people, reader, editor_client, reviewers, path, words
):
    response = propose(editor_client, reviewers=reviewers)

    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["path"]) == ("INVALID_REQUEST", path)
    assert words in error["message"]
    assert not ChangeRequest.objects.exists()


def test_create__more_reviewers_than_the_bound__400(release, people, editor_client):
    response = propose(editor_client, reviewers=[f"user-{index}" for index in range(21)])

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "reviewers[20]"


def test_update__author_adds_a_reviewer__only_the_new_one_is_emailed(
    release, people, staff, editor_client, django_capture_on_commit_callbacks
):
    staff.email = "staff@example.com"
    staff.save()
    opened = propose(editor_client, reviewers=["reviewer"]).json()
    mail.outbox.clear()

    with django_capture_on_commit_callbacks(execute=True):
        response = send(
            editor_client,
            "patch",
            f"{CHANGE_REQUESTS}/{opened['id']}",
            {"reviewers": ["reviewer", "staff"]},
        )

    assert response.status_code == 200
    assert response.json()["reviewers"] == ["reviewer", "staff"]
    assert response.json()["revision"] == 1  # who is asked is not what is proposed
    assert [message.to for message in mail.outbox] == [["staff@example.com"]]


def test_update__reviewers_by_someone_else__403(release, people, editor_client, reviewer_client):
    opened = propose(editor_client).json()

    response = send(
        reviewer_client, "patch", f"{CHANGE_REQUESTS}/{opened['id']}", {"reviewers": ["staff"]}
    )

    assert response.status_code == 403
    assert ChangeRequest.objects.get().reviewers.count() == 0


def test_list__reviewer_me__the_requests_asking_for_my_review(
    release, people, staff, editor_client, reviewer_client
):
    asked = propose(editor_client, reviewers=["reviewer"]).json()
    propose(editor_client, reviewers=["staff"], changes={"budget": 640})

    listed = reviewer_client.get(CHANGE_REQUESTS + "/", {"reviewer": "me"}).json()["results"]

    assert [entry["id"] for entry in listed] == [asked["id"]]
    refused = reviewer_client.get(CHANGE_REQUESTS + "/", {"reviewer": "lee"})
    assert refused.status_code == 400
    assert refused.json()["error"]["path"] == "reviewer"


# --- the thread ------------------------------------------------------------------------------


def test_comment__listed_in_order_with_revision_and_outdated_after_an_edit(
    release, people, editor_client, reviewer_client, django_capture_on_commit_callbacks
):
    opened = propose(editor_client).json()
    with django_capture_on_commit_callbacks(execute=True):
        first = send(
            reviewer_client,
            "post",
            f"{CHANGE_REQUESTS}/{opened['id']}/comments",
            {"body": "Why 650?"},
        )
    assert first.status_code == 201
    assert (first.json()["author"], first.json()["kind"], first.json()["revision"]) == (
        "reviewer",
        "comment",
        1,
    )
    # The author is told, with the comment quoted.
    (message,) = mail.outbox
    assert message.to == ["editor@example.com"]
    assert "> Why 650?" in message.body

    # When the author answers (no email to themselves) and edits the request,
    with django_capture_on_commit_callbacks(execute=True):
        send(
            editor_client,
            "post",
            f"{CHANGE_REQUESTS}/{opened['id']}/comments",
            {"body": "Mobile answers are shorter."},
        )
    assert len(mail.outbox) == 1
    send(editor_client, "patch", f"{CHANGE_REQUESTS}/{opened['id']}", {"changes": {"budget": 660}})

    # Then the thread is in order, each entry on the revision it was written on, outdated now.
    thread = comments_of(reviewer_client, opened["id"])
    assert [(entry["author"], entry["revision"], entry["outdated"]) for entry in thread] == [
        ("reviewer", 1, True),
        ("editor", 1, True),
    ]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({}, "body: is required"),
        ({"body": "   "}, "body: is required"),
        ({"body": 12}, "body: must be a string"),
        ({"body": "x" * 10_001}, "body: must be at most 10,000 characters"),
        ({"body": "a\u0000b"}, "body: "),
    ],
)
def test_comment__body_invalid__400_at_body_and_nothing_recorded(
    release, people, editor_client, reviewer_client, body, words
):
    opened = propose(editor_client).json()

    response = send(reviewer_client, "post", f"{CHANGE_REQUESTS}/{opened['id']}/comments", body)

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "body"
    assert response.json()["error"]["message"].startswith(words)
    assert not ChangeRequestComment.objects.exists()


def test_comment__unknown_field__400(release, people, editor_client, reviewer_client):
    opened = propose(editor_client).json()

    response = send(
        reviewer_client,
        "post",
        f"{CHANGE_REQUESTS}/{opened['id']}/comments",
        {"body": "ok", "kind": "approved"},
    )

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "kind"


def test_comment__reader__403_but_reads_the_thread(
    release, people, reader, editor_client, reviewer_client
):
    opened = propose(editor_client).json()
    send(reviewer_client, "post", f"{CHANGE_REQUESTS}/{opened['id']}/comments", {"body": "Hm."})
    reader_client = token_client(reader)

    response = send(
        reader_client, "post", f"{CHANGE_REQUESTS}/{opened['id']}/comments", {"body": "Me too"}
    )

    assert response.status_code == 403
    assert [entry["body"] for entry in comments_of(reader_client, opened["id"])] == ["Hm."]


def test_comment__unknown_request__404(release, people, reviewer_client):
    response = send(reviewer_client, "post", f"{CHANGE_REQUESTS}/999/comments", {"body": "Hm."})

    assert response.status_code == 404


def test_comment__throttled_at_a_persons_pace__429(
    release, people, editor_client, reviewer_client, settings
):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "comment": "2/minute",
        },
    }
    opened = propose(editor_client).json()
    url = f"{CHANGE_REQUESTS}/{opened['id']}/comments"

    statuses = [send(reviewer_client, "post", url, {"body": "again"}).status_code for _ in range(3)]

    assert statuses == [201, 201, 429]
    assert ChangeRequestComment.objects.count() == 2


def test_comment__mail_server_down__the_comment_is_stored_and_the_error_logged(
    release,
    people,
    editor_client,
    reviewer_client,
    settings,
    caplog,
    django_capture_on_commit_callbacks,
):
    # Given a mail server that refuses connections
    settings.MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {"host": "127.0.0.1", "port": 1, "timeout": 2},
        }
    }
    opened = propose(editor_client).json()

    with (
        caplog.at_level(logging.ERROR, logger="profiles.notifications"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = send(
            reviewer_client,
            "post",
            f"{CHANGE_REQUESTS}/{opened['id']}/comments",
            {"body": "Looks fine."},
        )

    assert response.status_code == 201
    assert ChangeRequestComment.objects.get().body == "Looks fine."
    assert "a review notification could not be sent" in caplog.text


# --- verdicts --------------------------------------------------------------------------------


def test_request_changes__blocks_apply_until_a_new_revision__then_approve_and_apply(
    release, people, editor_client, reviewer_client, django_capture_on_commit_callbacks
):
    opened = propose(editor_client, reviewers=["reviewer"]).json()
    mail.outbox.clear()

    # When the reviewer approves, then asks for changes on the same revision,
    assert approve(reviewer_client, opened["id"]).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        asked = request_changes(reviewer_client, opened["id"])
    assert asked.status_code == 200
    assert asked.json()["changesRequestedBy"] == ["reviewer"]
    assert asked.json()["approvals"] == []  # their approval is withdrawn
    assert "requested changes" in mail.outbox[-1].subject

    # Then apply is refused, naming who asked,
    refused = apply(editor_client, opened["id"])
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert (error["code"], error["path"], error["changesRequestedBy"]) == (
        "CHANGES_REQUESTED",
        "reviews",
        ["reviewer"],
    )
    assert Profile.objects.get(key="profile-0").budget == 800

    # until the author edits it (a new revision) and the reviewer approves that one.
    edited = send(
        editor_client, "patch", f"{CHANGE_REQUESTS}/{opened['id']}", {"changes": {"budget": 700}}
    )
    assert (edited.json()["revision"], edited.json()["changesRequestedBy"]) == (2, [])
    assert approve(reviewer_client, opened["id"], body="700 it is.").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        assert apply(reviewer_client, opened["id"]).status_code == 200
    assert Profile.objects.get(key="profile-0").budget == 700
    assert "applied" in mail.outbox[-1].subject and mail.outbox[-1].to == ["editor@example.com"]

    thread = comments_of(editor_client, opened["id"])
    assert [(entry["kind"], entry["revision"]) for entry in thread] == [
        ("approved", 1),
        ("changes-requested", 1),
        ("approved", 2),
    ]
    assert thread[-1]["body"] == "700 it is."


def test_request_changes__then_approves_the_same_revision__the_latest_verdict_counts(
    release, people, editor_client, reviewer_client
):
    opened = propose(editor_client).json()
    request_changes(reviewer_client, opened["id"])

    approve(reviewer_client, opened["id"])

    assert apply(editor_client, opened["id"]).status_code == 200


def test_request_changes__rebase_onto_a_new_version__clears_it(
    release, people, editor_client, reviewer_client, staff_client
):
    opened = propose(editor_client).json()
    request_changes(reviewer_client, opened["id"])
    # the profile moves on (production is not protected here), and the author rebases
    send(staff_client, "patch", API + "profiles/profile-0", {"name": "Renamed"})

    rebased = editor_client.post(f"{CHANGE_REQUESTS}/{opened['id']}/rebase").json()

    assert (rebased["revision"], rebased["changesRequestedBy"]) == (2, [])


@pytest.mark.parametrize(
    ("body", "status", "path"), [({}, 400, "body"), ({"body": ""}, 400, "body")]
)
def test_request_changes__without_words__400(
    release, people, editor_client, reviewer_client, body, status, path
):
    opened = propose(editor_client).json()

    response = send(
        reviewer_client, "post", f"{CHANGE_REQUESTS}/{opened['id']}/request-changes", body
    )

    assert response.status_code == status
    assert response.json()["error"]["path"] == path


def test_request_changes__by_the_author__403(release, people, editor_client):
    opened = propose(editor_client).json()

    response = request_changes(editor_client, opened["id"])

    assert response.status_code == 403
    assert not ChangeRequestComment.objects.exists()


def test_request_changes__stale_if_match__412_and_nothing_recorded(
    release, people, editor_client, reviewer_client
):
    opened = propose(editor_client).json()
    read = etag_of(reviewer_client, opened["id"])
    send(editor_client, "patch", f"{CHANGE_REQUESTS}/{opened['id']}", {"title": "Other"})

    response = send(
        reviewer_client,
        "post",
        f"{CHANGE_REQUESTS}/{opened['id']}/request-changes",
        {"body": "No."},
        HTTP_IF_MATCH=read,
    )

    assert response.status_code == 412
    assert not ChangeRequestComment.objects.exists()


def test_approve__body_not_text__400_and_not_approved(
    release, people, editor_client, reviewer_client
):
    opened = propose(editor_client).json()

    response = send(
        reviewer_client,
        "post",
        f"{CHANGE_REQUESTS}/{opened['id']}/approve",
        {"body": ["yes"]},
        HTTP_IF_MATCH=etag_of(reviewer_client, opened["id"]),
    )

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "body"
    assert ChangeRequest.objects.get().approvals.count() == 0


# --- scheduled apply -------------------------------------------------------------------------


def in_an_hour() -> str:
    return (timezone.now() + dt.timedelta(hours=1)).isoformat()


def test_schedule__future_time__stored_with_who_scheduled_it_and_cleared_by_null(
    release, people, editor_client, reviewer_client
):
    opened = propose(editor_client).json()
    url = f"{CHANGE_REQUESTS}/{opened['id']}"
    moment = in_an_hour()

    scheduled = send(reviewer_client, "patch", url, {"applyAt": moment})

    assert scheduled.status_code == 200
    assert dt.datetime.fromisoformat(scheduled.json()["applyAt"]) == dt.datetime.fromisoformat(
        moment
    )
    assert scheduled.json()["applyScheduledBy"] == "reviewer"
    assert scheduled.json()["revision"] == 1
    cleared = send(reviewer_client, "patch", url, {"applyAt": None})
    assert (cleared.json()["applyAt"], cleared.json()["applyScheduledBy"]) == (None, None)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("2020-01-01T00:00:00Z", "applyAt: must be in the future"),
        ("2999-01-01T00:00:00Z", "applyAt: must be within 366 days"),
        ("tomorrow", "applyAt: must be an ISO 8601 date and time"),
        ("2026-13-45T00:00:00Z", "applyAt: must be an ISO 8601 date and time"),
        (12, "applyAt: must be an ISO 8601 date and time or null"),
    ],
)
def test_schedule__time_invalid__400_at_apply_at(release, people, editor_client, value, words):
    opened = propose(editor_client).json()

    response = send(editor_client, "patch", f"{CHANGE_REQUESTS}/{opened['id']}", {"applyAt": value})

    assert response.status_code == 400
    assert (
        response.json()["error"]["path"],
        response.json()["error"]["message"][: len(words)],
    ) == (
        "applyAt",
        words,
    )
    assert ChangeRequest.objects.get().apply_at is None


def test_schedule__without_time_zone__400(release, people, editor_client):
    opened = propose(editor_client).json()
    naive = (dt.datetime.now() + dt.timedelta(days=1)).replace(microsecond=0).isoformat()

    response = send(editor_client, "patch", f"{CHANGE_REQUESTS}/{opened['id']}", {"applyAt": naive})

    assert response.status_code == 400
    assert "time zone" in response.json()["error"]["message"]


def test_schedule__closed_request__409_not_open(release, people, editor_client):
    opened = propose(editor_client).json()
    editor_client.post(f"{CHANGE_REQUESTS}/{opened['id']}/close")

    response = send(
        editor_client, "patch", f"{CHANGE_REQUESTS}/{opened['id']}", {"applyAt": in_an_hour()}
    )

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "CHANGE_REQUEST_NOT_OPEN"


def test_schedule__reader__403(release, people, reader, editor_client):
    opened = propose(editor_client).json()

    response = send(
        token_client(reader),
        "patch",
        f"{CHANGE_REQUESTS}/{opened['id']}",
        {"applyAt": in_an_hour()},
    )

    assert response.status_code == 403


def test_update__texts_and_reviewers_together__all_or_nothing(release, people, editor_client):
    opened = propose(editor_client).json()

    response = send(
        editor_client,
        "patch",
        f"{CHANGE_REQUESTS}/{opened['id']}",
        {"title": "New title", "reviewers": ["nobody"]},
    )

    assert response.status_code == 400
    assert ChangeRequest.objects.get().title == "Smaller budget"


# --- the schema ------------------------------------------------------------------------------


def test_schema__review_endpoints__described_with_bodies_and_examples(client):
    schema = client.get(API + "schema/", {"format": "json"}).json()
    paths = schema["paths"]

    comments = paths["/api/v1/change-requests/{id}/comments"]
    assert {"get", "post"} <= set(comments)
    assert "examples" in comments["post"]["requestBody"]["content"]["application/json"]
    changes = paths["/api/v1/change-requests/{id}/request-changes"]["post"]
    assert "examples" in changes["requestBody"]["content"]["application/json"]
    assert "CHANGES_REQUESTED" in schema["components"]["schemas"]["ErrorCodeEnum"]["enum"]
    update = schema["components"]["schemas"]["PatchedChangeRequestUpdateRequest"]["properties"]
    assert {"reviewers", "applyAt"} <= set(update)

"""What a change request's approvals stand for (issue 18, safe change): they are counted against
the environment the profile is in when the request is applied, they approve the revision the
reviewer read (ETag, If-Match), they count only while their givers may still review, and a
request's texts are bounded and follow the text rule."""

import json

import pytest

from profiles.models import ChangeRequest, ChangeRequestApproval, Environment, Profile, Scenario
from tests.profiles.conftest import API

pytestmark = pytest.mark.django_db

CHANGE_REQUESTS = API + "change-requests"


def send(client, method: str, url: str, body: dict, **headers):
    """Send ``body`` as JSON with ASCII escapes, as clients do (a lone surrogate is sent as
    ``\\ud800``, which a UTF-8 body could not carry)."""
    return getattr(client, method)(
        url, json.dumps(body), content_type="application/json", **headers
    )


def propose(client, *, profile="profile-0", changes=None, headers=None, **fields):
    body = {"profile": profile, "title": "Smaller budget", "changes": changes or {"budget": 650}}
    return send(client, "post", CHANGE_REQUESTS, {**body, **fields}, **(headers or {}))


def read(client, change_request_id: int):
    return client.get(f"{CHANGE_REQUESTS}/{change_request_id}")


def approve(client, change_request_id: int, etag: str | None):
    headers = {} if etag is None else {"HTTP_IF_MATCH": etag}
    return client.post(f"{CHANGE_REQUESTS}/{change_request_id}/approve", **headers)


def approve_as_read(client, change_request_id: int):
    return approve(client, change_request_id, read(client, change_request_id).headers["ETag"])


def apply(client, change_request_id: int):
    return client.post(f"{CHANGE_REQUESTS}/{change_request_id}/apply")


# --- 4. approvals are counted against the environment at apply time -------------------------


def test_apply__profile_moved_into_a_stricter_environment__needs_its_approvals(
    release, editor_client, reviewer_client, staff_client
):
    # Given a request opened on a profile with no environment (1 approval),
    assert Profile.objects.get(key="profile-1").environment is None
    opened = propose(editor_client, profile="profile-1").json()
    assert opened["approvalsRequired"] == 1
    # the profile then moved into prod-eu, which staff protect with 2 approvals,
    moved = editor_client.patch(
        API + "profiles/profile-1", {"environment": "prod-eu"}, format="json"
    )
    assert moved.status_code == 200
    staff_client.put(
        API + "environments/prod-eu", {"requiresChangeRequest": True, "approvals": 2}, format="json"
    )
    assert editor_client.post(f"{CHANGE_REQUESTS}/{opened['id']}/rebase").status_code == 200
    # When one reviewer approves and someone applies,
    assert approve_as_read(reviewer_client, opened["id"]).status_code == 200
    response = apply(editor_client, opened["id"])

    # Then it is refused: prod-eu asks for two approvals now.
    assert response.status_code == 409
    error = response.json()["error"]
    assert (error["code"], error["approvals"], error["approvalsRequired"]) == (
        "APPROVALS_REQUIRED",
        1,
        2,
    )
    assert 'environment "prod-eu"' in error["message"]
    assert Profile.objects.get(key="profile-1").budget != 650
    shown = read(editor_client, opened["id"]).json()
    assert (shown["environment"], shown["approvalsRequired"]) == ("prod-eu", 2)
    # A second reviewer's approval makes it apply.
    assert approve_as_read(staff_client, opened["id"]).status_code == 200
    assert apply(editor_client, opened["id"]).status_code == 200
    assert Profile.objects.get(key="profile-1").budget == 650


def test_apply__environment_protection_raised_after_approval__counts_the_new_requirement(
    release, editor_client, reviewer_client
):
    opened = propose(editor_client).json()
    approve_as_read(reviewer_client, opened["id"])
    Environment.objects.update_or_create(key="production", defaults={"approvals": 2})

    response = apply(editor_client, opened["id"])

    assert response.status_code == 409
    assert response.json()["error"]["approvalsRequired"] == 2


def test_list__approvals_required__of_the_environment_the_profile_is_in_now(
    release, editor_client, reader_client
):
    opened = propose(editor_client, profile="profile-1").json()
    Profile.objects.filter(key="profile-1").update(environment="prod-eu")
    Environment.objects.create(key="prod-eu", requires_change_request=True, approvals=3)

    listed = reader_client.get(CHANGE_REQUESTS).json()["results"]

    entry = next(entry for entry in listed if entry["id"] == opened["id"])
    assert (entry["environment"], entry["approvalsRequired"]) == ("prod-eu", 3)


# --- 5. an approval approves the revision the reviewer read -----------------------------------


def test_approve__request_edited_after_it_was_read__412_and_nothing_approved(
    release, editor_client, reviewer_client
):
    opened = propose(editor_client).json()
    seen = read(reviewer_client, opened["id"]).headers["ETag"]
    # The author changes the request between the reviewer's read and their click.
    edited = editor_client.patch(
        f"{CHANGE_REQUESTS}/{opened['id']}", {"changes": {"budget": 10}}, format="json"
    )
    assert edited.status_code == 200
    assert edited.headers["ETag"] != seen

    response = approve(reviewer_client, opened["id"], seen)

    assert response.status_code == 412
    error = response.json()["error"]
    assert (error["code"], error["path"]) == ("PRECONDITION_FAILED", "If-Match")
    assert "changed since you read it" in error["message"]
    assert response.headers["ETag"] == edited.headers["ETag"]
    assert not ChangeRequestApproval.objects.exists()
    # Approving what is there now works.
    assert approve(reviewer_client, opened["id"], edited.headers["ETag"]).status_code == 200


def test_approve__without_if_match__428_naming_the_etag(release, editor_client, reviewer_client):
    opened = propose(editor_client).json()

    response = approve(reviewer_client, opened["id"], None)

    assert response.status_code == 428
    error = response.json()["error"]
    assert (error["code"], error["path"]) == ("PRECONDITION_REQUIRED", "If-Match")
    assert error["etag"] == read(reviewer_client, opened["id"]).headers["ETag"]
    assert approve(reviewer_client, opened["id"], "*").status_code == 428
    assert not ChangeRequestApproval.objects.exists()


def test_etag__grows_with_edits_and_rebases_not_with_reads_or_approvals(
    release, editor_client, reviewer_client
):
    opened = propose(editor_client)
    first = opened.headers["ETag"]
    assert read(reviewer_client, opened.json()["id"]).headers["ETag"] == first
    approved = approve(reviewer_client, opened.json()["id"], first)
    assert approved.headers["ETag"] == first
    assert approved.json()["approvals"][0]["revision"] == opened.json()["revision"] == 1

    retitled = editor_client.patch(
        f"{CHANGE_REQUESTS}/{opened.json()['id']}", {"title": "Budget 650"}, format="json"
    )

    assert retitled.headers["ETag"] != first
    assert retitled.json()["revision"] == 2
    assert retitled.json()["approvals"] == []  # an edit withdraws the approvals


def test_patch__stale_if_match__412_and_nothing_changed(release, editor_client):
    opened = propose(editor_client)
    etag = opened.headers["ETag"]
    url = f"{CHANGE_REQUESTS}/{opened.json()['id']}"
    editor_client.patch(url, {"title": "First edit"}, format="json", HTTP_IF_MATCH=etag)

    response = editor_client.patch(url, {"title": "Second"}, format="json", HTTP_IF_MATCH=etag)

    assert response.status_code == 412
    assert ChangeRequest.objects.get().title == "First edit"


# --- 6. a proposal is written against the version its author saw ------------------------------


def test_create__if_match_of_an_older_version__412_and_nothing_proposed(
    release, editor_client, staff_client
):
    etag = editor_client.get(API + "profiles/profile-1").headers["ETag"]
    staff_client.patch(API + "profiles/profile-1/rules/layer-000", {"maxItems": 7}, format="json")

    response = propose(
        editor_client, profile="profile-1", changes={"budget": 5}, headers={"HTTP_IF_MATCH": etag}
    )

    assert response.status_code == 412
    assert not ChangeRequest.objects.exists()


# --- 7. approvals of users who may no longer review ------------------------------------------


@pytest.mark.parametrize("lost", ["deactivated", "removed from editors"])
def test_apply__approver_may_no_longer_review__approval_not_counted(
    release, editor_client, reviewer, reviewer_client, lost
):
    opened = propose(editor_client).json()
    approve_as_read(reviewer_client, opened["id"])
    if lost == "deactivated":
        reviewer.is_active = False
        reviewer.save()
    else:
        reviewer.groups.clear()

    response = apply(editor_client, opened["id"])

    assert response.status_code == 409
    error = response.json()["error"]
    assert (error["code"], error["approvals"]) == ("APPROVALS_REQUIRED", 0)
    assert "no longer review" in error["message"]
    assert Profile.objects.get(key="profile-0").budget == 800
    shown = read(editor_client, opened["id"]).json()
    assert [(a["user"], a["counted"]) for a in shown["approvals"]] == [("reviewer", False)]


def test_apply__approver_promoted_to_staff_after_losing_editors__still_counts(
    release, editor_client, reviewer, reviewer_client
):
    opened = propose(editor_client).json()
    approve_as_read(reviewer_client, opened["id"])
    reviewer.groups.clear()
    reviewer.is_staff = True
    reviewer.save()

    assert apply(editor_client, opened["id"]).status_code == 200


# --- 8. bounded descriptions, and lists without long text -------------------------------------


def test_create__description_over_the_limit__400_at_description(release, editor_client):
    response = propose(editor_client, description="x" * 10_001)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["path"] == "description"
    assert "at most 10,000 characters" in error["message"]
    assert not ChangeRequest.objects.exists()


def test_patch__description_over_the_limit__400_and_unchanged(release, editor_client):
    opened = propose(editor_client, description="Why").json()

    response = editor_client.patch(
        f"{CHANGE_REQUESTS}/{opened['id']}", {"description": "y" * 10_001}, format="json"
    )

    assert response.status_code == 400
    assert ChangeRequest.objects.get().description == "Why"


def test_list__leaves_the_description_out__detail_has_it(release, editor_client):
    opened = propose(editor_client, description="d" * 10_000).json()

    listed = editor_client.get(CHANGE_REQUESTS)

    entry = listed.json()["results"][0]
    assert "description" not in entry and "diff" not in entry and "impact" not in entry
    assert len(listed.content) < 5_000
    assert read(editor_client, opened["id"]).json()["description"] == "d" * 10_000


def test_scenario__description_over_1000_characters__400_at_description(release, editor_client):
    response = editor_client.post(
        API + "scenarios",
        {"name": "long one", "profile": "profile-0", "input": {}, "description": "s" * 1_001},
        format="json",
    )

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "description"
    assert not Scenario.objects.filter(name="long one").exists()


# --- 9. the text rule on every stored text -----------------------------------------------------


BAD_TEXTS = {"NUL": "before\x00after", "lone surrogate": "before\ud800after"}


@pytest.mark.parametrize("text", BAD_TEXTS.values(), ids=BAD_TEXTS.keys())
def test_create_patch_promote__reviewer_name_breaking_the_text_rule__400_at_the_reviewer(
    release, editor_client, staff, text
):
    # A name PostgreSQL cannot look up (NUL) or UTF-8 cannot encode (a lone surrogate) was
    # looked up anyway: 500 on PostgreSQL (schemathesis, issue 33).
    reviewers = [staff.username, f"re{text}viewer"]
    created = propose(editor_client, reviewers=reviewers)
    opened = propose(editor_client).json()
    patched = send(
        editor_client, "patch", f"{CHANGE_REQUESTS}/{opened['id']}", {"reviewers": reviewers}
    )
    promoted = send(
        editor_client,
        "post",
        API + "profiles/profile-0-staging/promote",
        {"to": "production", "reviewers": reviewers},
    )

    for response in (created, patched, promoted):
        assert response.status_code == 400, response.content
        error = response.json()["error"]
        assert error["path"] == "reviewers[1]"
        assert "U+0000" in error["message"]
    assert ChangeRequest.objects.count() == 1


@pytest.mark.parametrize("text", BAD_TEXTS.values(), ids=BAD_TEXTS.keys())
@pytest.mark.parametrize("field", ["title", "description"])
def test_create_patch_promote__bad_text__400_naming_the_field(release, editor_client, field, text):
    created = propose(editor_client, **{field: text})
    opened = propose(editor_client).json()
    patched = send(editor_client, "patch", f"{CHANGE_REQUESTS}/{opened['id']}", {field: text})
    promoted = send(
        editor_client,
        "post",
        API + "profiles/profile-0-staging/promote",
        {"to": "production", field: text},
    )

    for response in (created, patched, promoted):
        assert response.status_code == 400, response.content
        error = response.json()["error"]
        assert error["path"] == field
        assert "U+0000" in error["message"] or "surrogate" in error["message"]
    assert ChangeRequest.objects.count() == 1
    assert ChangeRequest.objects.get().title == "Smaller budget"


# --- a title is one line (issue 33, item 14) --------------------------------------------------


LINE_BREAK_TITLES = {"LF": "Smaller\nbudget", "CRLF": "Smaller\r\nbudget", "CR": "Smaller\rbudget"}


@pytest.mark.parametrize("title", LINE_BREAK_TITLES.values(), ids=LINE_BREAK_TITLES.keys())
def test_create_patch_promote_set__title_with_a_line_break__400_at_title(
    release, editor_client, title
):
    created = propose(editor_client, title=title)
    opened = propose(editor_client).json()
    patched = send(editor_client, "patch", f"{CHANGE_REQUESTS}/{opened['id']}", {"title": title})
    promoted = send(
        editor_client,
        "post",
        API + "profiles/profile-0-staging/promote",
        {"to": "production", "title": title},
    )
    change_set = send(
        editor_client,
        "post",
        CHANGE_REQUESTS,
        {
            "title": title,
            "changes": [
                {"kind": "profile", "op": "update", "key": "profile-0", "value": {"budget": 640}}
            ],
        },
    )

    for response in (created, patched, promoted, change_set):
        assert response.status_code == 400, response.content
        error = response.json()["error"]
        assert error["path"] == "title"
        assert "one line" in error["message"]
    assert ChangeRequest.objects.count() == 1
    assert ChangeRequest.objects.get().title == "Smaller budget"

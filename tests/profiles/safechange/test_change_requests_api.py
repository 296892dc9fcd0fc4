"""Change requests over the API: impact before review, approvals (never your own), apply as one
version by the requester, stale bases, rebase, edits withdrawing approvals, promotion, and the
dry-run impact endpoint."""

import pytest

from profiles.authoring.scenarios import scenarios_upsert
from profiles.models import (
    ChangeRequest,
    Environment,
    Profile,
    ProfileVersion,
    Rule,
    WorkspaceVersion,
)
from tests.profiles.conftest import API

pytestmark = pytest.mark.django_db

CHANGE_REQUESTS = API + "change-requests"
FEWER_ITEMS = {"budget": 700, "rules": {"layer-000": {"maxItems": 1}}}


@pytest.fixture
def protected(release):
    Environment.objects.create(key="production", requires_change_request=True, approvals=1)
    return release


def propose(client, changes=None, profile="profile-0", title="Fewer items"):
    return client.post(
        CHANGE_REQUESTS,
        {"profile": profile, "title": title, "changes": changes or FEWER_ITEMS},
        format="json",
    )


def action(client, change_request_id: int, name: str):
    """Post an action; an approval names the revision just read (its ETag), as a reviewer's
    client does."""
    headers = {}
    if name == "approve":
        read = client.get(f"{CHANGE_REQUESTS}/{change_request_id}")
        headers["HTTP_IF_MATCH"] = read.headers.get("ETag", "")
    return client.post(f"{CHANGE_REQUESTS}/{change_request_id}/{name}", **headers)


def resolve_admitted(client, scenario: str) -> list[str]:
    resolution = client.post(API + "resolve", {"scenario": scenario}, format="json").json()
    return [
        f"{layer['layer']}/{unit}"
        for layer in resolution["layers"]
        for unit in layer["rendered"]["items"]
    ]


# --- create and impact ---------------------------------------------------------------------


def test_create__valid_changes__201_open_with_base_version_and_no_approvals(
    protected, editor_client
):
    response = propose(editor_client)

    assert response.status_code == 201
    body = response.json()
    assert response["Location"].endswith(f"/api/v1/change-requests/{body['id']}")
    assert body["status"] == "open"
    assert body["author"] == "editor"
    assert body["baseVersion"] == 1
    assert body["changes"] == FEWER_ITEMS
    assert body["approvals"] == []
    assert body["approvalsRequired"] == 1
    assert body["diff"] == [
        {"path": "budget", "from": 800, "to": 700},
        {"path": "rules.layer-000.maxItems", "from": 3, "to": 1},
    ]


def test_create__impact__one_entry_per_saved_scenario_matching_real_resolutions(
    protected, editor_client, staff_client, settings
):
    before = {name: resolve_admitted(editor_client, name) for name in ("refund question",)}

    body = propose(editor_client).json()

    assert [entry["scenario"] for entry in body["impact"]] == [
        "refund question",
        "another customer",
        "no message",
    ]
    entry = body["impact"][0]
    assert entry["before"]["admitted"] == before["refund question"]
    assert set(entry) == {"scenario", "before", "after", "changed"}
    assert set(entry["after"]) == {"status", "estimatedTokens", "admitted"}
    # After applying, the scenario resolves to what the impact predicted.
    action(staff_client, body["id"], "approve")
    assert action(editor_client, body["id"], "apply").status_code == 200
    assert resolve_admitted(editor_client, "refund question") == entry["after"]["admitted"]
    assert entry["changed"] is (entry["before"] != entry["after"])
    assert body["summary"] == {
        "scenarios": 3,
        "changed": sum(entry["changed"] for entry in body["impact"]),
        "skipped": 0,
    }


def test_create__fewer_items__admitted_layer_000_items_drop_to_one(protected, editor_client):
    entry = propose(editor_client).json()["impact"][0]

    before = [ref for ref in entry["before"]["admitted"] if ref.startswith("layer-000/")]
    after = [ref for ref in entry["after"]["admitted"] if ref.startswith("layer-000/")]
    assert len(before) == 3
    assert after == before[:1]
    assert entry["changed"] is True


def test_create__writes_nothing(protected, editor_client):
    token = WorkspaceVersion.current_token()
    versions = ProfileVersion.objects.count()

    propose(editor_client)

    assert WorkspaceVersion.current_token() == token
    assert ProfileVersion.objects.count() == versions
    assert Profile.objects.get(key="profile-0").budget == 800


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"rules": {"layer-000": {"mode": "sideways"}}}, "changes.rules.layer-000.mode"),
        ({"rules": {"nowhere": {"mode": "inline"}}}, "changes.rules.nowhere"),
        ({"budget": 0}, "changes.budget"),
        ({"budget": "lots"}, "changes.budget"),
        ({"rules": {"layer-000": {"required": True, "maxItems": 0}}}, "changes.rules.layer-000"),
        ({"colour": "red"}, "changes.colour"),
        ({"rules": ["layer-000"]}, "changes.rules"),
        ({}, "changes"),
        ("budget", "changes"),
    ],
)
def test_create__invalid_changes__400_naming_the_field_and_nothing_created(
    protected, editor_client, changes, path
):
    response = editor_client.post(
        CHANGE_REQUESTS, {"profile": "profile-0", "title": "t", "changes": changes}, format="json"
    )

    assert response.status_code == 400, response.content
    assert response.json()["error"]["path"].startswith(path), response.json()
    assert not ChangeRequest.objects.exists()


def test_create__unknown_profile__404(protected, editor_client):
    response = propose(editor_client, profile="nobody")

    assert response.status_code == 404
    assert response.json()["error"]["path"] == "profile"


@pytest.mark.parametrize("title", [None, "  "])
def test_create__no_title__titled_by_what_it_changes(protected, editor_client, title):
    body = {"profile": "profile-0", "changes": FEWER_ITEMS}
    if title is not None:
        body["title"] = title

    response = editor_client.post(CHANGE_REQUESTS, body, format="json")

    assert response.status_code == 201, response.content
    assert response.json()["title"] == "Change profile-0: budget, rules.layer-000.maxItems"


def test_create__title_not_a_string__400(protected, editor_client):
    response = propose(editor_client, title=["Fewer items"])

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "title"


def test_create__reader__403(protected, reader_client):
    assert propose(reader_client).status_code == 403


# --- approve, apply ------------------------------------------------------------------------


def test_approve__own_request__403_self_approval(protected, editor_client):
    change_request = propose(editor_client).json()

    response = action(editor_client, change_request["id"], "approve")

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "SELF_APPROVAL"
    assert not ChangeRequest.objects.get(pk=change_request["id"]).approvals.exists()


def test_approve__another_editor__listed_and_approving_twice_counts_once(
    protected, editor_client, reviewer_client
):
    change_request = propose(editor_client).json()

    action(reviewer_client, change_request["id"], "approve")
    response = action(reviewer_client, change_request["id"], "approve")

    assert response.status_code == 200
    assert [approval["user"] for approval in response.json()["approvals"]] == ["reviewer"]


def test_approve__reader__403(protected, editor_client, reader_client):
    change_request = propose(editor_client).json()

    assert action(reader_client, change_request["id"], "approve").status_code == 403


def test_apply__without_approval__409_and_nothing_written(protected, editor_client):
    change_request = propose(editor_client).json()

    response = action(editor_client, change_request["id"], "apply")

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "APPROVALS_REQUIRED"
    assert Profile.objects.get(key="profile-0").budget == 800


def test_apply__approved_in_protected_environment__one_version_by_the_requester_with_approver(
    protected, editor, editor_client, reviewer_client
):
    change_request = propose(editor_client).json()
    action(reviewer_client, change_request["id"], "approve")

    response = action(reviewer_client, change_request["id"], "apply")

    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["appliedVersion"], body["resolvedBy"]) == (
        "applied",
        2,
        "reviewer",
    )
    versions = list(ProfileVersion.objects.filter(profile_key="profile-0").order_by("number"))
    assert [version.number for version in versions] == [1, 2]
    applied = versions[-1]
    assert applied.author == editor
    assert applied.approvers == ["reviewer"]
    assert applied.change_request_id == change_request["id"]
    assert applied.source == "change-request"
    assert applied.protection_bypassed is False
    assert Profile.objects.get(key="profile-0").budget == 700
    assert Rule.objects.get(profile__key="profile-0", layer__key="layer-000").max_items == 1


def test_apply__needs_two_approvals__one_is_not_enough(
    protected, editor_client, reviewer_client, staff_client
):
    Environment.objects.filter(key="production").update(approvals=2)
    change_request = propose(editor_client).json()
    action(reviewer_client, change_request["id"], "approve")

    assert action(editor_client, change_request["id"], "apply").status_code == 409
    action(staff_client, change_request["id"], "approve")
    assert action(editor_client, change_request["id"], "apply").status_code == 200


def test_apply__twice__second_409_not_open(protected, editor_client, reviewer_client):
    change_request = propose(editor_client).json()
    action(reviewer_client, change_request["id"], "approve")
    action(editor_client, change_request["id"], "apply")

    response = action(editor_client, change_request["id"], "apply")

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "CHANGE_REQUEST_NOT_OPEN"
    assert ProfileVersion.objects.filter(profile_key="profile-0").count() == 2


# --- stale bases and rebase ----------------------------------------------------------------


def test_apply__profile_moved_past_base__409_stale_and_nothing_written(
    protected, editor_client, reviewer_client
):
    first = propose(editor_client).json()
    second = propose(editor_client, {"rules": {"layer-002": {"maxItems": 2}}}).json()
    for change_request in (first, second):
        action(reviewer_client, change_request["id"], "approve")
    assert action(editor_client, first["id"], "apply").status_code == 200

    response = action(editor_client, second["id"], "apply")

    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "STALE_CHANGE_REQUEST"
    assert (error["baseVersion"], error["currentVersion"]) == (1, 2)
    assert ProfileVersion.objects.filter(profile_key="profile-0").count() == 2
    assert Rule.objects.get(profile__key="profile-0", layer__key="layer-002").max_items == 3
    assert editor_client.get(f"{CHANGE_REQUESTS}/{second['id']}").json()["stale"] is True


def test_rebase__stale_request__new_base_fresh_impact_approvals_withdrawn_then_applies(
    protected, editor_client, reviewer_client
):
    first = propose(editor_client).json()
    second = propose(editor_client, {"budget": 20}).json()
    action(reviewer_client, first["id"], "approve")
    action(reviewer_client, second["id"], "approve")
    action(editor_client, first["id"], "apply")

    response = action(editor_client, second["id"], "rebase")

    assert response.status_code == 200
    body = response.json()
    assert (body["baseVersion"], body["stale"], body["approvals"]) == (2, False, [])
    # The impact now starts from version 2 (budget 700, one layer-000 item).
    assert (
        body["impact"][0]["before"]["admitted"]
        == propose(editor_client, {"budget": 701}).json()["impact"][0]["before"]["admitted"]
    )
    assert body["diff"] == [{"path": "budget", "from": 700, "to": 20}]
    action(reviewer_client, second["id"], "approve")
    assert action(editor_client, second["id"], "apply").status_code == 200
    profile = Profile.objects.get(key="profile-0")
    assert (profile.budget, profile.version) == (20, 3)


def test_direct_write_in_unprotected_environment__makes_open_requests_stale(
    release, editor_client, reviewer_client
):
    change_request = propose(editor_client).json()
    action(reviewer_client, change_request["id"], "approve")
    editor_client.patch(API + "profiles/profile-0", {"name": "Renamed"}, format="json")

    response = action(editor_client, change_request["id"], "apply")

    assert response.json()["error"]["code"] == "STALE_CHANGE_REQUEST"


# --- edits, reject, close ------------------------------------------------------------------


def test_edit__approved_request_changes__approvals_withdrawn_and_impact_recomputed(
    protected, editor_client, reviewer_client
):
    change_request = propose(editor_client).json()
    action(reviewer_client, change_request["id"], "approve")

    response = editor_client.patch(
        f"{CHANGE_REQUESTS}/{change_request['id']}",
        {"changes": {"rules": {"layer-000": {"maxItems": 2}}}},
        format="json",
    )

    assert response.status_code == 200
    body = response.json()
    assert body["approvals"] == []
    assert body["changes"] == {"rules": {"layer-000": {"maxItems": 2}}}
    layer_000 = [
        ref for ref in body["impact"][0]["after"]["admitted"] if ref.startswith("layer-000")
    ]
    assert len(layer_000) == 2
    assert action(editor_client, change_request["id"], "apply").status_code == 409


def test_edit__title_only__approvals_withdrawn_too(protected, editor_client, reviewer_client):
    change_request = propose(editor_client).json()
    action(reviewer_client, change_request["id"], "approve")

    body = editor_client.patch(
        f"{CHANGE_REQUESTS}/{change_request['id']}", {"title": "Another title"}, format="json"
    ).json()

    assert (body["title"], body["approvals"]) == ("Another title", [])


def test_edit__same_values__approvals_kept(protected, editor_client, reviewer_client):
    change_request = propose(editor_client).json()
    action(reviewer_client, change_request["id"], "approve")

    body = editor_client.patch(
        f"{CHANGE_REQUESTS}/{change_request['id']}", {"changes": FEWER_ITEMS}, format="json"
    ).json()

    assert [approval["user"] for approval in body["approvals"]] == ["reviewer"]


def test_edit__someone_elses_request__403(protected, editor_client, reviewer_client):
    change_request = propose(editor_client).json()

    response = reviewer_client.patch(
        f"{CHANGE_REQUESTS}/{change_request['id']}", {"title": "Mine now"}, format="json"
    )

    assert response.status_code == 403


def test_reject__by_reviewer__rejected_and_can_no_longer_be_approved(
    protected, editor_client, reviewer_client, staff_client
):
    change_request = propose(editor_client).json()

    response = action(reviewer_client, change_request["id"], "reject")

    assert (response.status_code, response.json()["status"]) == (200, "rejected")
    assert action(staff_client, change_request["id"], "approve").status_code == 409


def test_close__by_author__closed_by_another_editor__403(protected, editor_client, reviewer_client):
    change_request = propose(editor_client).json()

    assert action(reviewer_client, change_request["id"], "close").status_code == 403
    response = action(editor_client, change_request["id"], "close")
    assert response.json()["status"] == "closed"


# --- lists ---------------------------------------------------------------------------------


def test_list__mine_and_to_review__filters(protected, editor_client, reviewer_client):
    own = propose(editor_client).json()
    theirs = propose(reviewer_client, {"budget": 5}).json()
    approved = propose(reviewer_client, {"budget": 6}).json()
    action(editor_client, approved["id"], "approve")

    mine = editor_client.get(CHANGE_REQUESTS + "?mine=true").json()["results"]
    review = editor_client.get(CHANGE_REQUESTS + "?review=true").json()["results"]
    every = editor_client.get(CHANGE_REQUESTS + "?status=open").json()

    assert [entry["id"] for entry in mine] == [own["id"]]
    assert [entry["id"] for entry in review] == [theirs["id"]]
    assert every["count"] == 3
    assert "impact" not in every["results"][0]


def test_list__more_requests__same_number_of_queries(
    protected,
    editor_client,
    reviewer_client,
    django_assert_max_num_queries,
    django_assert_num_queries,
):
    for budget in (5, 6):
        change_request = propose(editor_client, {"budget": budget}).json()
        action(reviewer_client, change_request["id"], "approve")
    with django_assert_max_num_queries(50) as captured:
        editor_client.get(CHANGE_REQUESTS)
    few = len(captured)  # read now: each request resets the connection's query log
    for budget in (7, 8, 9, 10):
        change_request = propose(editor_client, {"budget": budget}).json()
        action(reviewer_client, change_request["id"], "approve")
    action(reviewer_client, change_request["id"], "reject")

    with django_assert_num_queries(few):
        response = editor_client.get(CHANGE_REQUESTS)

    assert response.json()["count"] == 6


def test_list__bad_status__400(protected, reader_client):
    assert reader_client.get(CHANGE_REQUESTS + "?status=merged").status_code == 400


# --- promotion -----------------------------------------------------------------------------


def test_promote__staging_to_existing_production__request_carries_budget_and_rules(
    protected, editor_client, reviewer_client
):
    response = editor_client.post(
        API + "profiles/profile-0-staging/promote", {"to": "production"}, format="json"
    )

    assert response.status_code == 201
    body = response.json()
    assert (body["profile"], body["promotedFrom"], body["environment"]) == (
        "profile-0",
        "profile-0-staging",
        "production",
    )
    assert body["title"] == "Promote profile-0-staging to production"
    action(reviewer_client, body["id"], "approve")
    assert action(editor_client, body["id"], "apply").status_code == 200
    production = editor_client.get(API + "profiles/profile-0").json()
    staging = editor_client.get(API + "profiles/profile-0-staging").json()
    assert production["budget"] == staging["budget"] == 900
    assert production["rules"] == staging["rules"]


def test_promote__to_an_environment_without_the_profile__apply_creates_it(
    protected, editor, editor_client, reviewer_client
):
    body = editor_client.post(
        API + "profiles/profile-0-staging/promote", {"to": "canary"}, format="json"
    ).json()

    assert body["creates"]["key"] == "profile-0-canary"
    assert body["baseVersion"] is None
    assert body["impact"] == []
    action(reviewer_client, body["id"], "approve")
    assert action(editor_client, body["id"], "apply").status_code == 200
    created = Profile.objects.get(key="profile-0-canary")
    assert (created.environment, created.budget, created.version) == ("canary", 900, 1)
    version = ProfileVersion.objects.get(profile_key="profile-0-canary")
    assert (version.author, version.approvers) == (editor, ["reviewer"])


def test_promote__same_budget_and_rules_already__400(protected, editor_client, reviewer_client):
    first = editor_client.post(
        API + "profiles/profile-0-staging/promote", {"to": "production"}, format="json"
    ).json()
    action(reviewer_client, first["id"], "approve")
    action(editor_client, first["id"], "apply")

    response = editor_client.post(
        API + "profiles/profile-0-staging/promote", {"to": "production"}, format="json"
    )

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "changes"


@pytest.mark.parametrize(("to", "path"), [("staging", "to"), ("Bad Env", "to"), (None, "to")])
def test_promote__bad_target__400(protected, editor_client, to, path):
    response = editor_client.post(
        API + "profiles/profile-0-staging/promote", {"to": to}, format="json"
    )

    assert response.status_code == 400
    assert response.json()["error"]["path"] == path


# --- the dry-run impact endpoint -----------------------------------------------------------


def test_impact__draft__same_impact_as_a_change_request_and_nothing_written(
    protected, editor_client, reader_client
):
    token = WorkspaceVersion.current_token()

    response = reader_client.post(API + "profiles/profile-0/impact", FEWER_ITEMS, format="json")

    assert response.status_code == 200
    body = response.json()
    assert body["baseVersion"] == 1
    assert body["impact"] == propose(editor_client).json()["impact"]
    assert body["summary"]["scenarios"] == 3
    assert WorkspaceVersion.current_token() == token
    assert not ProfileVersion.objects.filter(number=2).exists()


def test_impact__invalid_draft__400_naming_the_field(protected, reader_client):
    response = reader_client.post(
        API + "profiles/profile-0/impact",
        {"rules": {"layer-000": {"maxItems": -1}}},
        format="json",
    )

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "changes.rules.layer-000.maxItems"


def test_impact__scenario_without_now__both_sides_resolve_at_one_moment(protected, reader_client):
    scenarios_upsert(
        scenarios=[{"name": "timeless", "profile": "profile-0", "input": {"customer_id": "C-1"}}]
    )

    body = reader_client.post(
        API + "profiles/profile-0/impact", {"name": "Only a new name"}, format="json"
    ).json()

    assert [entry["scenario"] for entry in body["impact"]][-1] == "timeless"
    assert [entry["changed"] for entry in body["impact"]] == [False, False, False, False]


@pytest.mark.parametrize(
    ("field", "value"),
    [("key", 5), ("key", None), ("title", 7), ("description", None), ("reviewers", None)],
)
def test_promote__field_not_a_string__400_naming_it(protected, editor_client, field, value):
    # The schema types them as strings; a number was taken as its canonical string (issue 33,
    # schemathesis: a schema-violating request accepted).
    response = editor_client.post(
        API + "profiles/profile-0-staging/promote",
        {"to": "canary", field: value},
        format="json",
    )

    assert response.status_code == 400
    assert response.json()["error"]["path"] == field
    assert not ChangeRequest.objects.exists()


def test_promote__empty_title__the_default_one(protected, editor_client):
    response = editor_client.post(
        API + "profiles/profile-0-staging/promote", {"to": "canary", "title": ""}, format="json"
    )

    assert response.status_code == 201
    assert response.json()["title"] == "Promote profile-0-staging to canary"

"""Change sets over the API (issue 21): ``POST /api/v1/change-requests`` with a list of
changes, its representation (changes, affectedProfiles, entities, impact by profile), edits,
stale sets, and two overlapping sets applied at once on PostgreSQL."""

import threading

import pytest
from django.db import connection, connections

from profiles.models import (
    Activity,
    ChangeRequest,
    Environment,
    Item,
    Layer,
    ProfileVersion,
    Webhook,
    WebhookDelivery,
)
from tests.profiles.conftest import API, token_client

pytestmark = pytest.mark.django_db

THE_SET = [
    {
        "kind": "layer",
        "op": "create",
        "value": {
            "key": "release-notes",
            "name": "Release notes",
            "items": [{"path": "2026-12.md", "title": "December", "body": "Cards refund fast."}],
        },
    },
    {
        "kind": "profile",
        "op": "update",
        "key": "profile-0",
        "value": {"rules": {"release-notes": {"participation": "exclude"}}},
    },
    {
        "kind": "profile",
        "op": "update",
        "key": "profile-1",
        "value": {"rules": {"layer-000": {"maxItems": 2}}},
    },
]


@pytest.fixture
def protected(release):
    Environment.objects.create(key="production", requires_change_request=True)


def propose(client, changes=THE_SET, **fields):
    return client.post(API + "change-requests", {"changes": changes, **fields}, format="json")


def approve(client, change_request_id):
    read = client.get(f"{API}change-requests/{change_request_id}")
    return client.post(
        f"{API}change-requests/{change_request_id}/approve", HTTP_IF_MATCH=read.headers["ETag"]
    )


def test_create__list_of_changes__201_a_set_with_affected_entities_and_impact_by_profile(
    protected, editor_client
):
    response = propose(editor_client, title="Release notes, kept out of production")

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["profile"] == ""
    # As given, the created layer named by its key.
    assert body["changes"] == [{**THE_SET[0], "key": "release-notes"}, *THE_SET[1:]]
    assert body["affectedProfiles"] == ["profile-0", "profile-0-staging", "profile-1"]
    assert body["entities"] == ["layer:release-notes", "profile:profile-0", "profile:profile-1"]
    assert {row["profile"] for row in body["impact"]} == {"profile-0", "profile-0-staging"}
    assert body["summary"]["scenarios"] == len(body["impact"])
    assert [(c["kind"], c["op"]) for c in body["entityChanges"]] == [
        ("layer", "create"),
        ("profile", "update"),
        ("profile", "update"),
    ]
    assert {"path": "rules.layer-000.maxItems", "from": 3, "to": 2} in body["entityChanges"][2][
        "fields"
    ]
    assert body["stale"] is False
    assert response.headers["ETag"] == f'"cr{body["id"]}.1"'
    assert not Layer.objects.filter(key="release-notes").exists()


def test_create__no_title__default_from_the_changes(protected, editor_client):
    body = propose(editor_client).json()

    assert body["title"] == "Create layer release-notes; change profile-0, profile-1"


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ([], "changes"),
        ([{"kind": "rule", "op": "update", "key": "x", "value": {}}], "changes[0].kind"),
        (
            [{"kind": "layer", "op": "update", "key": "layer-000", "value": {"maxItems": "3"}}],
            "changes[0].value.maxItems",
        ),
        (
            [{"kind": "layer", "op": "update", "key": "nope", "value": {"name": "x"}}],
            "changes[0].key",
        ),
        ([{"kind": "layer", "op": "delete", "key": "layer-000", "value": {}}], "changes[0].value"),
    ],
)
def test_create__invalid_set__400_naming_the_entry(protected, editor_client, changes, path):
    response = propose(editor_client, changes=changes)

    assert response.status_code == 400
    assert response.json()["error"]["path"] == path
    assert not ChangeRequest.objects.exists()


def test_create__profile_and_a_list__400(protected, editor_client):
    response = propose(editor_client, profile="profile-0")

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "profile"


def test_create__reader__403(protected, reader_client):
    assert propose(reader_client).status_code == 403


def test_apply__approved_set__everything_written_with_versions_and_activity(
    protected, editor_client, reviewer_client
):
    created = propose(editor_client).json()
    assert approve(reviewer_client, created["id"]).status_code == 200

    response = editor_client.post(f"{API}change-requests/{created['id']}/apply")

    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "applied"
    assert Item.objects.filter(layer__key="release-notes").count() == 1
    for key in ("profile-0", "profile-1"):
        latest = ProfileVersion.objects.filter(profile_key=key).order_by("-number").first()
        assert (latest.number, latest.change_request_id) == (2, created["id"])
    assert Activity.objects.filter(change_request_id=created["id"]).count() == 4


def test_apply__entity_moved__409_stale_names_it(protected, editor_client, reviewer_client):
    created = propose(editor_client).json()
    approve(reviewer_client, created["id"])
    changed = editor_client.patch(
        API + "profiles/profile-1/rules/layer-002", {"maxItems": 1}, format="json"
    )
    assert changed.status_code == 200, changed.json()

    response = editor_client.post(f"{API}change-requests/{created['id']}/apply")

    assert response.status_code == 409
    error = response.json()["error"]
    assert (error["code"], error["entities"]) == ("STALE_CHANGE_REQUEST", ["profile:profile-1"])
    assert "profile:profile-1" in error["message"]
    assert not Layer.objects.filter(key="release-notes").exists()
    detail = editor_client.get(f"{API}change-requests/{created['id']}").json()
    assert (detail["stale"], detail["staleEntities"]) == (True, ["profile:profile-1"])


def test_edit__new_list__new_revision_and_approvals_withdrawn(
    protected, editor_client, reviewer_client
):
    created = propose(editor_client).json()
    approve(reviewer_client, created["id"])

    response = editor_client.patch(
        f"{API}change-requests/{created['id']}", {"changes": THE_SET[:1]}, format="json"
    )

    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["revision"], body["approvals"]) == (2, [])
    assert body["entities"] == ["layer:release-notes"]


def test_list__sets_beside_profile_requests(protected, editor_client):
    propose(editor_client)
    editor_client.post(
        API + "change-requests",
        {"profile": "profile-0", "title": "Budget", "changes": {"budget": 700}},
        format="json",
    )

    results = editor_client.get(API + "change-requests").json()["results"]

    assert [(r["profile"], r["stale"]) for r in results] == [("profile-0", False), ("", False)]
    assert results[1]["approvalsRequired"] == 1


def test_governed_item__direct_patch_409_naming_profiles__applied_through_a_set(
    protected, editor_client, reviewer_client
):
    Layer.objects.filter(key="layer-000").update(governed=True)
    path = "docs/item-0001.md"

    refused = editor_client.patch(
        f"{API}layers/layer-000/items/{path}", {"title": "Reviewed"}, format="json"
    )

    assert refused.status_code == 409
    assert refused.json()["error"]["code"] == "CHANGE_REQUEST_REQUIRED"
    assert "profile-0" in refused.json()["error"]["profiles"]
    created = propose(
        editor_client,
        changes=[
            {
                "kind": "item",
                "op": "update",
                "layer": "layer-000",
                "path": path,
                "value": {"title": "Reviewed"},
            }
        ],
    ).json()
    approve(reviewer_client, created["id"])
    assert editor_client.post(f"{API}change-requests/{created['id']}/apply").status_code == 200
    assert Item.objects.get(layer__key="layer-000", path=path).title == "Reviewed"


# --- two overlapping sets at once (PostgreSQL) -------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="row locks need two PostgreSQL connections"
)
@pytest.mark.parametrize("attempt", range(2))
def test_apply__two_sets_touching_one_entity_at_once__exactly_one_applies(
    release, editor, reviewer, attempt
):
    Environment.objects.create(key="production", requires_change_request=True)
    author, approver = token_client(editor), token_client(reviewer)
    ids = []
    for budget in (701, 702):
        changes = [
            {"kind": "profile", "op": "update", "key": "profile-1", "value": {"budget": budget}},
            {
                "kind": "layer",
                "op": "update",
                "key": "layer-00" + str(budget - 701),
                "value": {"description": f"Set {budget}"},
            },
        ]
        ids.append(propose(author, changes=changes).json()["id"])
        assert approve(approver, ids[-1]).status_code == 200
    barrier = threading.Barrier(2)
    results: list = [None, None]

    def run(index, client, change_request_id):
        try:
            barrier.wait()
            response = client.post(f"{API}change-requests/{change_request_id}/apply")
            results[index] = (response.status_code, response.json())
        finally:
            connections.close_all()

    threads = [
        threading.Thread(target=run, args=(0, token_client(editor), ids[0])),
        threading.Thread(target=run, args=(1, token_client(reviewer), ids[1])),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(status for status, _ in results) == [200, 409], results
    refused = next(body for status, body in results if status == 409)["error"]
    assert (refused["code"], refused["entities"]) == ("STALE_CHANGE_REQUEST", ["profile:profile-1"])
    assert ProfileVersion.objects.filter(profile_key="profile-1").count() == 2
    applied = ChangeRequest.objects.get(status="applied")
    described = {layer.key: layer.description for layer in Layer.objects.all()}
    # The applied set's layer was written, the other's not (nothing of a refused set).
    budget = 701 if applied.pk == ids[0] else 702
    assert described["layer-00" + str(budget - 701)] == f"Set {budget}"
    assert described["layer-00" + str(702 - budget)] != f"Set {1403 - budget}"


def test_webhooks__set_opened_and_applied__one_delivery_each(
    protected, editor_client, reviewer_client
):
    Webhook.objects.create(
        url="https://hooks.example.com/in",
        events=["change_request.opened", "change_request.applied"],
        secret="s" * 32,
    )

    created = propose(editor_client).json()
    approve(reviewer_client, created["id"])
    editor_client.post(f"{API}change-requests/{created['id']}/apply")

    events = list(WebhookDelivery.objects.order_by("id").values_list("event", "payload"))
    assert [event for event, _ in events] == ["change_request.opened", "change_request.applied"]
    assert all(payload["changeRequest"]["id"] == created["id"] for _, payload in events)

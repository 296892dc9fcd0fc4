"""What change requests cost (issue 33, item 11): opening, editing, rebasing and promoting one
compute its impact and count in the ``impact`` scope at every door (API and studio share the
counters); a reviewer is emailed once per revision however often re-added; a set's bytes are
bounded; a list carries counts and entities, never the sets themselves."""

import json

import pytest
from django.core import mail
from django.urls import reverse

from profiles.models import ChangeRequest, Environment, Item, Layer
from tests.profiles.conftest import API

pytestmark = pytest.mark.django_db

CHANGE_REQUESTS = API + "change-requests"


@pytest.fixture
def impact_rate(settings):
    def set_rate(rate: str) -> None:
        settings.REST_FRAMEWORK = {
            **settings.REST_FRAMEWORK,
            "DEFAULT_THROTTLE_RATES": {
                **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
                "impact": rate,
            },
        }

    return set_rate


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


# --- the impact scope -------------------------------------------------------------------------


def test_open_edit_rebase_promote__each_counts_in_the_impact_scope(
    release, editor_client, impact_rate
):
    # Given 4 impacts a minute
    impact_rate("4/minute")

    # When a request is opened, its changes edited, it is rebased and a profile promoted
    opened = propose(editor_client)
    pk = opened.json()["id"]
    edited = send(editor_client, "patch", f"{CHANGE_REQUESTS}/{pk}", {"changes": {"budget": 640}})
    rebased = send(editor_client, "post", f"{CHANGE_REQUESTS}/{pk}/rebase")
    promoted = send(
        editor_client, "post", API + "profiles/profile-0-staging/promote", {"to": "production"}
    )
    # (a title's edit computes nothing and is not counted)
    retitled = send(editor_client, "patch", f"{CHANGE_REQUESTS}/{pk}", {"title": "Budget 640"})

    # Then the four are served, and the fifth impact is refused with nothing opened
    assert [r.status_code for r in (opened, edited, rebased, promoted, retitled)] == [
        201,
        200,
        200,
        201,
        200,
    ]
    refused = propose(editor_client)
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "THROTTLED"
    assert int(refused.headers["Retry-After"]) >= 1
    change_set = send(
        editor_client,
        "post",
        CHANGE_REQUESTS,
        {
            "changes": [
                {"kind": "profile", "op": "update", "key": "profile-1", "value": {"budget": 1}}
            ]
        },
    )
    assert change_set.status_code == 429
    assert send(editor_client, "post", f"{CHANGE_REQUESTS}/{pk}/rebase").status_code == 429
    assert ChangeRequest.objects.count() == 2


@pytest.mark.parametrize("door", ["propose", "promote", "rebase", "update-changes", "restore"])
def test_studio_doors__impact_rate_spent_through_the_api__429_and_nothing_opened(
    release, editor, editor_client, client, impact_rate, door
):
    # Given one impact a minute, spent by opening a request through the API (production is
    # protected: a restore there is proposed)
    Environment.objects.create(key="production", requires_change_request=True)
    impact_rate("1/minute")
    pk = propose(editor_client).json()["id"]
    client.force_login(editor)
    urls = {
        "propose": (reverse("profile-propose", args=["profile-0"]), {"budget": "700"}),
        "promote": (reverse("profile-promote", args=["profile-0-staging"]), {"to": "production"}),
        "rebase": (reverse("change-request", args=[pk]), {"action": "rebase"}),
        "update-changes": (
            reverse("change-request-update-changes", args=[pk]),
            {"budget": "700"},
        ),
        "restore": (reverse("profile-version-restore", args=["profile-0", 1]), {}),
    }
    url, data = urls[door]
    revision = ChangeRequest.objects.get(pk=pk).revision

    # When the studio's door is used
    response = client.post(url, data)

    # Then it is refused like every impact beyond the rate
    assert response.status_code == 429, response.content[:300]
    assert response["Retry-After"]
    assert ChangeRequest.objects.count() == 1
    assert ChangeRequest.objects.get(pk=pk).revision == revision


# --- reviewers are emailed once per revision --------------------------------------------------


def test_reviewers__removed_and_added_again__emailed_once_per_revision(
    release, editor, reviewer, editor_client, django_capture_on_commit_callbacks
):
    reviewer.email = "reviewer@example.com"
    reviewer.save()
    pk = propose(editor_client).json()["id"]
    url = f"{CHANGE_REQUESTS}/{pk}"

    # When the reviewer is added and removed again and again (12 edits)
    with django_capture_on_commit_callbacks(execute=True):
        for turn in range(12):
            reviewers = ["reviewer"] if turn % 2 == 0 else []
            assert send(editor_client, "patch", url, {"reviewers": reviewers}).status_code == 200

    # Then they were asked once
    assert [message.to for message in mail.outbox] == [["reviewer@example.com"]]

    # And a new revision asks them again, once
    send(editor_client, "patch", url, {"title": "Budget 650, reviewed again"})
    with django_capture_on_commit_callbacks(execute=True):
        for reviewers in (["reviewer"], [], ["reviewer"]):
            send(editor_client, "patch", url, {"reviewers": reviewers})
    assert len(mail.outbox) == 2


# --- a set's bytes are bounded; lists carry no set --------------------------------------------


def layer_of(size: int, *, key: str = "archive") -> dict:
    """Return a layer-create entry whose items hold about ``size`` bytes of body."""
    count = max(1, size // 10_000)
    return {
        "kind": "layer",
        "op": "create",
        "value": {
            "key": key,
            "name": key.title(),
            "items": [
                {"path": f"a/{index:05d}.md", "title": f"A{index}", "body": "x" * 10_000}
                for index in range(count)
            ],
        },
    }


def test_create__set_over_the_byte_bound__400_at_changes_and_nothing_opened(release, editor_client):
    response = send(editor_client, "post", CHANGE_REQUESTS, {"changes": [layer_of(2_100_000)]})

    assert response.status_code == 400, response.content[:300]
    error = response.json()["error"]
    assert error["path"] == "changes"
    assert "2,000,000 bytes" in error["message"]
    assert not ChangeRequest.objects.exists()


def test_edit__set_over_the_byte_bound__400_at_changes_and_unchanged(release, editor_client):
    pk = send(editor_client, "post", CHANGE_REQUESTS, {"changes": [layer_of(10_000)]}).json()["id"]

    response = send(
        editor_client, "patch", f"{CHANGE_REQUESTS}/{pk}", {"changes": [layer_of(2_100_000)]}
    )

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "changes"
    assert ChangeRequest.objects.get(pk=pk).revision == 1


def test_list__a_large_set__counts_and_entities_without_its_changes(release, editor_client):
    pk = send(
        editor_client,
        "post",
        CHANGE_REQUESTS,
        {
            "changes": [
                layer_of(1_500_000),
                {"kind": "profile", "op": "update", "key": "profile-1", "value": {"budget": 700}},
            ]
        },
    ).json()["id"]

    listed = editor_client.get(CHANGE_REQUESTS + "?page_size=1")

    assert listed.status_code == 200
    assert len(listed.content) < 10_000
    (entry,) = listed.json()["results"]
    assert "changes" not in entry
    assert entry["entities"] == ["layer:archive", "profile:profile-1"]
    assert entry["counts"]["layer"] == {"create": 1, "update": 0, "delete": 0}
    assert entry["counts"]["item"]["create"] == 150
    assert entry["counts"]["profile"] == {"create": 0, "update": 1, "delete": 0}
    detail = editor_client.get(f"{CHANGE_REQUESTS}/{pk}").json()
    assert len(detail["changes"][0]["value"]["items"]) == 150


def test_studio_material_proposal__impact_rate_spent__refused_on_the_form_nothing_opened(
    release, editor, editor_client, client, impact_rate
):
    # Given a governed layer read by a protected profile, and the impact rate spent
    Environment.objects.create(key="production", requires_change_request=True)
    Layer.objects.filter(key="layer-000").update(governed=True)
    item = Item.objects.get(layer__key="layer-000", path="docs/item-0000.md")
    impact_rate("1/minute")
    propose(editor_client)
    client.force_login(editor)

    # When the editor proposes an item's edit from its page
    response = client.post(
        f"/layers/layer-000/items/{item.pk}/",
        {"path": item.path, "title": item.title, "body": "Refunds take 3 days.",
         "metadata_text": "{}", "etag": "", "propose": "1"},
    )  # fmt: skip

    # Then nothing is proposed, and the form says why
    assert response.status_code == 400
    assert "too many impact checks" in response.content.decode()
    assert ChangeRequest.objects.count() == 1

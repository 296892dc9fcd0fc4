"""Conditional reads (issue 22, "Knowing when something changed"): an ETag on resolve, expand,
entry reads and the workspace export; If-None-Match answers 304 exactly while the answer is
unchanged."""

import pytest

from profiles.models import Item
from tests.profiles.conftest import API, NOW

pytestmark = pytest.mark.django_db

DANA = {
    "profile": "support-answer",
    "input": {"message": "Where is my refund?", "customer_id": "C-1001"},
    "now": NOW,
}


def resolve(client, body=DANA, **headers):
    return client.post(API + "resolve", body, format="json", headers=headers)


def test_resolve__etag__same_request_with_if_none_match_answers_304_without_a_body(
    demo, reader_client
):
    first = resolve(reader_client)
    etag = first["ETag"]
    assert first.status_code == 200 and etag.startswith('W/"')

    again = resolve(reader_client, **{"If-None-Match": etag})

    assert again.status_code == 304
    assert again.content == b""
    assert again["ETag"] == etag
    assert again["X-Profile-Version"] == first["X-Profile-Version"]


def test_resolve__other_request__other_etag_and_200(demo, reader_client):
    etag = resolve(reader_client)["ETag"]
    other = {**DANA, "input": {**DANA["input"], "message": "Change my address"}}

    response = resolve(reader_client, other, **{"If-None-Match": etag})

    assert response.status_code == 200
    assert response["ETag"] != etag


def test_resolve__only_the_now_echo_differs__same_etag(demo, reader_client):
    """A request without ``now`` resolves at the current time: the echo alone must not make
    every poll a new answer (the ETag is weak for that reason)."""
    first = resolve(reader_client)
    later = resolve(reader_client, {**DANA, "now": "2026-11-29T12:00:01Z"})

    assert first.json()["now"] != later.json()["now"]
    assert first.content.replace(b"12:00:00Z", b"12:00:01Z") == later.content
    assert first["ETag"] == later["ETag"]


def test_resolve__without_now__polls_answer_304_until_the_answer_changes(
    demo, reader_client, editor_client
):
    body = {key: value for key, value in DANA.items() if key != "now"}
    etag = resolve(reader_client, body)["ETag"]
    assert resolve(reader_client, body, **{"If-None-Match": etag}).status_code == 304

    # A write the answer does not depend on: still 304.
    touched = editor_client.patch(
        API + "profiles/ticket-summary", {"name": "Ticket summary, renamed"}, format="json"
    )
    assert touched.status_code == 200, touched.content
    assert resolve(reader_client, body, **{"If-None-Match": etag}).status_code == 304

    # A write that changes it: 200 and a new ETag.
    changed = editor_client.patch(API + "profiles/support-answer", {"budget": 300}, format="json")
    assert changed.status_code == 200, changed.content
    response = resolve(reader_client, body, **{"If-None-Match": etag})
    assert response.status_code == 200
    assert response["ETag"] != etag


@pytest.mark.parametrize(
    "header, expected",
    [
        ("*", 304),
        ('"other", {etag}', 304),
        ("{bare}", 304),  # weak comparison: the opaque tag without W/ matches
        ('W/"other"', 200),
        ("not an etag", 200),
    ],
)
def test_resolve__if_none_match_forms(demo, reader_client, header, expected):
    etag = resolve(reader_client)["ETag"]
    value = header.format(etag=etag, bare=etag.removeprefix("W/"))

    assert resolve(reader_client, **{"If-None-Match": value}).status_code == expected


def test_resolve__scenario_request__etag_follows_the_scenario(demo, reader_client, editor_client):
    body = {"scenario": "Dana asks about a late refund"}
    first = resolve(reader_client, body)
    assert first.status_code == 200, first.content
    etag = first["ETag"]
    assert resolve(reader_client, body, **{"If-None-Match": etag}).status_code == 304

    edited = editor_client.patch(
        API + "scenarios/Dana asks about a late refund",
        {"input": {"customer_id": "C-1001", "message": "Change my shipping address"}},
        format="json",
    )
    assert edited.status_code == 200, edited.content
    assert resolve(reader_client, body, **{"If-None-Match": etag}).status_code == 200


def test_expand__etag_and_304(demo, reader_client):
    references = resolve(reader_client).json()["references"]
    ref = next(entry["ref"] for entry in references if entry["reason"] == "ON_DEMAND")
    body = {**DANA, "ref": ref}
    first = reader_client.post(API + "expand", body, format="json")
    assert first.status_code == 200 and first["ETag"].startswith('W/"')

    again = reader_client.post(
        API + "expand", body, format="json", headers={"If-None-Match": first["ETag"]}
    )

    assert again.status_code == 304 and again.content == b""


def test_expand__unavailable_ref__404_whatever_if_none_match(demo, reader_client):
    response = reader_client.post(
        API + "expand",
        {**DANA, "ref": "tickets/T-20812"},
        format="json",
        headers={"If-None-Match": "*"},
    )

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "REF_NOT_AVAILABLE"


def test_profile_read__etag_is_the_if_match_one__304_until_it_changes(demo, editor_client):
    url = API + "profiles/support-answer"
    first = editor_client.get(url)
    etag = first["ETag"]

    assert editor_client.get(url, headers={"If-None-Match": etag}).status_code == 304
    updated = editor_client.patch(url, {"budget": 700}, format="json", headers={"If-Match": etag})
    assert updated.status_code == 200
    response = editor_client.get(url, headers={"If-None-Match": etag})
    assert response.status_code == 200
    assert response["ETag"] == updated["ETag"] != etag
    assert response.json()["budget"] == 700


def test_profile_read__unknown_key__404_even_with_if_none_match_star(demo, reader_client):
    response = reader_client.get(API + "profiles/nope", headers={"If-None-Match": "*"})

    assert response.status_code == 404


def test_workspace_export__etag_follows_the_content_version(demo, editor_client):
    url = API + "workspace"
    first = editor_client.get(url)
    etag = first["ETag"]
    assert first.status_code == 200
    assert editor_client.get(url, headers={"If-None-Match": etag}).status_code == 304
    yaml_etag = editor_client.get(url + "?format=yaml")["ETag"]
    layer_etag = editor_client.get(url + "?layer=policies")["ETag"]
    assert len({etag, yaml_etag, layer_etag}) == 3

    item = Item.objects.filter(layer__key="policies").first()
    changed = editor_client.patch(
        API + f"layers/policies/items/{item.path}", {"title": "Renamed policy"}, format="json"
    )
    assert changed.status_code == 200, changed.content

    response = editor_client.get(url, headers={"If-None-Match": etag})
    assert response.status_code == 200
    assert response["ETag"] != etag
    assert b"Renamed policy" in b"".join(response.streaming_content)


def test_workspace_export__reader__403_before_any_conditional(demo, reader_client):
    response = reader_client.get(API + "workspace", headers={"If-None-Match": "*"})

    assert response.status_code == 403

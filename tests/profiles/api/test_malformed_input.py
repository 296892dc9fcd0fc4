"""Malformed input on the write doors answers 4xx in the error shape, never 500; nothing is
written. (NUL in query strings, deep JSON and HTML 500s are the global middleware's.)"""

import json

import pytest

from profiles.authoring.scenarios import scenarios_upsert
from profiles.models import Consumer, Item, Scenario
from tests.profiles.conftest import API, NOW

pytestmark = pytest.mark.django_db

LONE_SURROGATE = "\\ud800"  # as JSON text: the parser makes it a lone surrogate


def post_raw(client, url: str, text: str, method: str = "post"):
    return getattr(client, method)(API + url, text.encode(), content_type="application/json")


def error_of(response) -> dict:
    body = json.loads(response.content.decode("utf-8"))  # must be valid UTF-8
    return body["error"]


def test_resolve__lone_surrogate_profile__400_and_the_answer_is_utf8(small, reader_client):
    response = post_raw(reader_client, "resolve", '{"profile": "' + LONE_SURROGATE + '"}')

    assert response.status_code == 400
    assert error_of(response)["code"] == "INVALID_REQUEST"


def test_resolve__scenario_name_with_nul__400_at_scenario(small, reader_client):
    response = post_raw(reader_client, "resolve", '{"scenario": "a\\u0000b"}')

    assert response.status_code == 400
    assert error_of(response)["path"] == "scenario"


@pytest.mark.parametrize(
    ("url", "method", "text", "field"),
    [
        ("layers/layer-000/items/", "post", '{"path": "p", "title": "a\\u0000b"}', "title"),
        ("layers/layer-000/items/docs/item-0000.md", "patch", '{"body": "\\udfff"}', "body"),
        ("consumers/assistant", "patch", '{"name": "x\\ud800y"}', "name"),
        ("layers/layer-001", "patch", '{"description": "\\u0000"}', "description"),
        ("profiles/profile-0", "patch", '{"budget": 99999999999}', "budget"),
        ("profiles/profile-0/rules/layer-000", "patch", '{"maxTokens": 99999999999}', None),
    ],
)
def test_workspace_write__text_or_number_the_database_cannot_store__400_with_the_field(
    small, editor_client, url, method, text, field
):
    items, names = Item.objects.count(), list(Consumer.objects.values_list("name", flat=True))

    response = post_raw(editor_client, url, text, method)

    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "INVALID_WORKSPACE"
    if field:
        assert error["field"] == field
    assert Item.objects.count() == items
    assert list(Consumer.objects.values_list("name", flat=True)) == names


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"name": "n" * 201, "profile": "profile-0"}, "name"),
        ({"name": "s", "profile": "profile-0", "now": "2026-11-29T12:00:00." + "0" * 60}, "now"),
        ({"name": "s", "profile": "profile-0", "description": "a\x00b"}, "description"),
        ({"name": "s", "profile": "profile-0", "input": {"customer_id": "C\x001"}}, "input"),
        ({"name": "nul\x00name", "profile": "profile-0"}, "name"),
        ({"name": "s", "profile": "profile-0", "now": "soon"}, "now"),
    ],
)
def test_scenario_create__unstorable_or_invalid_value__400_at_its_path(
    small, editor_client, body, path
):
    response = editor_client.post(API + "scenarios/", body, format="json")

    assert response.status_code == 400
    assert error_of(response)["path"].startswith(path)
    assert not Scenario.objects.exists()


def test_scenario_patch__stale_if_match__412_with_the_current_etag(small, editor_client):
    scenarios_upsert(scenarios=[{"name": "s", "profile": "profile-0", "input": {}}])
    current = editor_client.get(API + "scenarios/s")

    response = editor_client.patch(
        API + "scenarios/s", {"now": NOW}, format="json", HTTP_IF_MATCH='"stale"'
    )

    assert response.status_code == 412
    assert response["ETag"] == current["ETag"]
    assert Scenario.objects.get(name="s").now is None


def test_scenario_patch__current_if_match__applies_and_changes_the_etag(small, editor_client):
    scenarios_upsert(scenarios=[{"name": "s", "profile": "profile-0", "input": {}}])
    etag = editor_client.get(API + "scenarios/s")["ETag"]

    response = editor_client.patch(
        API + "scenarios/s", {"now": NOW}, format="json", HTTP_IF_MATCH=etag
    )

    assert response.status_code == 200
    assert response["ETag"] != etag

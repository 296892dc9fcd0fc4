"""GET /api/v1/snapshot: what a key may resolve, as a workspace the engine reads (issue 36)."""

import json

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from profiles.import_export.imports import workspace_import
from profiles.resolution.snapshot import snapshot_current_etag
from resolver import compile_workspace
from resolver.fingerprint import engine_version
from tests.profiles.conftest import API, api_key_for, small_workspace

pytestmark = pytest.mark.django_db


def key_client(user, **key) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_key_for(user, **key)}")
    return client


@pytest.fixture
def stored(db) -> dict:
    document = small_workspace(layers=3, items=4, profiles=3)
    document["profiles"][1]["environment"] = "staging"
    document["profiles"][2]["environment"] = "production"
    workspace_import(document=document)
    return document


def test_snapshot__reader__holds_held_items_and_served_layers_without_items(stored, reader_client):
    response = reader_client.get(API + "snapshot")

    assert response.status_code == 200
    body = json.loads(response.content)
    assert body["engine"] == engine_version()
    layers = {layer["key"]: layer for layer in body["workspace"]["layers"]}
    assert set(layers) == {layer["key"] for layer in stored["layers"]}
    assert body["served"] == {"layer-001": 4}
    assert layers["layer-001"]["items"] == []
    assert [item["body"] for item in layers["layer-000"]["items"]] == [
        item["body"] for item in stored["layers"][0]["items"]
    ]
    assert [p["key"] for p in body["workspace"]["profiles"]] == [
        "profile-0",
        "profile-1",
        "profile-2",
    ]
    compile_workspace(body["workspace"])  # the engine reads it


def test_snapshot__key_limited_to_an_environment__sees_only_its_profiles(stored, reader):
    client = key_client(reader, scopes=["resolve"], environments=["production"])

    body = json.loads(client.get(API + "snapshot").content)

    assert [p["key"] for p in body["workspace"]["profiles"]] == ["profile-2"]
    assert [c["key"] for c in body["workspace"]["consumers"]] == ["assistant"]


def test_snapshot__key_with_the_resolve_scope_alone__is_served(stored, reader):
    # The resolve scope is the least a key has (each scope includes the one before it).
    client = key_client(reader, scopes=["resolve"])

    response = client.get(API + "snapshot")

    assert response.status_code == 200
    assert len(json.loads(response.content)["workspace"]["profiles"]) == 3


def test_snapshot__if_none_match_current__304_then_200_after_a_write(stored, reader_client):
    etag = reader_client.get(API + "snapshot")["ETag"]

    unchanged = reader_client.get(API + "snapshot", HTTP_IF_NONE_MATCH=etag)
    stored["profiles"][0]["budget"] = 321
    workspace_import(document=stored)
    changed = reader_client.get(API + "snapshot", HTTP_IF_NONE_MATCH=etag)

    assert (unchanged.status_code, unchanged["ETag"], unchanged.content) == (304, etag, b"")
    assert changed.status_code == 200
    assert changed["ETag"] != etag
    assert json.loads(changed.content)["workspace"]["profiles"][0]["budget"] == 321


def test_snapshot__filtered_layers_held_by_the_server__still_without_items(db, reader_client):
    workspace_import(document=small_workspace(layers=3, items=4, profiles=1))

    with override_settings(SERVE_FILTERED_LAYERS=False):
        body = json.loads(reader_client.get(API + "snapshot").content)

    layers = {layer["key"]: layer for layer in body["workspace"]["layers"]}
    assert (body["served"], layers["layer-001"]["items"]) == ({"layer-001": 4}, [])
    assert len(layers["layer-000"]["items"]) == 4


def test_snapshot__etag__differs_by_key_limit(stored):
    assert snapshot_current_etag(None) != snapshot_current_etag(frozenset({"production"}))


def test_snapshot__over_the_cap__413_snapshot_too_large(stored, reader_client):
    with override_settings(SNAPSHOT_MAX_BYTES=100):
        response = reader_client.get(API + "snapshot")

    assert response.status_code == 413
    error = response.json()["error"]
    assert (error["code"], error["retryable"], error["limit"]) == ("SNAPSHOT_TOO_LARGE", False, 100)


def test_snapshot__anonymous__401(stored, anonymous_client):
    assert anonymous_client.get(API + "snapshot").status_code == 401


@pytest.mark.parametrize(
    "header", ['"unterminated', "W/", ",,,", '"a", *', "\u00e9t\u00e9", "x" * 5000]
)
def test_snapshot__hostile_if_none_match__an_answer_never_a_500(stored, reader_client, header):
    response = reader_client.get(API + "snapshot", HTTP_IF_NONE_MATCH=header)

    assert response.status_code in (200, 304)

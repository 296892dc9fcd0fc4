"""POST /api/v1/resolve: the CLI's answer for the stored workspace, errors, limits, throttling."""

import json

import pytest
from django.test import override_settings

from profiles.import_export.imports import workspace_import
from profiles.models import Item
from tests.profiles.conftest import API, NOW, WORKSPACE_CASES, small_workspace
from tests.profiles.resolution.lean_contract import DANA, cli_output

pytestmark = pytest.mark.django_db

SMALL_REQUEST = {
    "profile": "profile-0",
    "input": {"message": "refund cards", "customer_id": "C-1"},
    "now": NOW,
}


@pytest.mark.parametrize(("stem", "case"), WORKSPACE_CASES, ids=[s for s, _ in WORKSPACE_CASES])
def test_resolve__conformance_case_loaded_into_the_database__answers_the_cli_bytes(
    stem, case, reader_client, tmp_path, capsys
):
    workspace_import(document=case["workspace"])

    response = reader_client.post(API + "resolve", case["request"], format="json")

    expected = cli_output(case["workspace"], case["request"], tmp_path, capsys)
    assert response.content == expected
    assert json.loads(response.content) == json.loads(expected)
    error = (case.get("expect") or {}).get("error")
    if error is None:
        assert response.status_code == 200
    else:
        assert response.status_code == (404 if error["code"] == "PROFILE_NOT_FOUND" else 400)


def test_resolve__demo_profile_for_a_customer__includes_only_that_customers_tickets(
    demo, reader_client
):
    response = reader_client.post(API + "resolve", DANA, format="json")

    assert response.status_code == 200
    body = response.json()
    tickets = next(layer for layer in body["layers"] if layer["layer"] == "tickets")
    assert tickets["applicable"]["reason"] == "MATCHED:customer_id"
    paths = [entry["item"] for entry in tickets["materialized"]["items"]]
    owners = {
        item.metadata["customer_id"]
        for item in Item.objects.filter(layer__key="tickets", path__in=paths)
    }
    assert paths
    assert owners == {"C-1001"}
    assert (
        Item.objects.filter(layer__key="tickets").exclude(metadata__customer_id="C-1001").exists()
    )


def test_resolve__by_consumer_and_objective__selects_the_environment_profile(demo, reader_client):
    request = {
        "consumer": "support-assistant",
        "objective": "answer-ticket",
        "environment": "staging",
        "input": {"customer_id": "C-1001"},
        "now": NOW,
    }

    response = reader_client.post(API + "resolve", request, format="json")

    assert response.status_code == 200
    assert response.json()["profile"]["key"] == "support-answer-staging"


def test_resolve__scenario_name__fills_the_request_from_the_saved_scenario(demo, reader_client):
    by_scenario = reader_client.post(
        API + "resolve", {"scenario": "Dana's refund answer rendered as XML"}, format="json"
    )
    spelled_out = reader_client.post(
        API + "resolve",
        {
            "profile": "support-answer",
            "format": "xml",
            "input": {
                "customer_id": "C-1001",
                "message": "My refund was approved on the 18th but the money is still not on "
                "my card. Where is it?",
            },
            "now": NOW,
        },
        format="json",
    )

    assert by_scenario.status_code == 200
    assert by_scenario.content == spelled_out.content
    assert by_scenario.json()["output"]["format"] == "xml"


def test_resolve__scenario_with_fields_in_the_body__the_body_wins(demo, reader_client):
    response = reader_client.post(
        API + "resolve",
        {"scenario": "Dana asks about a late refund", "format": "xml", "now": "2026-12-05"},
        format="json",
    )

    assert response.status_code == 200
    assert response.json()["output"]["format"] == "xml"
    assert response.json()["now"] == "2026-12-05T00:00:00Z"


def test_resolve__unknown_scenario__404_not_found_at_scenario(demo, reader_client):
    response = reader_client.post(API + "resolve", {"scenario": "no such thing"}, format="json")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"
    assert response.json()["error"]["path"] == "scenario"


@pytest.mark.parametrize(
    ("request_body", "status", "code", "path"),
    [
        ({"input": {}}, 400, "INVALID_REQUEST", "profile"),
        ({"profile": "profile-0", "consumer": "x"}, 400, "INVALID_REQUEST", "profile"),
        ({"profile": "profile-0", "surprise": 1}, 400, "INVALID_REQUEST", "surprise"),
        ({"profile": "profile-0", "input": []}, 400, "INVALID_REQUEST", "input"),
        (
            {"profile": "profile-0", "input": {"message": 12}},
            400,
            "INVALID_REQUEST",
            "input.message",
        ),
        (
            {"profile": "profile-0", "input": {"customer_id": {"a": 1}}},
            400,
            "INVALID_REQUEST",
            "input.customer_id",
        ),
        ({"profile": "profile-0", "now": "yesterday"}, 400, "INVALID_REQUEST", "now"),
        ({"profile": "profile-0", "format": "html"}, 400, "INVALID_REQUEST", "format"),
        (
            {"profile": "profile-0", "availability": {"nope": "unknown"}},
            400,
            "INVALID_REQUEST",
            "availability.nope",
        ),
        ({"profile": "nope"}, 404, "PROFILE_NOT_FOUND", "profile"),
        ({"consumer": "nobody", "objective": "x"}, 404, "PROFILE_NOT_FOUND", "consumer"),
    ],
)
def test_resolve__bad_request__error_shape_with_status_code_and_path(
    small, reader_client, request_body, status, code, path
):
    response = reader_client.post(API + "resolve", request_body, format="json")

    assert response.status_code == status
    assert response.json() == {
        "error": {
            "code": code,
            "message": response.json()["error"]["message"],
            "path": path,
            "retryable": False,
        }
    }
    assert response.json()["error"]["message"]


def test_resolve__more_than_100_input_keys__400_at_input(small, reader_client):
    request = {**SMALL_REQUEST, "input": {f"key{n}": n for n in range(101)}}

    response = reader_client.post(API + "resolve", request, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "input"


def test_resolve__message_longer_than_20000_characters__400_at_input_message(small, reader_client):
    request = {**SMALL_REQUEST, "input": {"message": "a" * 20_001}}

    response = reader_client.post(API + "resolve", request, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "input.message"


@pytest.mark.parametrize(
    ("content", "content_type"),
    [(b"{not json", "application/json"), (b"[1, 2]", "application/json"), (b"", "text/plain")],
    ids=["malformed-json", "json-array", "unsupported-media-type"],
)
def test_resolve__unusable_body__4xx_in_the_error_shape(
    small, reader_client, content, content_type
):
    response = reader_client.post(API + "resolve", content, content_type=content_type)

    assert 400 <= response.status_code < 500
    assert set(response.json()["error"]) == {"code", "message", "path", "retryable"}


def test_resolve__body_over_the_upload_limit__413_payload_too_large(small, reader_client):
    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=2_000):
        response = reader_client.post(
            API + "resolve", {**SMALL_REQUEST, "input": {"message": "x" * 5_000}}, format="json"
        )

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"


def test_resolve__anonymous__401_with_token_challenge(small, anonymous_client):
    response = anonymous_client.post(API + "resolve", SMALL_REQUEST, format="json")

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "NOT_AUTHENTICATED"
    assert response["WWW-Authenticate"] == "Token"


def test_resolve__wrong_token__401_authentication_failed(small, anonymous_client):
    anonymous_client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")

    response = anonymous_client.post(API + "resolve", SMALL_REQUEST, format="json")

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "AUTHENTICATION_FAILED"


def test_resolve__session_login__works_like_a_token(small, reader, client):
    client.force_login(reader)

    response = client.post(API + "resolve", SMALL_REQUEST, content_type="application/json")

    assert response.status_code == 200


def test_resolve__over_the_configured_rate__429_with_retry_after(small, reader_client, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"resolve": "2/minute"},
    }

    statuses = [
        reader_client.post(API + "resolve", SMALL_REQUEST, format="json").status_code
        for _ in range(3)
    ]

    assert statuses == [200, 200, 429]
    throttled = reader_client.post(API + "resolve", SMALL_REQUEST, format="json")
    assert throttled.json()["error"]["code"] == "THROTTLED"
    assert int(throttled["Retry-After"]) >= 1


def test_resolve__item_edited_through_the_api__next_resolve_sees_the_edit(demo, editor_client):
    before = editor_client.post(API + "resolve", DANA, format="json").json()
    assert "Shipping and handling" not in before["output"]["text"]

    editor_client.patch(
        API + "layers/customer/items/C-1001", {"title": "Shipping and handling"}, format="json"
    )
    after = editor_client.post(API + "resolve", DANA, format="json").json()

    assert "Shipping and handling" in after["output"]["text"]


def test_resolve__warm_cache__same_query_count_for_a_small_and_a_ten_times_larger_workspace(
    reader_client, django_assert_max_num_queries
):
    # Token lookup (with its user) and the version token: the rows come from the cache.
    # The fetch of the served (filtered) layer's items for this customer: one query.
    # Then the decision log entry: its INSERT inside a savepoint (SAVEPOINT, INSERT, RELEASE).
    queries = 3 + 1 + 3
    request = {
        "profile": "profile-0",
        "input": {"message": "refund cards", "customer_id": "C-1"},
        "now": NOW,
    }
    for items in (4, 40):
        workspace_import(document=small_workspace(layers=3, items=items), mode="replace")
        reader_client.post(API + "resolve", request, format="json")  # compiles once

        with django_assert_max_num_queries(queries):
            response = reader_client.post(API + "resolve", request, format="json")

        assert response.status_code == 200

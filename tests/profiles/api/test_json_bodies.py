"""JSON request bodies: nesting beyond SPEC §2.2's 64 levels, and what is not JSON, answer 400
in the error shape before any view sees them."""

import pytest

from profiles.models import Layer

API = "/api/v1/"


def nested(levels: int) -> str:
    """Return a JSON object whose ``input`` holds ``levels`` - 1 more levels of lists."""
    return '{"profile": "profile-0", "input": ' + "[" * (levels - 1) + "]" * (levels - 1) + "}"


def post_json(client, url: str, text: str | bytes):
    return client.post(url, text, content_type="application/json")


def assert_invalid_request(response, path: str = "") -> str:
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["path"]) == ("INVALID_REQUEST", path)
    return error["message"]


@pytest.mark.parametrize("levels", [65, 5_000, 100_000])
@pytest.mark.parametrize("url", ["resolve", "layers/", "profiles/profile-0/preview"])
def test_json_body__nested_deeper_than_64__400_before_parsing(small, staff_client, url, levels):
    message = assert_invalid_request(post_json(staff_client, API + url, nested(levels)))
    assert "64" in message


def test_json_body__nested_64_levels__parsed_and_validated_as_usual(small, staff_client):
    response = post_json(staff_client, API + "resolve", nested(64))
    # The request validation, not the parser, refuses a list as input.
    assert response.status_code == 400
    assert response.json()["error"]["path"].startswith("input")


@pytest.mark.parametrize(
    "text",
    [
        '{"profile": "profile-0", "input": {"n": NaN}}',
        '{"profile": "profile-0", "input": {"n": Infinity}}',
        '{"profile": "profile-0", "input": {"n": -Infinity}}',
    ],
)
def test_json_body__nan_or_infinity__400(small, staff_client, text):
    assert_invalid_request(post_json(staff_client, API + "resolve", text))


def test_json_body__integer_of_more_than_4300_digits__400(small, staff_client):
    text = '{"key": "huge", "name": "Huge", "budget": ' + "9" * 4_301 + "}"
    assert_invalid_request(post_json(staff_client, API + "layers/", text))
    assert not Layer.objects.filter(key="huge").exists()


@pytest.mark.parametrize("body", [b'{"profile": "\xff\xfe"}', b"{not json", b""])
def test_json_body__not_utf8_json__400(small, staff_client, body):
    response = post_json(staff_client, API + "resolve", body)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_REQUEST"


def test_json_body__valid__resolves(small, staff_client):
    response = post_json(staff_client, API + "resolve", '{"profile": "profile-0"}')
    assert response.status_code == 200

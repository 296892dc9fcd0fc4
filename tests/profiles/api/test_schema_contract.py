"""What the schema promises and the server keeps (issue 22): JSON bodies only (415 otherwise),
unknown fields refused as declared, list parameters checked, one registry of error codes
shared by the handler, the schema and docs/api.md."""

import re
from pathlib import Path

import pytest
from django.core.cache import cache as django_cache

from profiles.api.exceptions import _DRF_CODES, ERROR_CODES, STATUS_CODES, error_body
from tests.profiles.conftest import API, NOW

pytestmark = pytest.mark.django_db

DOCS = Path(__file__).resolve().parents[3] / "docs" / "api.md"
SMALL_REQUEST = {"profile": "profile-0", "input": {"message": "refund"}, "now": NOW}


@pytest.fixture
def schema(client):
    response = client.get(API + "schema/", {"format": "json"})
    assert response.status_code == 200
    return response.json()


def operation(schema, path: str, method: str) -> dict:
    return schema["paths"][path][method]


def component(schema, reference: str) -> dict:
    return schema["components"]["schemas"][reference.rsplit("/", 1)[1]]


def body_schema(schema, path: str, method: str, media_type="application/json") -> dict:
    content = operation(schema, path, method)["requestBody"]["content"]
    reference = content[media_type]["schema"]["$ref"]
    return schema["components"]["schemas"][reference.rsplit("/", 1)[1]]


# --- media types ---------------------------------------------------------------------------


def test_schema__every_request_body__declared_once_as_json_or_yaml(schema):
    media_types = {
        media_type
        for path in schema["paths"].values()
        for method in path.values()
        for media_type in method.get("requestBody", {}).get("content", {})
    }

    assert media_types == {"application/json", "application/yaml"}


# A comment has no URL of its own: it is listed under its request's comments.
CREATED_WITHOUT_OWN_URL = {"change_request_comments_create"}


def test_schema__every_201__declares_the_location_of_what_it_created(schema):
    created = {
        method["operationId"]: method["responses"]["201"]
        for path in schema["paths"].values()
        for method in path.values()
        if isinstance(method, dict) and "201" in method.get("responses", {})
    }

    without = {
        name for name, answer in created.items() if "Location" not in answer.get("headers", {})
    }
    assert {"keys_create", "webhooks_create", "profile_versions_restore"} <= set(created)
    assert without == CREATED_WITHOUT_OWN_URL


def test_schema__workspace_yaml__export_is_the_document_upload_is_text(schema):
    export = operation(schema, "/api/v1/workspace", "get")["responses"]["200"]["content"]
    upload = operation(schema, "/api/v1/workspace", "post")["requestBody"]["content"]

    # A YAML reader reads the export as the document, the JSON one's object (issue 33: as
    # a string, every YAML export violated its schema for a validating client).
    assert export["application/yaml"]["schema"] == export["application/json"]["schema"]
    assert export["application/yaml"]["schema"] == {"$ref": "#/components/schemas/Workspace"}
    assert upload["application/yaml"]["schema"] == {
        "type": "string",
        "format": "binary",
        "description": "The workspace document (SPEC §2) as YAML text, UTF-8.",
    }


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("application/x-www-form-urlencoded", "profile=profile-0"),
        ("multipart/form-data; boundary=x", '--x\r\nContent-Disposition: form-data; name="a"'),
        ("text/plain", "profile-0"),
    ],
)
def test_resolve__body_not_json__415_in_the_error_shape(small, reader_client, content_type, body):
    response = reader_client.generic("POST", API + "resolve", body, content_type=content_type)

    assert response.status_code == 415
    assert response.json()["error"]["code"] == "UNSUPPORTED_MEDIA_TYPE"
    assert response.json()["error"]["retryable"] is False


def test_layer_create__form_body__415_and_nothing_created(small, editor_client):
    response = editor_client.post(API + "layers/", {"key": "formed"})  # a multipart form

    assert response.status_code == 415
    assert editor_client.get(API + "layers/formed").status_code == 404


def test_import__yaml_body__accepted_as_text(small, editor_client):
    response = editor_client.generic(
        "POST", API + "workspace", "layers:\n- key: yamled\n", content_type="application/yaml"
    )

    assert response.status_code == 202
    assert response.json()["status"] == "succeeded"


# --- unknown fields ------------------------------------------------------------------------


def test_schema__request_bodies__refuse_unknown_fields(schema):
    for path, method in [
        ("/api/v1/resolve", "post"),
        ("/api/v1/layers/", "post"),
        ("/api/v1/profiles/{key}", "put"),
        ("/api/v1/change-requests/", "post"),
    ]:
        body = body_schema(schema, path, method)
        # A body of two shapes (a profile's change request or a change set): each refuses.
        for shape in [component(schema, one["$ref"]) for one in body.get("oneOf", [])] or [body]:
            assert shape["additionalProperties"] is False, path


def test_schema__update_bodies__the_key_is_not_writable(schema):
    assert "key" not in body_schema(schema, "/api/v1/profiles/{key}", "put")["properties"]
    assert (
        "path" not in body_schema(schema, "/api/v1/layers/{key}/items/{path}", "put")["properties"]
    )


def test_resolve__unknown_field__400_naming_it(small, reader_client):
    response = reader_client.post(
        API + "resolve", {**SMALL_REQUEST, "colour": "red"}, format="json"
    )

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "colour"


# --- list parameters -----------------------------------------------------------------------


@pytest.mark.parametrize("value", ["", "-1", "0", "ten", "1.5", "9" * 20])
def test_list__page_size_invalid__400_naming_page_size(small, reader_client, value):
    response = reader_client.get(API + "profiles/", {"page_size": value})

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "page_size"


def test_list__page_size_valid__that_many(small, reader_client):
    response = reader_client.get(API + "profiles/", {"page_size": "1"})

    assert response.status_code == 200
    assert len(response.json()["results"]) == 1


@pytest.mark.parametrize("value", ["0", "x", "-2"])
def test_list__page_invalid__400_naming_page(small, reader_client, value):
    response = reader_client.get(API + "profiles/", {"page": value})

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "page"


def test_list__page_past_the_last__404_as_declared(small, reader_client, schema):
    response = reader_client.get(API + "profiles/", {"page": "99"})

    assert response.status_code == 404
    assert "404" in operation(schema, "/api/v1/profiles/", "get")["responses"]


@pytest.mark.parametrize("name", ["mine", "review"])
def test_change_requests__boolean_parameter_not_a_boolean__400_naming_it(
    release, editor_client, name
):
    response = editor_client.get(API + "change-requests/", {name: "perhaps"})

    assert response.status_code == 400
    assert response.json()["error"]["path"] == name


def test_schema__numeric_lookups__integers_in_paths(schema):
    parameters = operation(schema, "/api/v1/change-requests/{id}", "get")["parameters"]
    version = operation(schema, "/api/v1/profiles/{key}/versions/{number}", "get")["parameters"]

    assert {"type": "integer", "minimum": 1} in [parameter["schema"] for parameter in parameters]
    assert {"type": "integer", "minimum": 1} in [parameter["schema"] for parameter in version]


# --- headers -------------------------------------------------------------------------------


def test_schema__if_match_and_etag__declared_where_the_server_uses_them(schema):
    update = operation(schema, "/api/v1/profiles/{key}/rules/{layer}", "patch")
    approve = operation(schema, "/api/v1/change-requests/{id}/approve", "post")
    resolve = operation(schema, "/api/v1/resolve", "post")

    assert {"in": "header", "name": "If-Match"}.items() <= update["parameters"][-1].items()
    assert [p["required"] for p in approve["parameters"] if p["name"] == "If-Match"] == [True]
    assert "ETag" in update["responses"]["200"]["headers"]
    assert "ETag" in update["responses"]["412"]["headers"]
    assert "Retry-After" in resolve["responses"]["429"]["headers"]
    assert "X-Profile-Version" in resolve["responses"]["200"]["headers"]
    assert "304" in resolve["responses"]
    assert "If-None-Match" in [parameter["name"] for parameter in resolve["parameters"]]


def test_schema__create__links_to_read_and_update(schema):
    links = operation(schema, "/api/v1/profiles/", "post")["responses"]["201"]["links"]

    assert links["Retrieve"]["operationId"] == "profiles_retrieve"
    assert links["Update"]["parameters"] == {"key": "$response.body#/key"}


# --- error codes ---------------------------------------------------------------------------


def documented_codes() -> set[str]:
    """Return the codes of docs/api.md's Errors table."""
    section = DOCS.read_text(encoding="utf-8").split("\n## Errors", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if re.match(r"\| \d{3} \|", line)]
    return {code for row in rows for code in re.findall(r"`([A-Z_]+)`", row.split("|")[2])}


def test_error_codes__registry__is_the_documented_table():
    assert set(ERROR_CODES) == documented_codes()


def test_error_codes__schema_enum__is_the_registry(schema):
    code = schema["components"]["schemas"]["ErrorDetail"]["properties"]["code"]

    assert schema["components"]["schemas"]["ErrorCodeEnum"]["enum"] == list(ERROR_CODES)
    assert code == {
        "allOf": [{"$ref": "#/components/schemas/ErrorCodeEnum"}],
        **{name: value for name, value in code.items() if name != "allOf"},
    }
    assert "retryable" in schema["components"]["schemas"]["ErrorDetail"]["required"]


ROOT = Path(__file__).resolve().parents[3]
CODE_LITERAL = re.compile(r'(?:code = |error_body\(|ApiError\(\d{3}, )"([A-Z][A-Z_]+)"')


def test_error_codes__every_code_the_source_raises__is_registered():
    # Given every code written in the code (an error class's code, an error body, an ApiError)
    used = {
        code
        for folder in ("profiles", "ctxstudio", "resolver")
        for path in (ROOT / folder).rglob("*.py")
        for code in CODE_LITERAL.findall(path.read_text(encoding="utf-8"))
    }

    # Then each is registered (the engine's base class "ERROR" is answered INVALID_REQUEST)
    assert {"INVALID_REQUEST", "SELF_APPROVAL", "LOGIN_LOCKED_OUT"} <= used
    assert used - {"ERROR"} <= set(ERROR_CODES)
    assert set(STATUS_CODES.values()) <= set(ERROR_CODES)
    assert {code for _, code in _DRF_CODES} <= set(ERROR_CODES)


def test_error_body__unregistered_code__refused():
    with pytest.raises(ValueError, match="NOT_A_CODE"):
        error_body("NOT_A_CODE", "message")


@pytest.mark.parametrize(
    ("code", "retryable"),
    [("THROTTLED", True), ("SERVICE_UNAVAILABLE", True), ("PRECONDITION_FAILED", False)],
)
def test_error_body__retryable__the_codes_default(code, retryable):
    assert error_body(code, "message")["error"]["retryable"] is retryable


def test_resolve__throttled__retryable_true(small, reader_client, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"resolve": "1/minute"},
    }
    django_cache.clear()
    reader_client.post(API + "resolve", SMALL_REQUEST, format="json")

    response = reader_client.post(API + "resolve", SMALL_REQUEST, format="json")

    assert response.status_code == 429
    assert response.json()["error"]["retryable"] is True


def test_invalid_workspace_write__error__carries_retryable(small, editor_client):
    response = editor_client.post(
        API + "layers/", {"key": "x", "availability": "sometimes"}, format="json"
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_WORKSPACE"
    assert response.json()["error"]["retryable"] is False


# --- small ---------------------------------------------------------------------------------


def test_expand__scenario__fills_the_request_as_in_resolve(demo, reader_client):
    resolution = reader_client.post(
        API + "resolve", {"scenario": "Dana asks about a late refund"}, format="json"
    ).json()
    ref = resolution["references"][0]["ref"]

    response = reader_client.post(
        API + "expand", {"scenario": "Dana asks about a late refund", "ref": ref}, format="json"
    )

    assert response.status_code == 200
    assert response.json()["ref"] == ref


def test_schema__examples__name_layers_that_exist(schema, demo, reader_client):
    examples = operation(schema, "/api/v1/resolve", "post")["requestBody"]["content"][
        "application/json"
    ]["examples"]
    named = {
        layer
        for example in examples.values()
        for layer in (example["value"].get("availability") or {})
    }
    layers = {layer["key"] for layer in reader_client.get(API + "layers/").json()["results"]}

    assert named and named <= layers

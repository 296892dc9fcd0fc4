"""Requests refused before any view runs, and API errors that Django answers itself: every
/api/ error in the shape {"error": {"code", "message", "path"}}, never an HTML page."""

import pytest
from django.db import DataError
from django.test import Client

from profiles.import_export.imports import workspace_import
from profiles.models import Layer, Profile, Rule
from tests.profiles.conftest import small_workspace

pytestmark = pytest.mark.django_db


@pytest.fixture
def small(db):
    workspace_import(document=small_workspace())


@pytest.fixture
def staff_client(admin_user) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(admin_user)
    return client


def assert_api_error(response, status: int, code: str, path: str | None = None) -> dict:
    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert set(error) == {"code", "message", "path", "retryable"}
    assert error["code"] == code
    if path is not None:
        assert error["path"] == path
    return error


# --- NUL in the URL, a query parameter or a form field ------------------------------------


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("/api/v1/layers/?search=%00", "search"),
        ("/api/v1/layers/layer-000/items/?metadata.customer_id=%00", "metadata.customer_id"),
        ("/api/v1/profiles/?q=ok&q=no%00", "q"),  # any value of a repeated parameter
        ("/api/v1/profiles/?%00=1", ""),  # the name itself
        ("/api/v1/profiles/profile-%00", ""),  # the URL path
    ],
)
def test_api__nul_in_url_or_query__400_in_the_error_shape(staff_client, small, url, path):
    response = staff_client.get(url)
    assert_api_error(response, 400, "INVALID_REQUEST", path)
    assert "U+0000" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "url", ["/layers/layer-000/items/?q=%00", "/profiles/?q=%00", "/profiles/profile-%000/"]
)
def test_studio__nul_in_url_or_query__400_plain_page(staff_client, small, url):
    response = staff_client.get(url)
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    assert "Nothing was changed" in response.content.decode()


def test_studio__nul_in_a_form_field__400_and_nothing_written(staff_client, small):
    before = Layer.objects.get(key="layer-000").name
    response = staff_client.post("/layers/layer-000/", {"name": "new\x00name", "key": "layer-000"})
    assert response.status_code == 400
    assert "(name)" in response.content.decode()
    assert Layer.objects.get(key="layer-000").name == before


def test_api__nul_in_a_form_body__400_in_the_error_shape(staff_client, small):
    response = staff_client.post("/api/v1/resolve", {"profile": "profile-0\x00"})
    assert_api_error(response, 400, "INVALID_REQUEST", "profile")


# --- body size -------------------------------------------------------------------------------


def test_studio__body_far_beyond_the_limit__413_before_reading(staff_client, small, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    response = staff_client.post(
        "/layers/layer-000/",
        {"name": "x" * (200 * 1024)},
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 413


def test_studio__form_fields_beyond_the_limit__413(staff_client, small, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    response = staff_client.post("/layers/layer-000/", {"name": "x" * 4096})
    assert response.status_code == 413
    assert Layer.objects.get(key="layer-000").name != "x" * 4096


def test_api__body_beyond_the_limit__413_in_the_error_shape(staff_client, small, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    response = staff_client.post(
        "/api/v1/resolve", {"profile": "x" * 4096}, content_type="application/json"
    )
    assert_api_error(response, 413, "PAYLOAD_TOO_LARGE")


# --- errors Django answers itself ---------------------------------------------------------


def test_api__unknown_route__404_in_the_error_shape(staff_client):
    assert_api_error(staff_client.get("/api/v1/no-such-thing"), 404, "NOT_FOUND")
    assert_api_error(staff_client.post("/api/v2/resolve"), 404, "NOT_FOUND")


def test_api__method_not_allowed__405_in_the_error_shape_with_allow(staff_client, small):
    response = staff_client.delete("/api/v1/resolve")
    assert_api_error(response, 405, "METHOD_NOT_ALLOWED")
    assert "POST" in response["Allow"]


def test_api__too_many_query_parameters__400_in_the_error_shape(staff_client, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 10
    query = "&".join(f"p{n}=1" for n in range(20))
    assert_api_error(staff_client.get(f"/api/v1/profiles/?{query}"), 400, "INVALID_REQUEST")


def test_api__unexpected_exception__500_in_the_error_shape_and_logged(
    staff_client, small, monkeypatch, caplog
):
    # Given a database error no handler expects (PostgreSQL's "invalid input" is one),
    from django.db.backends.utils import CursorWrapper

    def refuse(self, *args, **kwargs):
        raise DataError("invalid byte sequence for encoding UTF8")

    staff_client.get("/healthz")  # the session is loaded before the fault
    monkeypatch.setattr(CursorWrapper, "execute", refuse)

    response = staff_client.get("/api/v1/profiles/")

    # then the API answers 500 in its shape (no HTML page, no traceback) and the error is logged.
    error = assert_api_error(response, 500, "INTERNAL_ERROR")
    assert "logged" in error["message"]
    assert any(record.exc_info for record in caplog.records if record.name == "django.request")


def test_studio__unexpected_exception__keeps_the_html_error_page(staff_client, small, monkeypatch):
    from django.db.backends.utils import CursorWrapper

    def refuse(self, *args, **kwargs):
        raise DataError("invalid byte sequence for encoding UTF8")

    staff_client.get("/healthz")
    monkeypatch.setattr(CursorWrapper, "execute", refuse)
    response = staff_client.get("/profiles/")
    assert response.status_code == 500
    assert response["Content-Type"].startswith("text/html")


def test_nothing_half_written__nul_form_rejected_before_the_rule_save(staff_client, small):
    rule = Rule.objects.filter(profile__key="profile-0").first()
    profile = Profile.objects.get(key="profile-0")
    response = staff_client.post(f"/profiles/{profile.key}/", {"budget": "10\x00"})
    assert response.status_code == 400
    assert Rule.objects.get(pk=rule.pk).max_items == rule.max_items

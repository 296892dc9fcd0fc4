"""The error pages in production mode (``DEBUG`` off): each is the studio's own page — ``lang``,
the studio's stylesheet (light and dark), a way back, no template syntax — and under ``/api/``
the same errors keep the API's JSON shape."""

import pytest

from tests.ctxstudio.error_urls import BOOMS
from tests.profiles.doors.test_rendered_pages import assert_no_template_syntax

pytestmark = pytest.mark.django_db


HEADINGS = {
    400: "The request was refused",
    403: "You may not do this",
    404: "Page not found",
    500: "Something went wrong",
    503: "Service unavailable",
}


@pytest.fixture
def production(settings, client):
    settings.DEBUG = False
    client.raise_request_exception = False
    return client


def assert_studio_error_page(response, status: int) -> None:
    assert response.status_code == status
    assert_no_template_syntax(response, f"the {status} page")
    html = response.content.decode()
    assert '<html lang="en">' in html
    assert 'name="color-scheme" content="light dark"' in html
    assert "/static/css/studio.css" in html
    assert f"<h1>{HEADINGS[status]}</h1>" in html
    assert 'href="/"' in html  # a way back
    assert "Traceback" not in html and "Django" not in html


@pytest.mark.urls("tests.ctxstudio.error_urls")
@pytest.mark.parametrize("status", sorted(BOOMS))
def test_error_page__debug_off__is_the_studios_own(production, status):
    response = production.get(f"/boom/{status}/")

    assert_studio_error_page(response, status)


@pytest.mark.urls("tests.ctxstudio.error_urls")
def test_error_page__unknown_address__404_names_the_path(production):
    response = production.get("/no/such/page/")

    assert_studio_error_page(response, 404)
    assert "<code>/no/such/page/</code>" in response.content.decode()


@pytest.mark.urls("tests.ctxstudio.error_urls")
def test_error_page__refused_parameter__400_page_names_it(production):
    response = production.get("/profiles/?q=a%00b")

    assert_studio_error_page(response, 400)
    assert "Query parameter" in response.content.decode()


@pytest.mark.urls("tests.ctxstudio.error_urls")
def test_error_page__csrf_failure__studio_page(production, admin_user):
    production.handler.enforce_csrf_checks = True
    production.force_login(admin_user)

    response = production.post("/profiles/_new/", {"key": "x"})

    assert response.status_code == 403
    assert_no_template_syntax(response, "the CSRF page")
    html = response.content.decode()
    assert '<html lang="en">' in html and "<h1>The form could not be sent</h1>" in html


@pytest.mark.urls("tests.ctxstudio.error_urls")
@pytest.mark.parametrize("status", sorted(BOOMS))
def test_error__api_path__keeps_the_json_error_shape(production, status):
    response = production.get(f"/api/v1/boom/{status}/")

    assert response.status_code == status
    assert response["Content-Type"].startswith("application/json")
    assert set(response.json()["error"]) >= {"code", "message"}

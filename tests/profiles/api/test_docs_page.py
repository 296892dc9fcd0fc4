"""The API docs page (Swagger UI) as served: a language, the studio's contrast fixes and the
control names, all from the studio's static files (the CSP allows no inline script)."""

import json

import pytest

from tests.profiles.doors.test_rendered_pages import assert_no_template_syntax

pytestmark = pytest.mark.django_db


def test_api_docs__page__has_lang_and_the_studios_fixes(client):
    response = client.get("/api/v1/docs/")

    assert response.status_code == 200
    assert_no_template_syntax(response, "the API docs page")
    html = response.content.decode()
    assert '<html lang="en">' in html
    assert "/static/css/api-docs.css" in html and "/static/js/api-docs.js" in html
    assert "<script>" not in html  # no inline script: the CSP would refuse it


def test_api_docs__start_up_script__deep_links_off(client):
    # Deep links nest a link inside each operation's toggle button (nested-interactive).
    response = client.get("/api/v1/docs/?script=")

    script = response.content.decode()
    start = script.index("const swaggerSettings = ") + len("const swaggerSettings = ")
    settings, _ = json.JSONDecoder().raw_decode(script, start)
    assert settings["deepLinking"] is False

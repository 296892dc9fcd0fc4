"""Untrusted content is inert: HTML and script in workspace text are escaped on every page."""

import pytest

from profiles.authoring.scenarios import scenarios_upsert
from profiles.import_export.imports import workspace_import
from profiles.models import Item, Layer, Profile

pytestmark = pytest.mark.django_db

SCRIPT = '<script>alert("x")</script>'
IMAGE = '<img src=x onerror="alert(1)">'
PAYLOAD = f"{SCRIPT}{IMAGE}"

WORKSPACE = {
    "version": 1,
    "consumers": [{"key": "assistant", "name": f"Assistant {PAYLOAD}"}],
    "layers": [
        {
            "key": "kb",
            "name": f"Knowledge {PAYLOAD}",
            "description": f"About {PAYLOAD}",
            "items": [
                {
                    "path": "a.md",
                    "title": f"Refunds {PAYLOAD}",
                    "body": f"Refund body {PAYLOAD}",
                    "metadata": {"updated": "2026-11-01", "note": PAYLOAD},
                }
            ],
        }
    ],
    "profiles": [
        {
            "key": "answer",
            "name": f"Answer {PAYLOAD}",
            "description": f"Why {PAYLOAD}",
            "consumer": "assistant",
            "objective": "answer-ticket",
            "budget": 2000,
            "rules": {"kb": {"facets": ["body", "meta.note"]}},
        }
    ],
}


@pytest.fixture
def hostile_workspace():
    workspace_import(document=WORKSPACE)
    scenarios_upsert(
        scenarios=[
            {
                "name": "hostile",
                "profile": "answer",
                "input": {"message": f"refund {PAYLOAD}"},
                "now": "2026-11-29T12:00:00Z",
                "default": True,
            }
        ]
    )


def studio_pages() -> list[str]:
    layer = Layer.objects.get(key="kb")
    item = Item.objects.get(layer=layer)
    return [
        "/profiles/",
        "/profiles/answer/",
        "/layers/",
        "/layers/kb/",
        "/layers/kb/items/",
        f"/layers/kb/items/{item.pk}/",
    ]


def admin_pages() -> list[str]:
    layer = Layer.objects.get(key="kb")
    item = Item.objects.get(layer=layer)
    profile = Profile.objects.get(key="answer")
    return [
        "/admin/profiles/layer/",
        f"/admin/profiles/layer/{layer.pk}/change/",
        "/admin/profiles/item/",
        f"/admin/profiles/item/{item.pk}/change/",
        f"/admin/profiles/item/{item.pk}/history/",
        "/admin/profiles/profile/",
        f"/admin/profiles/profile/{profile.pk}/change/",
        f"/admin/profiles/profile/{profile.pk}/resolve/",
        "/admin/profiles/scenario/",
        "/admin/profiles/consumer/",
    ]


def assert_inert(html: str, url: str) -> None:
    assert SCRIPT not in html, f"raw <script> payload on {url}"
    assert IMAGE not in html, f"raw <img onerror> payload on {url}"


def test_studio_pages__hostile_workspace_text__render_escaped(admin_client, hostile_workspace):
    escaped_seen = 0
    for url in studio_pages():
        response = admin_client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert_inert(html, url)
        escaped_seen += "&lt;script&gt;" in html
    assert escaped_seen >= 4  # the payload is shown, as text, on most pages


def test_studio_preview__hostile_text_in_output__renders_escaped(admin_client, hostile_workspace):
    page = admin_client.get("/profiles/answer/").content.decode()
    assert "Refund body &lt;script&gt;" in page  # the rendered output panel shows it as text
    assert_inert(page, "/profiles/answer/")


def test_admin_pages__hostile_workspace_text__render_escaped(admin_client, hostile_workspace):
    for url in admin_pages():
        response = admin_client.get(url)
        assert response.status_code == 200, url
        assert_inert(response.content.decode(), url)

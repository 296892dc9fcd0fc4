"""The Content-Security-Policy holds in a real browser: no page needs an inline script."""

import pytest

from profiles.models import Profile

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_pages__opened_in_chromium__no_csp_violation(signed_in, live_server):
    page = signed_in
    violations = []
    page.on(
        "console",
        lambda message: (
            violations.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    profile = Profile.objects.get(key="support-answer")
    urls = [
        "/profiles/",
        "/profiles/support-answer/",
        "/layers/",
        "/layers/kb/items/",
        "/workspace/upload/",
        "/admin/",
        f"/admin/profiles/profile/{profile.pk}/change/",
        f"/admin/profiles/profile/{profile.pk}/resolve/",
        "/api/v1/docs/",
        "/api/v1/profiles/",
    ]
    for url in urls:
        page.goto(live_server.url + url)
        page.wait_for_load_state("networkidle")
        assert not violations, f"{url}: {violations}"

    # The API docs page actually ran its (file-served) start-up script.
    page.goto(live_server.url + "/api/v1/docs/")
    page.get_by_text("Context Studio API").first.wait_for()

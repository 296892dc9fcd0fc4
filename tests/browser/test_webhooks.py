"""Webhooks in a real browser: a staff member creates one pointing at a receiver on this
machine, copies the secret shown once, sends a test, and after the worker has run sees the
delivery in the log; each state passes axe, light and dark."""

import json

import pytest
from playwright.sync_api import expect

from profiles.models import Webhook
from tests.browser.test_accessibility import check, report
from tests.profiles.notifications.receivers import receiver, run_worker, signature_valid

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def worker_sends(settings):
    """The database task backend (the worker is run by the test) and receivers on 127.0.0.1
    allowed, as DEBUG allows them on one machine."""
    settings.TASKS = {
        "default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": settings.TASK_QUEUES}
    }
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    settings.WEBHOOKS_TIMEOUT_SECONDS = 2


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_webhooks__create_send_test_read_the_log__signed_and_accessible(
    signed_in, live_server, scheme
):
    page = signed_in
    page.emulate_media(color_scheme=scheme)
    found = {}
    with receiver(200) as hook:
        # Given the Webhooks page, reached from the navigation (staff)
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Webhooks").click()
        expect(page.get_by_role("heading", name="Webhooks", exact=True)).to_be_visible()
        check(page, f"webhooks, none yet ({scheme})", found)

        # An empty form: errors beside the fields
        page.get_by_role("button", name="Create webhook").click()
        expect(page.locator("#id_url_error")).to_be_visible()
        expect(page.locator("#id_events_error")).to_be_visible()
        check(page, f"webhooks, errors ({scheme})", found)

        # When a webhook is created with no secret typed: one is made and shown once
        page.get_by_label("URL").fill(hook.url)
        page.get_by_label("Description").fill("review bridge")
        page.get_by_label("change_request.opened: a change request was proposed").check()
        page.get_by_role("button", name="Create webhook").click()
        secret = page.locator("#new-secret").text_content().strip()
        assert len(secret) >= 32
        check(page, f"webhook, secret shown once ({scheme})", found)

        # And a test is sent: queued, then delivered once the worker has run
        page.get_by_role("button", name="Send test").click()
        expect(page.get_by_text("queued")).to_be_visible()
        assert secret not in page.content()
        expect(page.locator("#delivery-log tbody tr[data-status='pending']")).to_have_count(1)
        run_worker()
        page.reload()

        # Then the log shows the delivery, and the receiver got it signed with the secret
        row = page.locator("#delivery-log tbody tr").first
        expect(row).to_have_attribute("data-status", "delivered")
        expect(row).to_contain_text("ping")
        expect(row).to_contain_text("HTTP 200")
        check(page, f"webhook, delivery log ({scheme})", found)
    [received] = hook.requests
    assert signature_valid(secret, received)
    assert json.loads(received.body)["event"] == "ping"

    # Deleting asks first
    page.get_by_role("link", name="Delete webhook…").click()
    check(page, f"webhook, delete? ({scheme})", found)
    page.get_by_role("button", name="Delete webhook").click()
    expect(page.locator("#webhook-list")).to_contain_text("No webhooks yet.")
    assert not Webhook.objects.exists()
    assert not found, report(found)

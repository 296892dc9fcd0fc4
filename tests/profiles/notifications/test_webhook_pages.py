"""The studio's webhook pages (staff only) and the admin's read-only records: create with the
secret shown once, edit, the delivery log, "Send test", delete after a confirmation."""

import re

import pytest
from django.contrib.auth.models import User
from django.test import Client

from profiles.models import Webhook, WebhookDelivery
from profiles.notifications.delivery import webhook_delivery_task
from tests.profiles.conftest import join_editors
from tests.profiles.notifications.receivers import receiver

pytestmark = pytest.mark.django_db

SECRET = "a-shared-secret-of-some-length"
FORM = {
    "url": "http://127.0.0.1:9/hook",
    "description": "review bridge",
    "events": ["change_request.opened", "import.finished"],
    "active": "on",
}


@pytest.fixture(autouse=True)
def local_receivers(settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    settings.WEBHOOKS_TIMEOUT_SECONDS = 1


@pytest.fixture
def staff_client(db) -> Client:
    client = Client()
    client.force_login(User.objects.create_user("dana", is_staff=True))
    return client


@pytest.fixture
def lee_client(db) -> Client:
    """An editor (the editors group): writes the workspace, manages no webhook."""
    user = User.objects.create_user("lee")
    join_editors(user)
    client = Client()
    client.force_login(user)
    return client


def made(staff_client, **fields) -> Webhook:
    response = staff_client.post("/webhooks/", {**FORM, "secret": SECRET, **fields})
    assert response.status_code == 200, response.content
    return Webhook.objects.latest("id")


def test_webhook_create__secret_left_empty__one_made_and_shown_once(staff_client):
    response = staff_client.post("/webhooks/", FORM)

    webhook = Webhook.objects.get()
    page = response.content.decode()
    assert response.status_code == 200
    assert "Copy the secret now" in page
    assert webhook.secret in page and len(webhook.secret) >= 32
    assert webhook.events == ["change_request.opened", "import.finished"]
    assert "no-store" in response["Cache-Control"]
    again = staff_client.get(f"/webhooks/{webhook.pk}/").content.decode()
    assert webhook.secret not in again
    assert f"…{webhook.secret[-4:]}" in again
    assert webhook.url in staff_client.get("/webhooks/").content.decode()


def test_webhook_create__private_address_refused__error_beside_the_url(staff_client, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = False

    response = staff_client.post("/webhooks/", {**FORM, "url": "http://169.254.169.254/"})

    assert response.status_code == 400
    assert "link-local address" in response.content.decode()
    assert 'id="id_url_error"' in response.content.decode()
    assert Webhook.objects.count() == 0


def test_webhook_create__no_event_and_short_secret__errors_beside_them(staff_client):
    response = staff_client.post("/webhooks/", {**FORM, "events": [], "secret": "short"})
    page = response.content.decode()

    assert response.status_code == 400
    assert 'id="id_events_error"' in page
    assert Webhook.objects.count() == 0
    response = staff_client.post("/webhooks/", {**FORM, "secret": "short"})
    assert response.status_code == 400
    assert "16 to 200 characters" in response.content.decode()


def test_webhook_edit__secret_left_empty__kept_and_fields_saved(staff_client):
    webhook = made(staff_client)

    response = staff_client.post(
        f"/webhooks/{webhook.pk}/",
        {"url": "http://127.0.0.1:9/other", "events": ["import.finished"], "secret": ""},
    )

    webhook.refresh_from_db()
    assert response.status_code == 302
    assert webhook.url == "http://127.0.0.1:9/other"
    assert webhook.events == ["import.finished"]
    assert webhook.active is False  # the box was not ticked
    assert webhook.secret == SECRET


def test_webhook_send_test__log_shows_the_delivery_and_its_outcome(staff_client):
    with receiver(200) as hook:
        webhook = made(staff_client, url=hook.url)

        response = staff_client.post(f"/webhooks/{webhook.pk}/test/", follow=True)
        delivery = WebhookDelivery.objects.get()
        assert f"Test delivery #{delivery.pk} queued" in response.content.decode()
        webhook_delivery_task.call(delivery.pk, 1)  # the worker's turn

    page = staff_client.get(f"/webhooks/{webhook.pk}/").content.decode()
    row = re.search(rf'<tr data-delivery="{delivery.pk}".*?</tr>', page, re.S).group(0)
    assert 'data-status="delivered"' in row
    assert "HTTP 200" in row and "<code>ping</code>" in row
    assert len(hook.requests) == 1


def test_webhook_log__many_deliveries__paginated_newest_first(staff_client):
    webhook = made(staff_client)
    WebhookDelivery.objects.bulk_create(
        WebhookDelivery(webhook=webhook, event="import.finished") for _ in range(25)
    )
    newest = WebhookDelivery.objects.order_by("-id").first()

    first = staff_client.get(f"/webhooks/{webhook.pk}/").content.decode()
    second = staff_client.get(f"/webhooks/{webhook.pk}/", {"page": 2}).content.decode()

    assert first.count("<tr data-delivery=") == 20
    assert first.index(f'data-delivery="{newest.pk}"') < first.index("Page 1 of 2")
    assert second.count("<tr data-delivery=") == 5


def test_webhook_delete__confirmed__gone_with_its_log(staff_client):
    webhook = made(staff_client)
    WebhookDelivery.objects.create(webhook=webhook, event="ping")

    asked = staff_client.get(f"/webhooks/{webhook.pk}/delete/")
    response = staff_client.post(f"/webhooks/{webhook.pk}/delete/")

    assert asked.status_code == 200
    assert "Its delivery log (1 deliveries) is deleted with it." in asked.content.decode()
    assert response.status_code == 302
    assert not Webhook.objects.exists()
    assert not WebhookDelivery.objects.exists()


def test_webhook_pages__editor__403_and_no_link(staff_client, lee_client):
    webhook = made(staff_client)

    assert "/webhooks/" not in lee_client.get("/profiles/").content.decode()
    assert 'href="/webhooks/"' in staff_client.get("/profiles/").content.decode()
    for method, url in [
        ("get", "/webhooks/"),
        ("post", "/webhooks/"),
        ("get", f"/webhooks/{webhook.pk}/"),
        ("post", f"/webhooks/{webhook.pk}/"),
        ("get", f"/webhooks/{webhook.pk}/delete/"),
        ("post", f"/webhooks/{webhook.pk}/delete/"),
        ("post", f"/webhooks/{webhook.pk}/test/"),
    ]:
        assert getattr(lee_client, method)(url, FORM).status_code == 403, (method, url)
    assert Webhook.objects.get().url == FORM["url"]
    assert WebhookDelivery.objects.count() == 0


def test_webhook_admin__staff__read_only_and_no_secret(staff_client, lee_client):
    webhook = made(staff_client)
    WebhookDelivery.objects.create(webhook=webhook, event="ping", error="HTTP 500")

    page = staff_client.get(f"/admin/profiles/webhook/{webhook.pk}/change/")
    listing = staff_client.get("/admin/profiles/webhookdelivery/")

    assert page.status_code == 200
    assert SECRET not in page.content.decode()
    assert "…ngth" in page.content.decode()
    assert "HTTP 500" in page.content.decode()  # the newest deliveries, inline
    assert listing.status_code == 200
    assert staff_client.get("/admin/profiles/webhook/add/").status_code == 403
    assert lee_client.get("/admin/profiles/webhook/").status_code == 302  # not staff


def test_webhook_send_test__beyond_the_rate__429_and_nothing_queued(staff_client, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "webhook-test": "1/minute",
        },
    }
    webhook = made(staff_client)

    first = staff_client.post(f"/webhooks/{webhook.pk}/test/")
    second = staff_client.post(f"/webhooks/{webhook.pk}/test/")

    assert first.status_code == 302
    assert second.status_code == 429
    assert "You have asked for test deliveries many times" in second.content.decode()
    assert WebhookDelivery.objects.count() == 1

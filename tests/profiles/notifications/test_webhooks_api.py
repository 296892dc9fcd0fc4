"""``/api/v1/webhooks``: staff only, the secret never shown again, each field's error at its
path, the SSRF refusal, the delivery log, "send test" (throttled), and a receiver that never
answers never holding up the request that announced the event."""

# ruff: noqa: F811 (editor and staff: the API's fixtures, imported over this folder's)

import time

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from profiles.models import Webhook, WebhookDelivery
from profiles.notifications.delivery import webhook_delivery_task
from tests.profiles.conftest import API, api_key_for, editor, staff  # noqa: F401 (fixtures)
from tests.profiles.notifications.receivers import (
    receiver,
    run_worker,
    signature_valid,
    silent_receiver,
)

pytestmark = pytest.mark.django_db

SECRET = "a-shared-secret-of-some-length"
NEW = {"url": "http://127.0.0.1:9/hook", "events": ["change_request.opened"], "secret": SECRET}


@pytest.fixture(autouse=True)
def local_receivers(settings):
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    settings.WEBHOOKS_RETRY_BASE_SECONDS = 0
    settings.WEBHOOKS_TIMEOUT_SECONDS = 1


def error(response) -> dict:
    return response.json()["error"]


def created(client, **fields) -> dict:
    response = client.post(API + "webhooks/", {**NEW, **fields}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_webhook_create__staff__201_with_location(staff_client):
    response = staff_client.post(API + "webhooks/", NEW, format="json")

    assert response.status_code == 201
    assert response["Location"] == f"http://testserver{API}webhooks/{response.json()['id']}"
    assert staff_client.get(response["Location"]).json() == response.json()


def test_webhook_create__staff__created_and_the_secret_never_shown(staff_client):
    body = created(staff_client, description="chat bridge")

    assert body["url"] == NEW["url"]
    assert body["events"] == ["change_request.opened"]
    assert body["secretMasked"] == "…ngth"
    assert body["createdBy"] == "staff"
    assert body["deliveriesUrl"] == f"/api/v1/webhooks/{body['id']}/deliveries"
    for answer in (
        staff_client.get(API + "webhooks/"),
        staff_client.get(API + f"webhooks/{body['id']}"),
        staff_client.patch(API + f"webhooks/{body['id']}", {"active": False}, format="json"),
    ):
        assert answer.status_code == 200
        assert SECRET not in answer.content.decode()
    assert Webhook.objects.get().secret == SECRET


def test_webhooks__editor__403_on_every_door(staff_client, editor_client):
    webhook = created(staff_client)["id"]

    for method, path, body in [
        ("get", "webhooks/", None),
        ("post", "webhooks/", NEW),
        ("get", f"webhooks/{webhook}", None),
        ("patch", f"webhooks/{webhook}", {"active": False}),
        ("delete", f"webhooks/{webhook}", None),
        ("get", f"webhooks/{webhook}/deliveries", None),
        ("post", f"webhooks/{webhook}/test", None),
    ]:
        response = getattr(editor_client, method)(API + path, body, format="json")
        assert response.status_code == 403, (method, path)
        assert error(response)["code"] == "PERMISSION_DENIED"
        assert "MANAGE_WEBHOOKS" in error(response)["message"]
    assert Webhook.objects.get().active
    assert WebhookDelivery.objects.count() == 0


def test_webhooks__anonymous__401(anonymous_client):
    assert anonymous_client.get(API + "webhooks/").status_code == 401


def test_webhooks__staff_with_a_scoped_write_key__403_forbidden(staff):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_for(staff, scopes=['write'])}")

    response = client.post(API + "webhooks/", NEW, format="json")

    assert response.status_code == 403
    assert error(response)["code"] == "FORBIDDEN"


@pytest.mark.parametrize(
    ("body", "path", "code"),
    [
        ({"events": ["change_request.opened", "nope"]}, "events[1]", "INVALID_REQUEST"),
        ({"events": []}, "events", "INVALID_REQUEST"),
        ({"secret": "short"}, "secret", "INVALID_REQUEST"),
        ({"url": "ftp://example.com/"}, "url", "INVALID_REQUEST"),
        ({"colour": "red"}, "colour", "INVALID_REQUEST"),
        ({"url": "http://169.254.169.254/latest/meta-data/"}, "url", "WEBHOOK_URL_REFUSED"),
        ({"url": "http://[::1]:8000/"}, "url", "WEBHOOK_URL_REFUSED"),
    ],
)
def test_webhook_create__invalid_field__400_naming_it(staff_client, settings, body, path, code):
    settings.WEBHOOKS_ALLOW_PRIVATE = False
    public = {**NEW, "url": "https://93.184.215.14/hook"}

    response = staff_client.post(API + "webhooks/", {**public, **body}, format="json")

    assert response.status_code == 400
    assert (error(response)["code"], error(response)["path"]) == (code, path)
    assert Webhook.objects.count() == 0


@pytest.mark.parametrize("missing", ["url", "events", "secret"])
def test_webhook_create__required_field_missing__400_naming_it(staff_client, missing):
    body = {name: value for name, value in NEW.items() if name != missing}

    response = staff_client.post(API + "webhooks/", body, format="json")

    assert response.status_code == 400
    assert error(response)["path"] == missing


def test_webhook_update_and_delete__staff__changed_then_gone(staff_client):
    webhook = created(staff_client)["id"]

    changed = staff_client.patch(
        API + f"webhooks/{webhook}",
        {"events": ["import.finished"], "secret": "a-brand-new-secret-value"},
        format="json",
    )
    refused = staff_client.patch(API + f"webhooks/{webhook}", {"events": ["x"]}, format="json")
    deleted = staff_client.delete(API + f"webhooks/{webhook}")

    assert changed.status_code == 200
    assert changed.json()["events"] == ["import.finished"]
    assert changed.json()["secretMasked"] == "…alue"
    assert (refused.status_code, error(refused)["path"]) == (400, "events[0]")
    assert deleted.status_code == 204
    assert staff_client.get(API + f"webhooks/{webhook}").status_code == 404


def test_webhook_test__staff__ping_delivered_and_in_the_log_newest_first(staff_client):
    with receiver(200) as hook:
        webhook = created(staff_client, url=hook.url)["id"]

        first = staff_client.post(API + f"webhooks/{webhook}/test")
        second = staff_client.post(API + f"webhooks/{webhook}/test")
        # The worker's turn (the test's transaction never commits: the task is run here)
        for delivery in WebhookDelivery.objects.order_by("id"):
            webhook_delivery_task.call(delivery.pk, 1)

    assert (first.status_code, second.status_code) == (202, 202)
    assert first.json()["event"] == "ping"
    assert first.json()["status"] == "pending"
    log = staff_client.get(API + f"webhooks/{webhook}/deliveries", {"page_size": 1})
    assert log.status_code == 200
    assert log.json()["count"] == 2
    [newest] = log.json()["results"]
    assert newest["id"] == second.json()["id"]
    assert (newest["status"], newest["attempts"], newest["responseStatus"]) == ("delivered", 1, 200)
    assert log.json()["next"]
    assert len(hook.requests) == 2
    assert all(signature_valid(SECRET, received) for received in hook.requests)


def test_webhook_test__beyond_the_rate__429(staff_client, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "webhook-test": "2/minute",
        },
    }
    webhook = created(staff_client)["id"]

    statuses = [staff_client.post(API + f"webhooks/{webhook}/test").status_code for _ in range(3)]

    assert statuses == [202, 202, 429]
    assert WebhookDelivery.objects.count() == 2


def test_webhook__unknown_id__404(staff_client):
    assert staff_client.get(API + "webhooks/999").status_code == 404
    assert staff_client.post(API + "webhooks/999/test").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_event__receiver_never_answers__request_returns_at_once_and_the_worker_times_out(
    settings, small
):
    # Given the database task backend, a webhook whose receiver accepts and never answers,
    # and an attempt limit of 2 s
    settings.TASKS = {
        "default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": settings.TASK_QUEUES}
    }
    settings.WEBHOOKS_TIMEOUT_SECONDS = 2
    settings.WEBHOOKS_MAX_ATTEMPTS = 1
    staff = User.objects.create_user("staff", is_staff=True)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_key_for(staff)}")
    with silent_receiver() as url:
        response = client.post(
            API + "webhooks/",
            {"url": url, "events": ["profile_version.created"], "secret": SECRET},
            format="json",
        )
        assert response.status_code == 201

        # When a write that announces an event is made (it commits: a real transaction)
        started = time.monotonic()
        response = client.patch(API + "profiles/profile-0", {"budget": 4321}, format="json")
        answered = time.monotonic() - started

        # Then the request answered without waiting for the receiver
        assert response.status_code == 200
        assert answered < 1.5
        delivery = WebhookDelivery.objects.get()
        assert (delivery.status, delivery.attempts) == ("pending", 0)

        # And the worker's attempt gives up at the timeout and records it
        started = time.monotonic()
        run_worker()
        waited = time.monotonic() - started

    delivery.refresh_from_db()
    assert 1.9 < waited < 5
    assert (delivery.status, delivery.attempts) == ("failed", 1)
    assert delivery.error.startswith("timed out: no answer within 2 s")

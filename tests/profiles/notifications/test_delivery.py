"""Deliveries sent for real to receivers on 127.0.0.1: signed, retried with backoff, failed,
timed out, never followed through a redirect, and never sent from inside a request."""

import datetime as dt
import json
import time

import pytest
from django.db import transaction
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from profiles.models import WebhookDelivery
from profiles.notifications.delivery import webhook_deliveries_prune, webhook_delivery_task
from profiles.notifications.webhooks import webhook_event_emit, webhook_test
from tests.profiles.notifications.conftest import SECRET, make_webhook
from tests.profiles.notifications.receivers import (
    receiver,
    run_worker,
    signature_valid,
    silent_receiver,
)

pytestmark = pytest.mark.django_db

EVENT = "change_request.opened"
PAYLOAD = {"changeRequest": {"id": 7, "title": "More policy", "status": "open"}}


def database_tasks(settings):
    settings.TASKS = {
        "default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": settings.TASK_QUEUES}
    }


def emitted(django_capture_on_commit_callbacks, event=EVENT, payload=PAYLOAD):
    """Emit as a feature does inside its write's transaction; run what waits for the commit."""
    with django_capture_on_commit_callbacks(execute=True):
        webhook_event_emit(event, payload)
    return WebhookDelivery.objects.order_by("-id").first()


@pytest.mark.django_db(transaction=True)  # the worker commits its own
def test_delivery__receiver_answers_200__signed_body_delivered(
    staff, settings, django_capture_on_commit_callbacks
):
    database_tasks(settings)
    with receiver(200) as hook:
        webhook = make_webhook(staff, hook.url)
        delivery = emitted(django_capture_on_commit_callbacks)
        assert hook.requests == []  # nothing is sent until the worker runs

        run_worker()

    delivery.refresh_from_db()
    assert delivery.status == "delivered"
    assert (delivery.attempts, delivery.response_status, delivery.error) == (1, 200, "")
    assert delivery.delivered_at is not None
    [received] = hook.requests
    assert received.path == "/hooks/context-studio"
    assert received.headers["Content-Type"] == "application/json"
    assert received.headers["X-Event"] == EVENT
    assert received.headers["X-Delivery"] == str(delivery.pk)
    assert signature_valid(SECRET, received)
    assert not signature_valid("another-secret-of-some-length", received)
    body = json.loads(received.body)
    assert body == {
        "event": EVENT,
        "id": delivery.pk,
        "createdAt": body["createdAt"],
        "data": PAYLOAD,
    }
    assert dt.datetime.fromisoformat(body["createdAt"]) == delivery.created_at
    assert webhook.deliveries.count() == 1


@pytest.mark.django_db(transaction=True)  # the worker commits its own
def test_delivery__receiver_keeps_failing__retried_then_failed(
    staff, settings, django_capture_on_commit_callbacks
):
    # Given a receiver that answers 500, 503 and then 400, and four attempts at most
    settings.WEBHOOKS_MAX_ATTEMPTS = 4
    database_tasks(settings)
    with receiver(500, 503, 400) as hook:
        make_webhook(staff, hook.url)
        delivery = emitted(django_capture_on_commit_callbacks)

        # When the worker runs each attempt as it falls due (the backoff base is 0 here)
        for _ in range(6):
            run_worker()

    # Then four attempts were made, each signed the same, and the delivery failed
    delivery.refresh_from_db()
    assert len(hook.requests) == 4
    assert len({received.body for received in hook.requests}) == 1
    assert all(signature_valid(SECRET, received) for received in hook.requests)
    assert delivery.status == "failed"
    assert delivery.attempts == 4
    assert delivery.response_status == 400
    assert delivery.error.startswith("HTTP 400")
    assert "receiver says no" in delivery.error
    assert delivery.next_attempt_at is None


def test_delivery__fails_then_succeeds__delivered_on_the_retry(staff, settings):
    # The immediate backend (the suite's) runs each retry at once: the chain, in one call.
    with receiver(502, 200) as hook:
        webhook = make_webhook(staff, hook.url)
        webhook_event_emit(EVENT, PAYLOAD)
        delivery = webhook.deliveries.get()

        webhook_delivery_task.call(delivery.pk, 1)

    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("delivered", 2, 200)
    assert len(hook.requests) == 2


def test_delivery__failed_attempt__next_one_enqueued_after_the_backoff(staff, settings):
    # Given the database backend and a backoff of 60 s, 5 × longer each time
    database_tasks(settings)
    settings.WEBHOOKS_RETRY_BASE_SECONDS = 60
    with receiver(500) as hook:
        webhook = make_webhook(staff, hook.url)
        webhook_event_emit(EVENT, PAYLOAD)  # inside the test's transaction: not enqueued yet
        delivery = webhook.deliveries.get()
        assert DBTaskResult.objects.count() == 0

        # When the first two attempts fail
        before = timezone.now()
        webhook_delivery_task.call(delivery.pk, 1)
        delivery.refresh_from_db()
        first_retry = delivery.next_attempt_at
        second = timezone.now()  # made early, by hand: what counts is the delay after it
        webhook_delivery_task.call(delivery.pk, 2)
        delivery.refresh_from_db()

    # Then the second is due a minute after the first, the third five minutes after the
    # second, each enqueued to run no earlier
    assert dt.timedelta(seconds=59) < first_retry - before < dt.timedelta(seconds=62)
    assert delivery.status == "pending"
    assert delivery.attempts == 2
    assert dt.timedelta(seconds=299) < delivery.next_attempt_at - second < dt.timedelta(seconds=302)
    runs = sorted(DBTaskResult.objects.values_list("run_after", flat=True))
    assert [run.replace(microsecond=0) for run in runs] == [
        first_retry.replace(microsecond=0),
        delivery.next_attempt_at.replace(microsecond=0),
    ]
    # And a task enqueued twice for one attempt sends once
    assert webhook_delivery_task.call(delivery.pk, 2) == "skipped"
    assert len(hook.requests) == 2


def test_delivery__receiver_never_answers__timeout_recorded_within_the_limit(staff, settings):
    settings.WEBHOOKS_MAX_ATTEMPTS = 1
    with silent_receiver() as url:
        webhook = make_webhook(staff, url)
        webhook_event_emit(EVENT, PAYLOAD)
        delivery = webhook.deliveries.get()

        started = time.monotonic()
        webhook_delivery_task.call(delivery.pk, 1)
        waited = time.monotonic() - started

    delivery.refresh_from_db()
    assert 0.9 < waited < 3  # the timeout (1 s here), not forever
    assert delivery.status == "failed"
    assert delivery.response_status is None
    assert delivery.error.startswith("timed out: no answer within 1 s")


def test_delivery__receiver_redirects__not_followed_and_a_failed_attempt(staff, settings):
    settings.WEBHOOKS_MAX_ATTEMPTS = 1
    with receiver(302, headers={"Location": "http://127.0.0.1:9/elsewhere"}) as hook:
        webhook = make_webhook(staff, hook.url)
        webhook_event_emit(EVENT, PAYLOAD)
        delivery = webhook.deliveries.get()

        webhook_delivery_task.call(delivery.pk, 1)

    delivery.refresh_from_db()
    assert len(hook.requests) == 1
    assert delivery.status == "failed"
    assert delivery.response_status == 302
    assert "redirects are not followed" in delivery.error


def test_delivery__address_private_by_delivery_time__refused_and_nothing_sent(staff, settings):
    # Given a webhook saved while private addresses were allowed
    settings.WEBHOOKS_MAX_ATTEMPTS = 1
    with receiver(200) as hook:
        webhook = make_webhook(staff, hook.url)
        webhook_event_emit(EVENT, PAYLOAD)
        delivery = webhook.deliveries.get()
        # When they no longer are by the time the worker sends it
        settings.WEBHOOKS_ALLOW_PRIVATE = False

        webhook_delivery_task.call(delivery.pk, 1)

    # Then the receiver got nothing and the attempt says why
    delivery.refresh_from_db()
    assert hook.requests == []
    assert delivery.status == "failed"
    assert delivery.error.startswith("not sent: ")
    assert "127.0.0.1" in delivery.error and "loopback" in delivery.error


def test_delivery__receiver_gone__connection_refused_recorded(staff, settings):
    settings.WEBHOOKS_MAX_ATTEMPTS = 1
    with receiver(200) as hook:
        url = hook.url
    webhook = make_webhook(staff, url)  # the port is closed now
    webhook_event_emit(EVENT, PAYLOAD)
    delivery = webhook.deliveries.get()

    webhook_delivery_task.call(delivery.pk, 1)

    delivery.refresh_from_db()
    assert delivery.status == "failed"
    assert "ConnectionRefusedError" in delivery.error


@pytest.mark.django_db(transaction=True)  # the worker commits its own
def test_emit__transaction_rolled_back__nobody_notified(staff, settings):
    database_tasks(settings)
    with receiver(200) as hook:
        make_webhook(staff, hook.url)
        with pytest.raises(RuntimeError), transaction.atomic():
            webhook_event_emit(EVENT, PAYLOAD)
            raise RuntimeError("the write failed")
        run_worker()

    assert WebhookDelivery.objects.count() == 0
    assert DBTaskResult.objects.count() == 0
    assert hook.requests == []


def test_emit__webhooks_of_other_events_or_inactive__get_nothing(staff):
    make_webhook(staff, "http://127.0.0.1:9/a", events=["import.finished"])
    make_webhook(staff, "http://127.0.0.1:9/b", active=False)
    listening = make_webhook(staff, "http://127.0.0.1:9/c")

    webhook_event_emit(EVENT, PAYLOAD)

    assert list(WebhookDelivery.objects.values_list("webhook", "event", "status")) == [
        (listening.pk, EVENT, "pending")
    ]


def test_webhook_test__ping_delivered_whatever_the_events(staff, settings):
    with receiver(204) as hook:
        webhook = make_webhook(staff, hook.url, events=["import.finished"])
        delivery = webhook_test(user=staff, webhook=webhook)

        webhook_delivery_task.call(delivery.pk, 1)

    delivery.refresh_from_db()
    assert delivery.status == "delivered"
    assert hook.requests[0].headers["X-Event"] == "ping"
    assert json.loads(hook.requests[0].body)["data"]["requestedBy"] == "dana"


@pytest.mark.django_db(transaction=True)
def test_worker_start__delivery_whose_task_was_lost__sent(staff, settings):
    # Given a pending delivery overdue by ten minutes with no task (the process that made it
    # ended before enqueueing it)
    database_tasks(settings)
    with receiver(200) as hook:
        webhook = make_webhook(staff, hook.url)
        delivery = WebhookDelivery.objects.create(
            webhook=webhook,
            event=EVENT,
            payload=PAYLOAD,
            next_attempt_at=timezone.now() - dt.timedelta(minutes=10),
        )
        fresh = WebhookDelivery.objects.create(
            webhook=webhook, event=EVENT, payload=PAYLOAD, next_attempt_at=timezone.now()
        )
        assert DBTaskResult.objects.count() == 0

        # When a worker starts
        run_worker()

    # Then it enqueued and sent the overdue one (the fresh one may still have its task)
    delivery.refresh_from_db()
    fresh.refresh_from_db()
    assert delivery.status == "delivered"
    assert fresh.status == "pending"
    assert [json.loads(received.body)["id"] for received in hook.requests] == [delivery.pk]


def test_prune__finished_deliveries_past_the_retention__deleted_pending_kept(staff, settings):
    settings.WEBHOOKS_LOG_RETENTION_DAYS = 30
    webhook = make_webhook(staff, "http://127.0.0.1:9/hook")
    old = timezone.now() - dt.timedelta(days=31)
    for status in ("delivered", "failed", "pending"):
        WebhookDelivery.objects.create(webhook=webhook, event=EVENT, status=status, created_at=old)
    recent = WebhookDelivery.objects.create(webhook=webhook, event=EVENT, status="delivered")

    assert webhook_deliveries_prune() == 2

    assert sorted(webhook.deliveries.values_list("status", flat=True)) == ["delivered", "pending"]
    assert webhook.deliveries.filter(pk=recent.pk).exists()

"""Outgoing webhooks: staff point the server at URLs that receive workspace events.

Every door (API, studio, admin) goes through these services, and the services check
``MANAGE_WEBHOOKS`` (staff only) themselves: a webhook makes the server send requests to a
URL of its owner's choosing, so no role below staff, and no API key's scope, may manage one.

The rules of a webhook: ``url`` http(s), at most 2,000 characters, not pointing at a private
address (``profiles.notifications.addresses``); ``events`` a non-empty list of
``WEBHOOK_EVENTS``, each once; ``secret`` 16 to 200 characters, required on create, never
shown again (``secret_masked``); ``description`` at most 200 characters. At most
``WEBHOOKS_MAX`` webhooks exist, which bounds the deliveries one event makes.

Features announce what happened with ``webhook_event_emit(event, payload)`` right after their
write, inside its transaction: the deliveries are rows of that transaction, and their tasks
are enqueued only once it commits (a write that rolls back notifies nobody). Payloads are
small and carry keys, numbers and titles, never item text. The events and their payloads:

* ``change_request.opened`` / ``.approved`` / ``.applied`` / ``.apply_failed``:
  ``{"changeRequest": change_request_payload(...)}`` (``.apply_failed`` adds ``"error"``:
  call ``webhook_event_emit("change_request.apply_failed", change_request_event(cr,
  error={"code", "message"}))`` where a scheduled apply gives up);
* ``profile_version.created``: ``{"profile", "version", "source", "changeRequest",
  "deleted"}``;
* ``import.finished``: ``{"job": {"id", "status", "mode", "layer", "counts", "error"}}``;
* ``ping``: sent by "Send test" only (``webhook_test``); nobody subscribes to it.
"""

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone

from profiles.models import WEBHOOK_EVENTS, Webhook, WebhookDelivery
from profiles.notifications.addresses import (
    WebhookInvalid,
    WebhookUrlRefused,
    webhook_url_check,
)
from profiles.notifications.delivery import delivery_enqueue
from profiles.workspace.permissions import MANAGE_WEBHOOKS, require

__all__ = [
    "PING_EVENT",
    "WEBHOOK_EVENTS",
    "WebhookInvalid",
    "WebhookUrlRefused",
    "change_request_event",
    "import_job_event",
    "profile_version_event",
    "webhook_create",
    "webhook_delete",
    "webhook_deliveries_list",
    "webhook_event_emit",
    "webhook_events_emit",
    "webhook_get",
    "webhook_list",
    "webhook_test",
    "webhook_update",
]

#: The event "Send test" delivers: not one a webhook can subscribe to.
PING_EVENT = "ping"
SECRET_MIN_LENGTH = 16
SECRET_MAX_LENGTH = 200
DESCRIPTION_MAX_LENGTH = 200
FIELDS = ("url", "events", "secret", "active", "description")

#: What each event is for, in the studio's form and the API's schema.
EVENT_HELP = {
    "change_request.opened": "a change request was proposed",
    "change_request.approved": "a reviewer approved a change request",
    "change_request.applied": "an approved change request was applied",
    "change_request.apply_failed": "a scheduled apply could not be made (stale or not approved)",
    "profile_version.created": "a profile got a new version (any door, one event per version)",
    "import.finished": "a workspace import job ended, succeeded or failed",
}


def webhooks_max() -> int:
    return int(getattr(settings, "WEBHOOKS_MAX", 50))


def secret_masked(secret: str) -> str:
    """Return the secret as it is shown after creation: its last four characters only."""
    return "…" + secret[-4:] if secret else ""


# --- validation ---------------------------------------------------------------------------


def _clean_events(events) -> list[str]:
    if not isinstance(events, list | tuple):
        raise WebhookInvalid("events", "must be a list of event names")
    if not events:
        raise WebhookInvalid("events", "must name at least one event")
    if len(events) > len(WEBHOOK_EVENTS):
        raise WebhookInvalid("events", f"lists more than the {len(WEBHOOK_EVENTS)} events")
    cleaned = []
    for index, event in enumerate(events):
        if not isinstance(event, str) or event not in WEBHOOK_EVENTS:
            shown = event if isinstance(event, str) and len(event) <= 64 else "this"
            raise WebhookInvalid(
                f"events[{index}]",
                f'"{shown}" is not an event (use {", ".join(WEBHOOK_EVENTS)})',
            )
        if event in cleaned:
            raise WebhookInvalid(f"events[{index}]", f'"{event}" is listed twice')
        cleaned.append(event)
    return cleaned


def _clean_secret(secret) -> str:
    if not isinstance(secret, str) or not secret:
        raise WebhookInvalid("secret", "is required: the key the receiver checks signatures with")
    if not SECRET_MIN_LENGTH <= len(secret) <= SECRET_MAX_LENGTH:
        raise WebhookInvalid(
            "secret", f"must be {SECRET_MIN_LENGTH} to {SECRET_MAX_LENGTH} characters long"
        )
    if any(ord(character) < 32 or ord(character) == 127 for character in secret):
        raise WebhookInvalid("secret", "must not contain control characters")
    return secret


def _clean_description(description) -> str:
    if description is None:
        return ""
    if not isinstance(description, str):
        raise WebhookInvalid("description", "must be a string")
    if len(description) > DESCRIPTION_MAX_LENGTH:
        raise WebhookInvalid("description", f"is longer than {DESCRIPTION_MAX_LENGTH} characters")
    return description.strip()


def _clean_active(active) -> bool:
    if not isinstance(active, bool):
        raise WebhookInvalid("active", "must be true or false")
    return active


# --- services -------------------------------------------------------------------------------


def webhook_list(*, user) -> QuerySet[Webhook]:
    """Return every webhook, oldest first (MANAGE_WEBHOOKS)."""
    require(user, MANAGE_WEBHOOKS)
    return Webhook.objects.select_related("created_by").order_by("id")


def webhook_get(*, user, webhook_id) -> Webhook | None:
    """Return the webhook ``webhook_id``, or None when there is none (MANAGE_WEBHOOKS)."""
    require(user, MANAGE_WEBHOOKS)
    try:
        webhook_id = int(webhook_id)
    except (TypeError, ValueError):
        return None
    return Webhook.objects.select_related("created_by").filter(pk=webhook_id).first()


def webhook_create(*, user, url, events, secret, description="", active=True) -> Webhook:
    """Create a webhook (MANAGE_WEBHOOKS); raise ``WebhookInvalid`` naming the field."""
    require(user, MANAGE_WEBHOOKS)
    fields = {
        "url": webhook_url_check(url),
        "events": _clean_events(events),
        "secret": _clean_secret(secret),
        "description": _clean_description(description),
        "active": _clean_active(active),
    }
    with transaction.atomic():
        if Webhook.objects.count() >= webhooks_max():
            raise WebhookInvalid("", f"there are already {webhooks_max()} webhooks (the most)")
        return Webhook.objects.create(
            **fields, created_by=user if getattr(user, "pk", None) else None
        )


def webhook_update(*, user, webhook: Webhook, **changes) -> Webhook:
    """Change some fields of a webhook (MANAGE_WEBHOOKS): ``url``, ``events``, ``secret``
    (a new one replaces the old), ``active``, ``description``."""
    require(user, MANAGE_WEBHOOKS)
    cleaners = {
        "url": webhook_url_check,
        "events": _clean_events,
        "secret": _clean_secret,
        "active": _clean_active,
        "description": _clean_description,
    }
    for name in changes:
        if name not in cleaners:
            raise WebhookInvalid(name, "unknown field")
    cleaned = {name: cleaners[name](value) for name, value in changes.items()}
    for name, value in cleaned.items():
        setattr(webhook, name, value)
    if cleaned:
        webhook.save(update_fields=list(cleaned))
    return webhook


def webhook_delete(*, user, webhook: Webhook) -> None:
    """Delete a webhook and its delivery log (MANAGE_WEBHOOKS)."""
    require(user, MANAGE_WEBHOOKS)
    webhook.delete()


def webhook_delivery_count(*, webhook: Webhook) -> int:
    """Return how many deliveries the webhook's log holds (its delete page says so)."""
    return WebhookDelivery.objects.filter(webhook=webhook).count()


def webhook_deliveries_list(*, user, webhook: Webhook) -> QuerySet[WebhookDelivery]:
    """Return the webhook's deliveries, newest first (MANAGE_WEBHOOKS)."""
    require(user, MANAGE_WEBHOOKS)
    return WebhookDelivery.objects.filter(webhook=webhook).order_by("-id")


def _deliveries_create(webhooks, event: str, payload: dict) -> list[WebhookDelivery]:
    now = timezone.now()
    deliveries = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            webhook=webhook, event=event, payload=payload, created_at=now, next_attempt_at=now
        )
        for webhook in webhooks
    )
    # PostgreSQL and SQLite (RETURNING) give the new rows their ids.
    ids = [delivery.pk for delivery in deliveries]

    def enqueue():
        for delivery_id in ids:
            delivery_enqueue(delivery_id=delivery_id)

    transaction.on_commit(enqueue, robust=True)
    return deliveries


def webhook_test(*, user, webhook: Webhook) -> WebhookDelivery:
    """Send the webhook a ``ping`` delivery, whatever its events (MANAGE_WEBHOOKS)."""
    require(user, MANAGE_WEBHOOKS)
    payload = {
        "webhook": webhook.pk,
        "message": "a test delivery sent from Context Studio",
        "requestedBy": user.get_username(),
    }
    return _deliveries_create([webhook], PING_EVENT, payload)[0]


def webhook_event_emit(event: str, payload: dict) -> None:
    """Announce ``event``: one pending delivery per active webhook subscribed to it, each sent
    by the worker once the surrounding transaction commits.

    Call it after the write, inside its transaction; it costs one query when no webhook is
    subscribed. ``payload`` becomes the body's ``data``: keep it small, with no item text.
    """
    webhook_events_emit(event, [payload])


def webhook_events_emit(event: str, payloads: list[dict]) -> None:
    """Announce ``event`` once per payload (one query for them all when nobody listens)."""
    if event not in WEBHOOK_EVENTS:
        raise ValueError(f"unknown webhook event {event!r} (add it to WEBHOOK_EVENTS)")
    if not payloads:
        return
    subscribed = [hook for hook in Webhook.objects.filter(active=True) if event in hook.events]
    if subscribed:
        for payload in payloads:
            _deliveries_create(subscribed, event, payload)


# --- payloads -------------------------------------------------------------------------------


def _site_url(path: str) -> str:
    return settings.SITE_URL.rstrip("/") + path


def change_request_payload(change_request) -> dict:
    """Return a change request as an event names it: id, title, status, studio URL."""
    return {
        "id": change_request.pk,
        "title": change_request.title,
        "status": change_request.status,
        "profile": change_request.profile_key or None,
        "url": _site_url(reverse("change-request", kwargs={"pk": change_request.pk})),
    }


def change_request_event(change_request, **extra) -> dict:
    """Return the payload of a ``change_request.*`` event (``extra``: e.g. ``error``)."""
    return {"changeRequest": change_request_payload(change_request), **extra}


def profile_version_event(version) -> dict:
    """Return the payload of ``profile_version.created`` for one new version."""
    return {
        "profile": version.profile_key,
        "version": version.number,
        "source": version.source,
        "changeRequest": version.change_request_id,
        "deleted": version.document is None,
    }


def import_job_event(*, job_id, status: str, mode: str, layer: str, summary, error) -> dict:
    """Return the payload of ``import.finished``: the job's outcome and counts, no names."""
    counts = None
    if isinstance(summary, dict):  # ImportSummary.as_dict: the counts per kind, then names
        counts = {kind: value for kind, value in summary.items() if isinstance(value, dict)}
        counts.pop("names", None)
    return {
        "job": {
            "id": str(job_id),
            "status": status,
            "mode": mode,
            "layer": layer or None,
            "counts": counts,
            "error": (
                {"code": error.get("code"), "path": error.get("path")}
                if isinstance(error, dict) and error
                else None
            ),
        }
    }

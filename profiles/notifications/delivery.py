"""Sending a webhook delivery: the signed request, its outcome, the retries (the worker's job).

A delivery is only ever sent by a task worker (``webhook_delivery_task``, Django's tasks
framework with the database backend), never inside a web request, and on a queue of its own
(``WEBHOOKS_TASK_QUEUE``, served by a worker of its own: ``db_worker --queue-name webhooks``):
a receiver that is slow or never answers delays no import, bulk job or scheduled apply, and
other deliveries by at most ``WEBHOOKS_TIMEOUT_SECONDS`` an attempt (at most 30; connecting,
sending and reading the answer together: a watchdog closes the connection at the deadline,
so a receiver that trickles its answer a byte at a time cannot hold it longer).

Each attempt checks the URL again (``webhook_url_target``: the name may resolve to another
address since the webhook was saved) and connects to the address it checked. Redirects are
not followed: a 3xx is an answer that is not 2xx, so a failed attempt. A 2xx answer delivers;
anything else (another status, a timeout, a refused connection, a refused address) is a
failed attempt, recorded on the delivery, and retried after ``WEBHOOKS_RETRY_BASE_SECONDS``
× 5^(attempts-1) (1 min, 5 min, 25 min, about 2 h by default) until
``WEBHOOKS_MAX_ATTEMPTS``; then the delivery is ``failed``.

The body is JSON ``{"event", "id", "createdAt", "data"}``, the same bytes at every attempt,
and ``X-Signature-256: sha256=<hex HMAC-SHA256 of the body with the webhook's secret>``.
"""

import contextlib
import hashlib
import hmac
import http.client
import json
import logging
import socket
import ssl
import threading
import time
from datetime import timedelta

from django.conf import settings
from django.db.models import Count
from django.tasks import task, task_backends
from django.utils import timezone

from profiles.models import WebhookDelivery
from profiles.notifications.addresses import WebhookInvalid, webhook_url_target
from profiles.workspace import metrics

logger = logging.getLogger(__name__)

USER_AGENT = "ContextStudio-Webhooks/1"
ERROR_MAX_LENGTH = 500  # characters of an attempt's error kept on the delivery
ANSWER_READ_BYTES = 1024  # of a receiver's answer, read to quote it in the error


def delivery_timeout() -> float:
    return float(getattr(settings, "WEBHOOKS_TIMEOUT_SECONDS", 5))


def max_attempts() -> int:
    return int(getattr(settings, "WEBHOOKS_MAX_ATTEMPTS", 5))


def retry_delay(attempts: int) -> timedelta:
    """Return how long after failed attempt number ``attempts`` the next one is due."""
    base = float(getattr(settings, "WEBHOOKS_RETRY_BASE_SECONDS", 60))
    return timedelta(seconds=base * 5 ** max(0, attempts - 1))


def delivery_body(delivery: WebhookDelivery) -> bytes:
    """Return the exact bytes sent (and signed) for this delivery, the same at every attempt."""
    document = {
        "event": delivery.event,
        "id": delivery.pk,
        "createdAt": delivery.created_at.isoformat().replace("+00:00", "Z"),
        "data": delivery.payload,
    }
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def webhook_signature(secret: str, body: bytes) -> str:
    """Return the ``X-Signature-256`` header's value: ``sha256=`` and the hex HMAC-SHA256."""
    digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def delivery_headers(delivery: WebhookDelivery, body: bytes) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Event": delivery.event,
        "X-Delivery": str(delivery.pk),
        "X-Signature-256": webhook_signature(delivery.webhook.secret, body),
    }


class _PinnedConnection(http.client.HTTPConnection):
    """An HTTP connection to the address that was checked, naming the URL's host."""

    def __init__(self, host, port, *, address: str, timeout: float):
        super().__init__(host, port, timeout=timeout)
        self.address = address

    def connect(self):
        self.sock = socket.create_connection((self.address, self.port), self.timeout)


class _PinnedTlsConnection(http.client.HTTPSConnection):
    """The same over TLS: the certificate is checked against the URL's host name."""

    def __init__(self, host, port, *, address: str, timeout: float):
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self.address = address

    def connect(self):
        sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


class AttemptOutcome:
    """What one attempt got: a status (None when no answer came) and an error text."""

    def __init__(self, status: int | None = None, error: str = ""):
        self.status = status
        self.error = error[:ERROR_MAX_LENGTH]

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def _describe(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"


def delivery_send(*, url: str, body: bytes, headers: dict[str, str]) -> AttemptOutcome:
    """POST ``body`` to ``url`` once, within the timeout; return what came back."""
    timeout = delivery_timeout()
    try:
        target = webhook_url_target(url)
    except WebhookInvalid as exc:
        return AttemptOutcome(error=f"not sent: {exc.message}")
    kind = _PinnedTlsConnection if target.scheme == "https" else _PinnedConnection
    connection = kind(target.host, target.port, address=target.addresses[0], timeout=timeout)
    expired = threading.Event()

    def close_at_deadline():
        expired.set()
        sock = connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)

    watchdog = threading.Timer(timeout, close_at_deadline)
    watchdog.daemon = True
    started = time.monotonic()
    watchdog.start()
    try:
        connection.request("POST", target.target, body=body, headers=headers)
        response = connection.getresponse()
        answer = response.read(ANSWER_READ_BYTES)
    except (TimeoutError, OSError, http.client.HTTPException, ssl.SSLError) as exc:
        if expired.is_set() or isinstance(exc, TimeoutError):
            waited = time.monotonic() - started
            return AttemptOutcome(
                error=f"timed out: no answer within {timeout:g} s ({waited:.1f} s)"
            )
        return AttemptOutcome(error=_describe(exc))
    except Exception as exc:  # whatever a hostile answer causes, the attempt is recorded
        logger.warning("webhook delivery to %s failed: %s", target.host, _describe(exc))
        return AttemptOutcome(error=_describe(exc))
    finally:
        watchdog.cancel()
        connection.close()
    if 200 <= response.status < 300:
        return AttemptOutcome(status=response.status)
    text = answer.decode("utf-8", "replace").strip()
    where = response.getheader("Location") if 300 <= response.status < 400 else None
    error = f"HTTP {response.status} {response.reason}"
    if where:
        error += f" (redirects are not followed: Location {where})"
    if text:
        error += f": {text}"
    return AttemptOutcome(status=response.status, error=error)


def webhook_delivery_attempt(*, delivery_id: int, attempt: int | None = None) -> str:
    """Make attempt number ``attempt`` (by default the next) of a pending delivery and record
    its outcome; enqueue the next attempt after a failure, or fail the delivery after the
    last. Return the delivery's status ("skipped" when it was not due for this attempt).

    The attempt is claimed first (``attempts`` goes from ``attempt - 1`` to ``attempt`` only
    while the delivery is pending), so a task enqueued twice sends once.
    """
    delivery = WebhookDelivery.objects.select_related("webhook").filter(pk=delivery_id).first()
    if delivery is None or delivery.status != WebhookDelivery.Status.PENDING:
        return "skipped"
    attempt = delivery.attempts + 1 if attempt is None else attempt
    now = timezone.now()
    claimed = WebhookDelivery.objects.filter(
        pk=delivery.pk, status=WebhookDelivery.Status.PENDING, attempts=attempt - 1
    ).update(attempts=attempt, next_attempt_at=None)
    if not claimed:
        return "skipped"
    if not delivery.webhook.active and delivery.event != "ping":
        outcome = AttemptOutcome(error="not sent: the webhook is inactive")
    else:
        body = delivery_body(delivery)
        outcome = delivery_send(
            url=delivery.webhook.url, body=body, headers=delivery_headers(delivery, body)
        )
    now = timezone.now()
    fields = {"response_status": outcome.status, "error": outcome.error}
    if outcome.delivered:
        fields.update(status=WebhookDelivery.Status.DELIVERED, delivered_at=now)
    elif attempt >= max_attempts() or not delivery.webhook.active:
        fields.update(status=WebhookDelivery.Status.FAILED)
    else:
        fields.update(next_attempt_at=now + retry_delay(attempt))
    WebhookDelivery.objects.filter(pk=delivery.pk).update(**fields)
    metrics.webhook_attempts.labels(
        "retry" if "next_attempt_at" in fields else str(fields["status"]).lower()
    ).inc()
    if "next_attempt_at" in fields:
        delivery_enqueue(
            delivery_id=delivery.pk, attempt=attempt + 1, run_after=fields["next_attempt_at"]
        )
    return fields.get("status", WebhookDelivery.Status.PENDING)


def webhook_deliveries_by_status() -> dict[str, int]:
    """Return how many deliveries are kept in each status (pending, delivered, failed): one
    grouped query over a table the prune keeps short (the metrics' collector)."""
    rows = WebhookDelivery.objects.values_list("status").annotate(count=Count("id")).order_by()
    return {status: count for status, count in rows}


@task(queue_name=settings.WEBHOOKS_TASK_QUEUE)
def webhook_delivery_task(delivery_id: int, attempt: int = 1) -> str:
    """Send one attempt of a webhook delivery (the worker's entry point)."""
    return webhook_delivery_attempt(delivery_id=delivery_id, attempt=attempt)


def delivery_enqueue(*, delivery_id: int, attempt: int = 1, run_after=None) -> None:
    """Enqueue attempt ``attempt`` of a delivery, not before ``run_after``.

    A backend that cannot defer a task (the immediate one of the tests) runs it at once.
    """
    chosen = webhook_delivery_task
    if run_after is not None and task_backends[chosen.backend].supports_defer:
        chosen = chosen.using(run_after=run_after)
    try:
        chosen.enqueue(delivery_id, attempt)
    except Exception:
        # The event's write has committed: a queue that refuses must not turn it into a 500.
        logger.exception("webhook delivery %s could not be enqueued", delivery_id)


#: Most deliveries one worker start enqueues again (the rest wait for the next start).
RESUME_MAX = 1000


def webhook_deliveries_resume(*, overdue: timedelta = timedelta(minutes=5)) -> int:
    """Enqueue again the pending deliveries whose attempt is overdue by more than ``overdue``;
    return how many (the worker runs it as it starts).

    A delivery whose task was never enqueued (the process ended between the commit and the
    enqueue) or was lost would otherwise stay pending for ever. One that still has its task
    queued is harmless to enqueue twice: the attempt is claimed once.
    """
    cutoff = timezone.now() - overdue
    overdue_deliveries = list(
        WebhookDelivery.objects.filter(
            status=WebhookDelivery.Status.PENDING, next_attempt_at__lt=cutoff
        )
        .order_by("next_attempt_at")
        .values_list("pk", "attempts")[:RESUME_MAX]
    )
    for delivery_id, attempts in overdue_deliveries:
        delivery_enqueue(delivery_id=delivery_id, attempt=attempts + 1)
    return len(overdue_deliveries)


def webhook_deliveries_prune(*, now=None) -> int:
    """Delete the delivered and failed deliveries older than ``WEBHOOKS_LOG_RETENTION_DAYS``
    (30 by default; the worker runs it as it starts): the log stays bounded. Pending ones are
    kept whatever their age. Return how many were deleted."""
    days = int(getattr(settings, "WEBHOOKS_LOG_RETENTION_DAYS", 30))
    cutoff = (now or timezone.now()) - timedelta(days=days)
    deleted, _ = (
        WebhookDelivery.objects.filter(created_at__lt=cutoff)
        .exclude(status=WebhookDelivery.Status.PENDING)
        .delete()
    )
    return deleted

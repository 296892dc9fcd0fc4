"""``GET /metrics``: the service's Prometheus metrics (issue 37; the metric objects are in
``profiles.workspace.metrics``; docs/operations.md "Metrics").

The door is off (404) unless ``METRICS_TOKEN`` (a bearer secret, compared in constant time)
or ``METRICS_ALLOWED_IPS`` (client addresses, ``ctxstudio.client_address``) is set; with both,
a scrape must satisfy both. A missing token answers 401, a wrong token or address 403, with
no detail. The view is a plain Django view: no session, no CSRF, none of the API's throttles.

Under gunicorn each worker writes its values to ``PROMETHEUS_MULTIPROC_DIR`` (prometheus-
client's multiprocess mode; ``scripts/gunicorn.conf.py`` prepares the folder before the
workers start and clears a dead worker's gauges); a scrape reads and merges every worker's
files. Without that variable (``make run``: one process) the process's own registry is read.
The task queue's depth and oldest due task, and the webhook deliveries kept by status, are
read from the database at scrape time (``QueueCollector``, ``WebhookCollector``: one query
each).
"""

import hmac
import ipaddress
import os

from django.conf import settings
from django.http import HttpResponse, HttpResponseForbidden, HttpResponseNotFound
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily

from ctxstudio.client_address import client_address
from ctxstudio.metrics_files import MULTIPROCESS_VARIABLE
from profiles.notifications.delivery import webhook_deliveries_by_status
from profiles.workspace.task_workers import task_queue_depths


class QueueCollector:
    """The task queue read at scrape time: tasks waiting and the oldest due one's wait, per
    queue and kind (one grouped query; a database that cannot be reached gives none)."""

    def collect(self):
        depth = GaugeMetricFamily(
            "ctxstudio_task_queue_depth",
            "Tasks waiting (due or deferred), by queue and kind.",
            labels=["queue", "kind"],
        )
        oldest = GaugeMetricFamily(
            "ctxstudio_task_queue_oldest_due_seconds",
            "How long the oldest due task has waited (0: none due), by queue and kind.",
            labels=["queue", "kind"],
        )
        try:
            found = task_queue_depths()
        except Exception:  # the database away: the other metrics are still worth a scrape
            found = []
        for queue, kind, count, waited in found:
            depth.add_metric([queue, kind], count)
            oldest.add_metric([queue, kind], waited)
        yield depth
        yield oldest


class WebhookCollector:
    """The webhook deliveries kept, by status, read at scrape time (one grouped query): the
    attempts themselves are counted by the task worker that makes them, a process of its own
    (``ctxstudio_webhook_attempts_total``)."""

    def collect(self):
        kept = GaugeMetricFamily(
            "ctxstudio_webhook_deliveries",
            "Webhook deliveries kept, by status (pending, delivered, failed).",
            labels=["status"],
        )
        try:
            found = webhook_deliveries_by_status()
        except Exception:  # the database away: the other metrics are still worth a scrape
            found = {}
        for status, count in sorted(found.items()):
            kept.add_metric([status], count)
        yield kept


def metrics_enabled() -> bool:
    """Whether the door is on (a token or an allow-list is set)."""
    return bool(settings.METRICS_TOKEN or settings.METRICS_ALLOWED_IPS)


def _address_allowed(request) -> bool:
    address = client_address(request)
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    return any(ip in network for network in allowed_networks())


def allowed_networks() -> list:
    """``METRICS_ALLOWED_IPS`` as networks (an address is a network of one; the settings
    refuse to start with an entry that is neither)."""
    return [ipaddress.ip_network(entry, strict=False) for entry in settings.METRICS_ALLOWED_IPS]


def refusal(request) -> HttpResponse | None:
    """Return the answer to a scrape that may not read the metrics, or None when it may."""
    if not metrics_enabled():
        return HttpResponseNotFound()
    if settings.METRICS_ALLOWED_IPS and not _address_allowed(request):
        return HttpResponseForbidden()
    if settings.METRICS_TOKEN:
        scheme, _, given = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() != "bearer" or not given:
            response = HttpResponse(status=401)
            response["WWW-Authenticate"] = "Bearer"
            return response
        if not hmac.compare_digest(given.strip().encode(), settings.METRICS_TOKEN.encode()):
            return HttpResponseForbidden()
    return None


def exposition() -> bytes:
    """Every metric in the text format: all workers' (multiprocess mode) or this process's,
    then the task queue's."""
    if os.environ.get(MULTIPROCESS_VARIABLE):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    scraped = CollectorRegistry()
    scraped.register(QueueCollector())
    scraped.register(WebhookCollector())
    return generate_latest(registry) + generate_latest(scraped)


@csrf_exempt
@require_GET
def metrics_view(request):
    refused = refusal(request)
    if refused is not None:
        return refused
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)

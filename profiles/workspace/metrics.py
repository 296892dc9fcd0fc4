"""The service's Prometheus metrics (issue 37): every metric object, in one module.

The hall and the features count here (the served layer, compilation, texts files, degraded
answers, resolutions, webhook deliveries); the project reads them out (``ctxstudio.metrics``:
``GET /metrics``, the requests counted by ``ctxstudio.log_context.RequestIdMiddleware``, the
task queue's collector). Every label takes a bounded set of values: doors, URL patterns' routes,
status classes, resolution statuses, blocker codes; never a customer's value, a path or a
profile key (unless ``METRICS_PROFILE_LABELS``). Under gunicorn each worker writes its values
to ``PROMETHEUS_MULTIPROC_DIR`` and a scrape merges them (docs/operations.md "Metrics").
"""

import re

from django.conf import settings
from prometheus_client import Counter, Histogram

# Latency buckets of a request (seconds): a lean resolve takes well under a millisecond.
REQUEST_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10)
# Compilations and warm-ups take from milliseconds (a catch-up) to minutes (a 1M desk).
COMPILE_BUCKETS = (0.005, 0.025, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)

requests = Counter(
    "ctxstudio_requests",
    "Requests answered, by door, method, URL pattern (its route) and status class.",
    ["door", "method", "operation", "status"],
)
request_seconds = Histogram(
    "ctxstudio_request_duration_seconds",
    "Time to answer a request (to the response's return), by door and status class.",
    ["door", "status"],
    buckets=REQUEST_BUCKETS,
)
refused = Counter(
    "ctxstudio_requests_refused",
    "Requests answered 401 or 403, by door and status.",
    ["door", "status"],
)
throttled = Counter("ctxstudio_requests_throttled", "Requests answered 429, by door.", ["door"])
resolutions = Counter(
    "ctxstudio_resolutions",
    "Resolutions answered by the resolve door, by status and whether degraded"
    " (profile: the profile's key with METRICS_PROFILE_LABELS, else empty).",
    ["status", "degraded", "profile"],
)
blockers = Counter(
    "ctxstudio_resolution_blockers",
    "Blockers in the resolutions answered by the resolve door, by code.",
    ["code"],
)
served_statements = Counter(
    "ctxstudio_served_statements", "Served layers' statements run (one per request at most)."
)
served_candidates = Counter(
    "ctxstudio_served_candidates",
    "Served candidates asked for, by result: hit (held current in the worker) or miss.",
    ["result"],
)
replica_reads = Counter(
    "ctxstudio_replica_reads",
    "Reads a read replica was asked for (DATABASE_REPLICA_URL), by who answered: replica, or"
    " the primary because the replica lagged, had not applied the last write, or was"
    " unreachable (primary_lag, primary_written, primary_unreachable).",
    ["outcome"],
)
served_items = Counter("ctxstudio_served_items_fetched", "Items fetched for served layers.")
compile_seconds = Histogram(
    "ctxstudio_workspace_compile_seconds",
    "Time to compile the workspace: whole (load) or from the change log (catch_up).",
    ["kind"],
    buckets=COMPILE_BUCKETS,
)
warmup_seconds = Histogram(
    "ctxstudio_warmup_duration_seconds",
    "Time a worker took to warm before serving, by outcome (warm or failed).",
    ["outcome"],
    buckets=COMPILE_BUCKETS,
)
texts_files_written = Counter(
    "ctxstudio_texts_files_written", "Held layers' texts files written (built or rebuilt)."
)
degraded_answers = Counter(
    "ctxstudio_degraded_answers", "Resolves answered from the held workspace (database away)."
)
webhook_attempts = Counter(
    "ctxstudio_webhook_attempts",
    "Webhook delivery attempts, by outcome: delivered, retry (failed, tried again) or failed.",
    ["outcome"],
)

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_CODE = re.compile(r"[A-Z][A-Z0-9_]{0,47}")
# (door, method, operation, status) -> the children of the request's metrics: labels()
# validates and locks on every call, a dict lookup does not. So for resolutions and blockers.
_request_children: dict[tuple, tuple] = {}
_resolution_children: dict[tuple, object] = {}
_blocker_children: dict[str, object] = {}


def request_counted(door: str, method: str, operation: str, status: int, seconds: float) -> None:
    """Count a request answered (``door``: ``ctxstudio.log_context.door_of``; ``operation``:
    its URL pattern's route, or empty; a method outside HTTP's usual ones counts as other)."""
    if method not in METHODS:
        method = "other"
    key = (door, method, operation, status)
    children = _request_children.get(key)
    if children is None:
        status_class = f"{status // 100}xx"
        children = (
            requests.labels(door, method, operation, status_class),
            request_seconds.labels(door, status_class),
            refused.labels(door, str(status)) if status in (401, 403) else None,
            throttled.labels(door) if status == 429 else None,
        )
        _request_children[key] = children
    children[0].inc()
    children[1].observe(seconds)
    if children[2] is not None:
        children[2].inc()
    if children[3] is not None:
        children[3].inc()


def resolution_counted(head: dict, *, degraded: bool = False) -> None:
    """Count a resolution the resolve door answers (``head``: its status, blockers, profile)."""
    profile = ""
    if getattr(settings, "METRICS_PROFILE_LABELS", False):
        profile = str((head.get("profile") or {}).get("key", ""))
    key = (head.get("status"), degraded, profile)
    child = _resolution_children.get(key)
    if child is None:
        status = str(key[0])
        status = status if _CODE.fullmatch(status) else "other"
        child = _resolution_children[key] = resolutions.labels(status, str(degraded), profile)
    child.inc()
    for blocker in head.get("blockers") or ():
        code = str(blocker.get("code", "")) if isinstance(blocker, dict) else ""
        child = _blocker_children.get(code)
        if child is None:
            child = blockers.labels(code if _CODE.fullmatch(code) else "other")
            _blocker_children[code] = child
        child.inc()

"""What every application log line carries: the time (UTC), the level, the logger and the
request's id where there is one; and the one access line of each request (``settings.LOGGING``;
how lines are written, text or JSON: ``ctxstudio.log_format``).

The request id is the ``X-Request-ID`` a reverse proxy sent (nginx's ``$request_id``, a load
balancer's trace id) when it is a short token, else a new random one; the answer carries it
back in ``X-Request-ID``, so a client or the proxy's access log can quote it. It is held in a
context variable from the first middleware until the response is closed (Django logs a
refused request's line after the middleware returned, and a streamed answer is written after
it too), which a logging filter reads: a line logged outside a request (a worker, a command)
shows ``-``.

With ``LOG_ACCESS`` the same middleware writes the request's access line (logger
``ctxstudio.access``, INFO): the door, the method, the status, the duration, the user's and
the key's ids. It is the first middleware, so a middleware that answers a request itself
(the lean resolve path) is covered; such a middleware names its caller as DRF does, in
``request.user`` and ``request.auth`` (the key's record). Neither the path nor the query is
written: they may carry what a client typed. Cost per request: a random token and two
context-variable writes; with the access line, one log record (docs/operations.md "Logs").

While ``GET /metrics`` is on (``ctxstudio.metrics``) the same middleware counts the request
by door, method, URL route and status class, and observes its duration
(``profiles.workspace.metrics.request_counted``: docs/operations.md "Metrics").
"""

import logging
import re
import secrets
import time
from contextvars import ContextVar

from django.conf import settings
from django.core.signals import request_finished
from django.dispatch import receiver
from django.utils.functional import LazyObject, empty

from profiles.workspace.metrics import request_counted

HEADER = "X-Request-ID"
NO_REQUEST = "-"
# A proxy's id is kept when it is a short token (it is written into log lines as it is).
_ACCEPTED = re.compile(r"[A-Za-z0-9._:-]{1,64}")

_request_id: ContextVar[str] = ContextVar("request_id", default=NO_REQUEST)

access_logger = logging.getLogger("ctxstudio.access")
ACCESS_MESSAGE = "%s %s %s in %.1f ms (user %s, key %s)"


def request_id_of(request) -> str:
    """Return the request's id: the proxy's ``X-Request-ID`` when usable, else a new one."""
    given = request.META.get("HTTP_X_REQUEST_ID", "")
    return given if _ACCEPTED.fullmatch(given) else secrets.token_hex(8)


def door_of(path: str) -> str:
    """Return which door a path enters by (a few prefix tests: no URL resolving)."""
    if path.startswith("/api/"):
        if path in ("/api/v1/resolve", "/api/v1/resolve/"):
            return "resolve"
        if path in ("/api/v1/expand", "/api/v1/expand/"):
            return "expand"
        return "preview" if path.endswith("/preview") else "api"
    if path.startswith("/admin/"):
        return "admin"
    if path.startswith("/static/"):
        return "static"
    if path in ("/healthz", "/readyz"):
        return "health"
    if path == "/metrics":
        return "metrics"
    return "preview" if path.endswith("/preview/") else "studio"


def caller_ids(request) -> tuple[int | None, int | None]:
    """Return the ids of the request's user and API key (None: none, or never looked up).

    Reads what authentication left on the request, never looks it up: a session user that no
    code asked for stays unknown rather than cost a query after the answer."""
    key = request.__dict__.get("auth")
    user = request.__dict__.get("user")
    if isinstance(user, LazyObject):
        user = None if user._wrapped is empty else user._wrapped
    return getattr(user, "pk", None), getattr(key, "pk", None)


def operation_of(request) -> str:
    """Return the route of the URL pattern Django resolved the request to (``api/v1/profiles/
    <str:key>``; empty: none, or a request the lean door answered, whose door says it): a
    bounded set, never the path."""
    match = request.__dict__.get("resolver_match")
    return match.route if match is not None else ""


class RequestIdMiddleware:
    """Give each request an id for its log lines, answer it in ``X-Request-ID``, count it in
    the metrics (when ``GET /metrics`` is on: ``ctxstudio.metrics``) and write the request's
    access line (``LOG_ACCESS``)."""

    def __init__(self, get_response):
        self.get_response = get_response
        self.access = settings.LOG_ACCESS
        self.metrics = bool(settings.METRICS_TOKEN or settings.METRICS_ALLOWED_IPS)

    def __call__(self, request):
        request_id = request_id_of(request)
        _request_id.set(request_id)  # until request_finished (the response closed)
        if not (self.access or self.metrics):
            response = self.get_response(request)
            response[HEADER] = request_id
            return response
        started = time.perf_counter()
        response = self.get_response(request)
        response[HEADER] = request_id
        seconds = time.perf_counter() - started
        door = door_of(request.path)
        method, status = request.method, response.status_code
        if self.metrics:
            request_counted(door, method, operation_of(request), status, seconds)
        if not self.access:
            return response
        duration = seconds * 1000
        user_id, key_id = caller_ids(request)
        if access_logger.isEnabledFor(logging.INFO):
            # The record made directly: logger.info() would first walk the stack for the
            # caller's file and line, which say nothing here.
            record = access_logger.makeRecord(
                access_logger.name,
                logging.INFO,
                __file__,
                0,
                ACCESS_MESSAGE,
                (method, door, status, duration, user_id, key_id),
                None,
                extra={
                    "door": door,
                    "method": method,
                    "status": status,
                    "duration_ms": round(duration, 2),
                    "user_id": user_id,
                    "key_id": key_id,
                },
            )
            access_logger.handle(record)
        return response


@receiver(request_finished)
def request_id_clear(sender, **kwargs):
    """The response is closed: lines logged from now on belong to no request."""
    _request_id.set(NO_REQUEST)


class RequestIdFilter(logging.Filter):
    """Add ``request_id`` to every record (``-`` outside a request)."""

    def filter(self, record):
        record.request_id = _request_id.get()
        return True


class RequestPathFilter(logging.Filter):
    """Write the door instead of the path in Django's lines about a request (``Not Found:
    /api/v1/layers/…`` becomes ``Not Found: api``): a path may carry what a client typed."""

    def filter(self, record):
        request = record.__dict__.get("request")
        path = getattr(request, "path", None)
        if isinstance(path, str) and isinstance(record.args, tuple):
            written = (path, path.encode("unicode_escape").decode("ascii"))
            door = door_of(path)
            record.args = tuple(door if arg in written else arg for arg in record.args)
        return True

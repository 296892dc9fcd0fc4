"""What every application log line carries: the time (UTC), the level, the logger and the
request's id where there is one (``settings.LOGGING``).

The request id is the ``X-Request-ID`` a reverse proxy sent (nginx's ``$request_id``, a load
balancer's trace id) when it is a short token, else a new random one; the answer carries it
back in ``X-Request-ID``, so a client or the proxy's access log can quote it. It is held in a
context variable from the first middleware until the response is closed (Django logs a
refused request's line after the middleware returned, and a streamed answer is written after
it too), which a logging filter reads: a line logged outside a request (a worker, a command)
shows ``-``. It costs a random token and two context-variable writes per request.
"""

import logging
import re
import secrets
import time
from contextvars import ContextVar

from django.core.signals import request_finished
from django.dispatch import receiver

HEADER = "X-Request-ID"
NO_REQUEST = "-"
# A proxy's id is kept when it is a short token (it is written into log lines as it is).
_ACCEPTED = re.compile(r"[A-Za-z0-9._:-]{1,64}")

_request_id: ContextVar[str] = ContextVar("request_id", default=NO_REQUEST)


def request_id_of(request) -> str:
    """Return the request's id: the proxy's ``X-Request-ID`` when usable, else a new one."""
    given = request.META.get("HTTP_X_REQUEST_ID", "")
    return given if _ACCEPTED.fullmatch(given) else secrets.token_hex(8)


class RequestIdMiddleware:
    """Give each request an id for its log lines and answer it in ``X-Request-ID``."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request_id = request_id_of(request)
        _request_id.set(request_id)  # until request_finished (the response closed)
        response = self.get_response(request)
        response[HEADER] = request_id
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


class UtcFormatter(logging.Formatter):
    """Times in UTC, ISO 8601 with milliseconds (``2026-12-05T10:15:42.123Z``)."""

    converter = time.gmtime
    default_time_format = "%Y-%m-%dT%H:%M:%S"
    default_msec_format = "%s.%03dZ"

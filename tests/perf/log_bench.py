"""What the first middleware costs a request: ``python -m tests.perf.log_bench``.

Times ``ctxstudio.log_context.RequestIdMiddleware`` around a view that answers at once (so
only the middleware is measured): the request id alone (``LOG_ACCESS`` off), then with the
access line written as text and as JSON by the formatters of ``settings.LOGGING``, to a
stream that discards it (the cost of the terminal or the log shipper is not ours). Prints
microseconds a request, the best of several rounds (the least disturbed by other work).
"""

import io
import logging
import os
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ctxstudio.settings")
django.setup()

from django.conf import settings  # noqa: E402 -- after django.setup()
from django.http import HttpResponse  # noqa: E402
from django.test import RequestFactory  # noqa: E402
from django.utils.module_loading import import_string  # noqa: E402

from ctxstudio.log_context import RequestIdMiddleware  # noqa: E402

ROUNDS = 7
CALLS = 20_000


class Discarded(io.TextIOBase):
    def write(self, text):
        return len(text)


def answer(request) -> HttpResponse:
    return HttpResponse(b"{}")


def handler_of(log_format: str) -> logging.Handler:
    handler = logging.StreamHandler(Discarded())
    for name in settings.LOGGING["handlers"]["console"]["filters"]:
        handler.addFilter(import_string(settings.LOGGING["filters"][name]["()"])())
    formatter = dict(settings.LOGGING["formatters"][log_format])
    handler.setFormatter(import_string(formatter.pop("()"))(formatter.pop("format", None)))
    return handler


def per_request(access: bool) -> float:
    settings.LOG_ACCESS = access
    middleware = RequestIdMiddleware(answer)
    request = RequestFactory().post(
        "/api/v1/resolve", b"{}", content_type="application/json", HTTP_X_REQUEST_ID="edge-1"
    )
    rounds = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        for _ in range(CALLS):
            middleware(request)
        rounds.append((time.perf_counter() - started) / CALLS * 1e6)
    return min(rounds)


def main() -> None:
    root = logging.getLogger()
    root.handlers[:] = []
    baseline = min(view_alone() for _ in range(ROUNDS))
    print(f"view alone (no middleware)            {baseline:6.2f} µs a request")
    print(f"request id (LOG_ACCESS off)           {per_request(False) - baseline:6.2f} µs")
    for log_format in ("line", "json"):
        root.handlers[:] = [handler_of(log_format)]
        cost = per_request(True) - baseline
        print(f"request id + access line ({log_format:>4})      {cost:6.2f} µs")


def view_alone() -> float:
    """The view called directly: what ``per_request`` times besides the middleware."""
    request = RequestFactory().post("/api/v1/resolve", b"{}", content_type="application/json")
    started = time.perf_counter()
    for _ in range(CALLS):
        answer(request)
    return (time.perf_counter() - started) / CALLS * 1e6


if __name__ == "__main__":
    main()

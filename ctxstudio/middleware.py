"""Answer 503 with a clear error, rather than 500, while the database cannot be reached."""

import logging

from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse

logger = logging.getLogger("ctxstudio.database")

MESSAGE = "the database is unavailable; nothing was changed, retry in a moment"


class DatabaseUnavailableMiddleware:
    """Turn connection failures (database stopped, network gone) into 503 responses."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        logger.error(
            "database unavailable during %s %s: %s", request.method, request.path, exception
        )
        if request.path.startswith("/api/") or "application/json" in request.headers.get(
            "Accept", ""
        ):
            body = {"error": {"code": "SERVICE_UNAVAILABLE", "message": MESSAGE, "path": ""}}
            response = JsonResponse(body, status=503)
        else:
            response = HttpResponse(
                "<!doctype html><title>Unavailable</title><h1>Service unavailable</h1>"
                f"<p>{MESSAGE.capitalize()}.</p>",
                status=503,
            )
        response["Retry-After"] = "5"
        return response

"""Project-wide request handling: the database outage answer (503), the API's error shape for
errors Django answers itself, and requests refused before any view runs."""

import logging

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string
from rest_framework.response import Response

from ctxstudio.log_context import door_of
from profiles.api.exceptions import code_for_status, error_body
from profiles.workspace.concurrency import WriteConflict, is_retryable
from profiles.workspace.parameters import ParameterInvalid, whole_number
from resolver.limits import TEXT_RULE_MESSAGE, violates_text_rule

logger = logging.getLogger("ctxstudio.database")

MESSAGE = "the database is unavailable; nothing was changed, retry in a moment"


class DatabaseUnavailableMiddleware:
    """Turn connection failures (database stopped, network gone) into 503 responses."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, WriteConflict) or (
            isinstance(exception, OperationalError) and is_retryable(exception)
        ):
            return write_conflict_response(request)
        if not isinstance(exception, OperationalError | InterfaceError):
            return None
        logger.error(
            "database unavailable during %s %s: %s",
            request.method,
            door_of(request.path),  # not the path: it may carry what a client typed
            exception,
        )
        if request.path.startswith("/api/") or "application/json" in request.headers.get(
            "Accept", ""
        ):
            response = JsonResponse(error_body("SERVICE_UNAVAILABLE", MESSAGE), status=503)
        else:
            response = error_page(503, message=MESSAGE.capitalize())
        response["Retry-After"] = "5"
        return response


def error_page(code: int, *, template: str = "", **context) -> HttpResponse:
    """The studio's own error page (``templates/<status>.html``), rendered without the request:
    no context processor runs, so a page answered because the database is down reads none."""
    return HttpResponse(render_to_string(template or f"{code}.html", context), status=code)


def write_conflict_response(request):
    """Answer 409 with a retry hint: a write met a lock conflict (deadlock, lock timeout);
    nothing was written and the same request will succeed."""
    message = "another change was being saved; nothing was changed, retry in a moment"
    if request.path.startswith("/api/") or "application/json" in request.headers.get("Accept", ""):
        response = JsonResponse(error_body("CONFLICT", message, retryable=True), status=409)
    else:
        response = error_page(409, message=message.capitalize())
    response["Retry-After"] = "1"
    return response


API_PREFIX = "/api/"

# Error codes of the API shape for the statuses Django itself may answer with.
STATUS_CODES = {
    400: "INVALID_REQUEST",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    413: "PAYLOAD_TOO_LARGE",
    500: "INTERNAL_ERROR",
}
INTERNAL_ERROR_MESSAGE = "the server failed to answer this request; the error has been logged"


def api_error_response(status: int, code: str, message: str, path: str = "") -> JsonResponse:
    return JsonResponse(error_body(code, message, path), status=status)


class ApiErrorShapeMiddleware:
    """Answer every error under ``/api/`` in the API's shape, whatever produced it.

    DRF's exception handler shapes the errors of its views. The rest — Django's own 400, 403,
    404 and 405 pages, and the 500 page of an exception nobody caught (Django has logged it
    by then) — would be HTML; they are replaced here by ``{"error": {"code", "message",
    "path"}}`` with the same status and headers. With ``DEBUG`` on, a 500 keeps Django's
    technical page, which is what a developer needs.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            response.status_code < 400
            or not request.path.startswith(API_PREFIX)
            # DRF's handler shaped it (the browsable API shows that body as a page).
            or isinstance(response, Response)
            or response.get("Content-Type", "").startswith("application/json")
            or (response.status_code >= 500 and settings.DEBUG)
        ):
            return response
        status = response.status_code
        if status >= 500:
            shaped = api_error_response(status, STATUS_CODES[500], INTERNAL_ERROR_MESSAGE)
        else:
            code = STATUS_CODES.get(status) or code_for_status(status)
            message = response.reason_phrase.lower()
            shaped = api_error_response(status, code, message)
        for header in ("Allow", "Retry-After", "WWW-Authenticate", "Vary"):
            if header in response:
                shaped[header] = response[header]
        return shaped


# A multipart form carries its fields beside the file: this much room over the body limit.
FORM_FIELDS_MARGIN = 64 * 1024
FORM_CONTENT_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class RequestTextRuleMiddleware:
    """Refuse, before any view or query runs, requests that no view could store or answer.

    * a body larger than ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (plus room for a form's fields
      beside an upload): 413, without reading it;
    * the SPEC §2.2 text rule: a NUL or a lone surrogate in the URL path, in a query
      parameter or in a form field (name or value): 400 naming the parameter. PostgreSQL
      cannot hold a NUL in text, so such a value would fail at the first query that uses it;
    * from a studio view, a parameter that is not what it must be (``ParameterInvalid``, a
      version number written ``²``): 400 naming the parameter. The API's exception handler
      answers the API's own.

    API requests get the API's error shape, studio requests a short plain page. JSON bodies
    are the API parsers' and validators' business.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        length = whole_number(request.META.get("CONTENT_LENGTH") or "0")
        if limit is not None and length is not None and length > limit + FORM_FIELDS_MARGIN:
            return self.refuse(
                request,
                413,
                "PAYLOAD_TOO_LARGE",
                f"the request body is larger than {limit:,} bytes",
            )
        if violates_text_rule(request.path):
            return self.refuse(request, 400, "INVALID_REQUEST", f"the URL {TEXT_RULE_MESSAGE}")
        fields = [("query parameter", request.GET)]
        if request.method == "POST" and request.content_type in FORM_CONTENT_TYPES:
            try:
                fields.append(("form field", request.POST))
            except RequestDataTooBig:  # the form's fields alone are beyond the limit
                return self.refuse(
                    request, 413, "PAYLOAD_TOO_LARGE", "the form is larger than the server accepts"
                )
        for kind, values in fields:
            for name, value in values.lists():
                if violates_text_rule(name):
                    return self.refuse(
                        request, 400, "INVALID_REQUEST", f"a {kind} name {TEXT_RULE_MESSAGE}"
                    )
                if any(violates_text_rule(entry) for entry in value):
                    return self.refuse(
                        request, 400, "INVALID_REQUEST", f"{kind} {TEXT_RULE_MESSAGE}", name
                    )
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, ParameterInvalid):
            # The message names the parameter; a page need not repeat it.
            path = exception.name if request.path.startswith(API_PREFIX) else ""
            return self.refuse(request, 400, "INVALID_REQUEST", str(exception), path)
        return None

    @staticmethod
    def refuse(request, status: int, code: str, message: str, path: str = "") -> HttpResponse:
        if request.path.startswith(API_PREFIX):
            return api_error_response(status, code, message, path)
        where = f" ({path})" if path else ""
        return error_page(
            status,
            template="400.html",
            message=message[0].upper() + message[1:] + where,
            status=status,
        )

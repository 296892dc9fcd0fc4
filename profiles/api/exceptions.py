"""One exception handler: every API error is
``{"error": {"code", "message", "path", "retryable"}}``.

``ERROR_CODES`` is the one registry of the codes an error may carry: the schema's enum of
``error.code`` is made from it, ``error_body`` refuses a code it does not hold, and a test
checks it against the table of docs/api.md. Adding a code is one line there (and one row in
the docs). The body is built by ``error_body`` alone: the handler, the API's and the
project's middleware and the schema's examples call it. ``ApiError`` is an error a view
raises with its status, code and path; ``not_found``, ``or_404`` (a getter's object, or the
404) and ``ref_not_available`` are the 404s views share. ``retryable`` says whether the same
request sent again may succeed (the code's default; a lock conflict sets it).

Engine errors keep their code and path (SPEC §7), validation errors of a workspace write keep
the engine's path (``profiles[3].rules.kb.mode``) and list every issue beside the first one.
"""

from typing import NamedTuple

from django.core.exceptions import ObjectDoesNotExist, RequestDataTooBig
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import IntegrityError, OperationalError
from django.db.models import ProtectedError
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response

from profiles.versioning.environments import SafeChangeError
from profiles.workspace.concurrency import PreconditionFailed, WriteConflict, is_retryable
from profiles.workspace.parameters import ParameterInvalid
from profiles.workspace.permissions import KeyForbidden
from profiles.workspace.selectors import found_or_none
from profiles.workspace.validation import WorkspaceValidationError, issues_body
from profiles.workspace.writing import Conflict
from resolver import RequestError, ResolverError, WorkspaceError
from resolver.errors import PROFILE_NOT_FOUND


def printable(text: str) -> str:
    """Return text that encodes as UTF-8: a lone surrogate echoed from input is escaped."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class ErrorCode(NamedTuple):
    status: int
    meaning: str
    #: whether the same request sent again (after ``Retry-After``, when given) may succeed
    retryable: bool = False


# code -> (typical status, meaning, retryable). One line per code; keep docs/api.md's table
# ("Errors") in step: tests/profiles/api/test_schema_contract.py compares them.
ERROR_CODES: dict[str, ErrorCode] = {
    "INVALID_REQUEST": ErrorCode(400, "bad request fields, malformed JSON, unknown field"),
    "INVALID_WORKSPACE": ErrorCode(400, "a write or a draft the engine rejects"),
    "WEBHOOK_URL_REFUSED": ErrorCode(400, "a webhook URL at a private address (SSRF)"),
    "NOT_AUTHENTICATED": ErrorCode(401, "no credentials"),
    "AUTHENTICATION_FAILED": ErrorCode(401, "wrong credentials"),
    "PERMISSION_DENIED": ErrorCode(403, "not allowed for your role"),
    "FORBIDDEN": ErrorCode(403, "outside a scoped API key's scopes or environments"),
    "SELF_APPROVAL": ErrorCode(403, "approving your own change request"),
    "PROFILE_NOT_FOUND": ErrorCode(404, "resolve or preview of an unknown profile"),
    "REF_NOT_AVAILABLE": ErrorCode(404, "expand of a ref the request does not offer"),
    "NOT_FOUND": ErrorCode(404, "unknown object, scenario, page or endpoint"),
    "METHOD_NOT_ALLOWED": ErrorCode(405, "the path does not take this method"),
    "NOT_ACCEPTABLE": ErrorCode(406, "no representation the Accept header allows"),
    "CONFLICT": ErrorCode(409, "key exists, still in use; a lock conflict is retryable"),
    "CHANGE_REQUEST_REQUIRED": ErrorCode(409, "a direct write in a protected environment"),
    "APPROVALS_REQUIRED": ErrorCode(409, "applying before enough approvals"),
    "STALE_CHANGE_REQUEST": ErrorCode(409, "applying on a profile that moved"),
    "CHANGE_REQUEST_NOT_OPEN": ErrorCode(409, "acting on a closed change request"),
    "CHANGES_REQUESTED": ErrorCode(409, "applying while a reviewer requests changes"),
    "PRECONDITION_FAILED": ErrorCode(412, "stale If-Match: re-read, then send again"),
    "PAYLOAD_TOO_LARGE": ErrorCode(413, "body over MAX_BODY_BYTES"),
    "SNAPSHOT_TOO_LARGE": ErrorCode(413, "a snapshot over SNAPSHOT_MAX_BYTES: resolve remotely"),
    "UNSUPPORTED_MEDIA_TYPE": ErrorCode(415, "a body that is not JSON (or YAML where taken)"),
    "PRECONDITION_REQUIRED": ErrorCode(428, "approving without If-Match"),
    "THROTTLED": ErrorCode(429, "over the rate", retryable=True),
    "LOGIN_LOCKED_OUT": ErrorCode(429, "too many failed logins", retryable=True),
    "IMPORT_QUEUE_FULL": ErrorCode(429, "beyond your queued imports or bytes", retryable=True),
    "INTERNAL_ERROR": ErrorCode(500, "a server fault (logged)"),
    "SERVICE_UNAVAILABLE": ErrorCode(503, "the database is unavailable", retryable=True),
}


#: the schema's enum of ``error.code`` (settings.SPECTACULAR_SETTINGS names it ErrorCodeEnum)
ERROR_CODE_CHOICES = list(ERROR_CODES)

# The code of an answer nothing more precise names, by status (Django's own pages, DRF's
# exceptions without a code of ours).
STATUS_CODES = {
    400: "INVALID_REQUEST",
    401: "NOT_AUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    406: "NOT_ACCEPTABLE",
    409: "CONFLICT",
    412: "PRECONDITION_FAILED",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    428: "PRECONDITION_REQUIRED",
    429: "THROTTLED",
    503: "SERVICE_UNAVAILABLE",
}


def code_for_status(status: int) -> str:
    """Return the registered code of an answer with this status and no code of its own."""
    if status in STATUS_CODES:
        return STATUS_CODES[status]
    return "INTERNAL_ERROR" if status >= 500 else "INVALID_REQUEST"


def error_body(
    code: str, message: str, path: str = "", *, retryable: bool | None = None, **extra
) -> dict:
    """Return the error body; ``retryable`` defaults to the code's (a lock conflict sets it)."""
    if code not in ERROR_CODES:
        raise ValueError(f"unregistered error code {code!r}: add it to ERROR_CODES")
    if retryable is None:
        retryable = ERROR_CODES[code].retryable
    return {
        "error": {
            "code": code,
            "message": printable(message),
            "path": printable(path),
            "retryable": retryable,
            **extra,
        }
    }


class ApiError(exceptions.APIException):
    """An error with an explicit code and path (``raise ApiError(404, "NOT_FOUND", ...)``)."""

    def __init__(self, status_code: int, code: str, message: str, path: str = "", **extra):
        super().__init__(message)
        self.status_code = status_code
        self.code = code
        self.message = message
        self.path = path
        self.extra = extra


def not_found(what: str, path: str = "") -> ApiError:
    """Return the 404 of a named object the URL or body refers to (``layer "kb" not found``)."""
    return ApiError(404, "NOT_FOUND", f"{what} not found", path)


def or_404(what: str, get, /, **lookup):
    """Return ``get(**lookup)``: the one "or 404" of the API's doors. What the getter does not
    find (``None``, or its model's ``DoesNotExist``) answers ``not_found(what)``."""
    found = found_or_none(get, **lookup)
    if found is None:
        raise not_found(what)
    return found


REF_NOT_AVAILABLE_MESSAGE = "reference not available for this request"


def ref_not_available() -> ApiError:
    """Return the one answer for any ref the request may not expand (it never says why)."""
    return ApiError(404, "REF_NOT_AVAILABLE", REF_NOT_AVAILABLE_MESSAGE, "ref")


# DRF exception class -> (status, code); the first matching class wins.
_DRF_CODES = [
    (exceptions.NotAuthenticated, "NOT_AUTHENTICATED"),
    (exceptions.AuthenticationFailed, "AUTHENTICATION_FAILED"),
    (KeyForbidden, "FORBIDDEN"),  # a scoped API key's scopes or environments
    (exceptions.PermissionDenied, "PERMISSION_DENIED"),
    (exceptions.NotFound, "NOT_FOUND"),
    (exceptions.MethodNotAllowed, "METHOD_NOT_ALLOWED"),
    (exceptions.NotAcceptable, "NOT_ACCEPTABLE"),
    (exceptions.UnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE"),
    (exceptions.Throttled, "THROTTLED"),
    (exceptions.ParseError, "INVALID_REQUEST"),
]


def _first_validation_error(detail, path: str = "") -> tuple[str, str]:
    """Return (path, message) of the first message in a serializer's error structure."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            if key == "non_field_errors":
                return _first_validation_error(value, path)
            return _first_validation_error(value, f"{path}.{key}" if path else str(key))
    if isinstance(detail, list):
        if not detail:
            return path, "is invalid"
        if all(isinstance(entry, str) for entry in detail):
            return path, str(detail[0])
        for index, entry in enumerate(detail):
            if entry:
                return _first_validation_error(entry, f"{path}[{index}]")
    return path, str(detail)


def _response(body: dict, status_code: int, headers: dict | None = None) -> Response:
    return Response(body, status=status_code, headers=headers)


def api_exception_handler(exc, context):
    """Return the error response for ``exc`` in the API's shape (None lets Django answer 500)."""
    response = _error_response(exc)
    if response is not None and isinstance(response.data, dict) and "error" in response.data:
        error = response.data["error"]
        # Bodies built elsewhere (the workspace validation's as_dict) get the registry's flag.
        if "retryable" not in error:
            known = ERROR_CODES.get(error.get("code"))
            error["retryable"] = bool(known and known.retryable)
        for name in ("message", "path", "field"):
            if isinstance(error.get(name), str):
                error[name] = printable(error[name])
        for issue in error.get("issues") or []:
            issue["path"], issue["message"] = printable(issue["path"]), printable(issue["message"])
    return response


def _error_response(exc):
    if isinstance(exc, ApiError):
        return _response(error_body(exc.code, exc.message, exc.path, **exc.extra), exc.status_code)
    if isinstance(exc, ParameterInvalid):
        return _response(error_body("INVALID_REQUEST", str(exc), exc.name), 400)
    if isinstance(exc, RequestError):
        status_code = 404 if exc.code == PROFILE_NOT_FOUND else 400
        return _response(error_body(exc.code, str(exc), exc.path), status_code)
    if isinstance(exc, WorkspaceValidationError):
        return _response(exc.as_dict(), 400)
    if isinstance(exc, WorkspaceError):
        return _response(error_body(exc.code, str(exc), exc.path, **issues_body(exc.issues)), 400)
    if isinstance(exc, ResolverError):
        code = exc.code if exc.code in ERROR_CODES else code_for_status(400)
        return _response(error_body(code, str(exc), exc.path), 400)
    if isinstance(exc, PreconditionFailed):
        return _response(
            error_body("PRECONDITION_FAILED", str(exc), "If-Match"),
            412,
            {"ETag": exc.current_etag},
        )
    if isinstance(exc, SafeChangeError):
        return _response(error_body(exc.code, exc.message, exc.path, **exc.extra), exc.status_code)
    if isinstance(exc, RequestDataTooBig):
        return _response(
            error_body("PAYLOAD_TOO_LARGE", "the request body is larger than the server accepts"),
            413,
        )
    if isinstance(exc, Conflict):
        return _response(error_body("CONFLICT", exc.message, exc.path), 409)
    if isinstance(exc, OperationalError) and is_retryable(exc):
        exc = WriteConflict()
    if isinstance(exc, WriteConflict):
        return _response(
            error_body("CONFLICT", str(exc), "", retryable=True),
            409,
            {"Retry-After": str(exc.retry_after)},
        )
    if isinstance(exc, ObjectDoesNotExist):
        return _response(error_body("NOT_FOUND", "not found"), 404)
    if isinstance(exc, ProtectedError | IntegrityError):
        return _response(error_body("CONFLICT", "the change conflicts with stored data"), 409)
    if isinstance(exc, Http404):
        return _response(error_body("NOT_FOUND", "not found"), 404)
    if isinstance(exc, DjangoPermissionDenied):
        return _response(error_body("PERMISSION_DENIED", "permission denied"), 403)
    if isinstance(exc, exceptions.ValidationError):
        path, message = _first_validation_error(exc.detail)
        return _response(error_body("INVALID_REQUEST", message, path), 400)
    if isinstance(exc, exceptions.APIException):
        code = next((code for cls, code in _DRF_CODES if isinstance(exc, cls)), None)
        if code is None:
            code = str(exc.default_code).upper()
            if code not in ERROR_CODES:
                code = code_for_status(exc.status_code)
        headers = {}
        if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
            headers["Retry-After"] = str(max(1, int(exc.wait)))
        # APIView.handle_exception set it (401) or turned the status into 403.
        if getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = exc.auth_header
        message = str(exc.detail) if not isinstance(exc.detail, dict | list) else str(exc)
        return _response(error_body(code, message), exc.status_code, headers)
    return None

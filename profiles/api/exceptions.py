"""One exception handler: every API error is ``{"error": {"code", "message", "path"}}``.

The body is built by ``error_body`` alone: the handler, the API's and the project's middleware
and the schema's examples call it. ``ApiError`` is an error a view raises with its status,
code and path; ``not_found`` and ``ref_not_available`` are the 404s views share.

Engine errors keep their code and path (SPEC §7), validation errors of a workspace write keep
the engine's path (``profiles[3].rules.kb.mode``) and list every issue beside the first one.
"""

from django.core.exceptions import ObjectDoesNotExist, RequestDataTooBig
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import IntegrityError, OperationalError
from django.db.models import ProtectedError
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response

from profiles.safechange.environments import SafeChangeError
from profiles.workspace.concurrency import PreconditionFailed, WriteConflict, is_retryable
from profiles.workspace.parameters import ParameterInvalid
from profiles.workspace.permissions import KeyForbidden
from profiles.workspace.validation import WorkspaceValidationError, issues_body
from profiles.workspace.writing import Conflict
from resolver import RequestError, ResolverError, WorkspaceError
from resolver.errors import PROFILE_NOT_FOUND


def printable(text: str) -> str:
    """Return text that encodes as UTF-8: a lone surrogate echoed from input is escaped."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def error_body(code: str, message: str, path: str = "", **extra) -> dict:
    return {
        "error": {"code": code, "message": printable(message), "path": printable(path), **extra}
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
        return _response(error_body(exc.code, str(exc), exc.path), 400)
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
        headers = {}
        if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
            headers["Retry-After"] = str(max(1, int(exc.wait)))
        # APIView.handle_exception set it (401) or turned the status into 403.
        if getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = exc.auth_header
        message = str(exc.detail) if not isinstance(exc.detail, dict | list) else str(exc)
        return _response(error_body(code, message), exc.status_code, headers)
    return None

"""Errors raised by the resolver, each with a code, the offending field's path and a message."""

from dataclasses import dataclass

INVALID_WORKSPACE = "INVALID_WORKSPACE"
INVALID_REQUEST = "INVALID_REQUEST"
PROFILE_NOT_FOUND = "PROFILE_NOT_FOUND"


@dataclass(frozen=True)
class ValidationIssue:
    """One problem found in a workspace document: where it is and what is wrong."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ResolverError(Exception):
    """An error that is not a resolution: it carries ``code``, ``path`` and ``message``."""

    code = "ERROR"

    def __init__(self, message: str, *, path: str = "", code: str | None = None):
        self.message = message
        self.path = path
        if code is not None:
            self.code = code
        super().__init__(f"{path}: {message}" if path else message)

    def as_dict(self) -> dict:
        """Return the error in the wire shape ``{"error": {"code", "message", "path"}}``."""
        return {"error": {"code": self.code, "message": str(self), "path": self.path}}


class WorkspaceError(ResolverError):
    """The workspace document is invalid; ``issues`` lists every error found."""

    code = INVALID_WORKSPACE

    def __init__(self, message: str, *, path: str = "", issues: list[ValidationIssue] = ()):
        super().__init__(message, path=path)
        self.issues = list(issues) or [ValidationIssue(path, message)]


class RequestError(ResolverError):
    """The request is invalid (``INVALID_REQUEST``) or names no profile (``PROFILE_NOT_FOUND``)."""

    code = INVALID_REQUEST

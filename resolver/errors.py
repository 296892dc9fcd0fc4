"""Errors raised by the resolver, each with a code, the offending field's path and a message."""

from dataclasses import dataclass

INVALID_WORKSPACE = "INVALID_WORKSPACE"
INVALID_REQUEST = "INVALID_REQUEST"
PROFILE_NOT_FOUND = "PROFILE_NOT_FOUND"


@dataclass(frozen=True)
class ValidationIssue:
    """One problem found in a workspace document: where it is and what is wrong.

    ``path`` is the document path (``profiles[0].rules.tickets.maxItems``). An issue found in
    a text (an import, ``validate``) may also say which entry it concerns (``entry``: ``rule
    support-answer/tickets``) and where the value is written: ``line`` and ``column``
    (1-based) and, when the path goes through a YAML alias, the alias's ``alias_line`` and
    ``alias_column`` (``resolver.locations.locate_issues`` fills them in). ``stored`` marks an
    issue of the stored workspace an import merges into, not of the file: its path is not
    one of the file's, so it is never located in the file's text.
    """

    path: str
    message: str
    entry: str | None = None
    line: int | None = None
    column: int | None = None
    alias_line: int | None = None
    alias_column: int | None = None
    stored: bool = False

    def __str__(self) -> str:
        text = f"{self.path}: {self.message}" if self.path else self.message
        where = self.where
        return f"{text} ({where})" if where else text

    @property
    def where(self) -> str:
        """Return the entry and the line in words (``rule a/b, line 12, column 7``), or ""."""
        parts = [self.entry] if self.entry else []
        if self.line is not None:
            parts.append(f"line {self.line}, column {self.column}")
            if self.alias_line is not None:
                parts.append(
                    f"through the alias on line {self.alias_line}, column {self.alias_column}"
                )
        return ", ".join(parts)

    def as_dict(self) -> dict:
        """Return the issue as the API lists it: ``path`` and ``message``, then ``entry``,
        ``line``, ``column``, ``aliasLine`` and ``aliasColumn`` when known."""
        document = {"path": self.path, "message": self.message}
        for name, value in (
            ("entry", self.entry),
            ("line", self.line),
            ("column", self.column),
            ("aliasLine", self.alias_line),
            ("aliasColumn", self.alias_column),
        ):
            if value is not None:
                document[name] = value
        return document


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
        """Return the error in the wire shape ``{"error": {"code", "message", "path",
        "retryable"}}`` (the engine's answers never change by retrying: always false)."""
        return {
            "error": {
                "code": self.code,
                "message": str(self),
                "path": self.path,
                "retryable": False,
            }
        }


class WorkspaceError(ResolverError):
    """The workspace document is invalid; ``issues`` lists every error found."""

    code = INVALID_WORKSPACE

    def __init__(self, message: str, *, path: str = "", issues: list[ValidationIssue] = ()):
        super().__init__(message, path=path)
        self.issues = list(issues) or [ValidationIssue(path, message)]


class RequestError(ResolverError):
    """The request is invalid (``INVALID_REQUEST``) or names no profile (``PROFILE_NOT_FOUND``)."""

    code = INVALID_REQUEST

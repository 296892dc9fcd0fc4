"""How a log line is written (``LOG_FORMAT``): a plain line for development, or one JSON
object a line for a log shipper (python-json-logger), with the same fields either way.

Neither writes customer text: a line's fields are a fixed list (whatever else a record
carries, such as Django's ``request``, is left out), Django's lines about a request name
its door instead of its path (``ctxstudio.log_context.RequestPathFilter``), and an
exception's traceback keeps each exception's type and frames but withholds its message
(``ValueError``'s, ``IntegrityError``'s … may quote the text that failed), except for
the exceptions that describe the service itself: a file, a connection, the database
being unavailable.
"""

import logging
import time
import traceback

from pythonjsonlogger.json import JsonFormatter

# The record's attributes a JSON line is made of, and their names in it.
JSON_FIELDS = ("asctime", "levelname", "name", "request_id", "message")
JSON_NAMES = {"asctime": "time", "levelname": "level", "name": "logger"}
#: What the access line adds (``ctxstudio.log_context.RequestIdMiddleware``).
ACCESS_FIELDS = ("door", "method", "status", "duration_ms", "user_id", "key_id")
# Exceptions about the service itself, whose message is kept: an OSError names a file or a
# connection; a database's OperationalError / InterfaceError says it is unreachable or locked.
_MESSAGE_KEPT = (OSError,)
_MESSAGE_KEPT_NAMES = frozenset({"OperationalError", "InterfaceError"})
_CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
_CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n\n"


def _summary(exc: BaseException) -> str:
    kind = type(exc)
    name = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )
    if isinstance(exc, _MESSAGE_KEPT) or kind.__name__ in _MESSAGE_KEPT_NAMES:
        return "".join(traceback.format_exception_only(exc)).rstrip("\n")
    return f"{name}: (message withheld: it may quote customer text)"


def exception_withheld(exc: BaseException) -> str:
    """Return the traceback logging would write for ``exc`` (its chain of causes included),
    each exception's message withheld unless it describes the service itself."""
    chain: list[BaseException] = []
    while exc is not None and all(exc is not seen for seen in chain):
        chain.append(exc)
        exc = (
            exc.__cause__
            if exc.__cause__ is not None
            else (None if exc.__suppress_context__ else exc.__context__)
        )
    parts = []
    for later, exc in zip([*chain[-2::-1], None], chain[::-1], strict=True):
        frames = "".join(traceback.format_tb(exc.__traceback__))
        parts.append(f"Traceback (most recent call last):\n{frames}{_summary(exc)}\n")
        if later is not None:
            parts.append(_CAUSE if later.__cause__ is exc else _CONTEXT)
    return "".join(parts).rstrip("\n")


class _UtcWithheld:
    """Times in UTC, ISO 8601 with milliseconds (``2026-12-05T10:15:42.123Z``); tracebacks
    with their messages withheld."""

    _second = (0, "1970-01-01T00:00:00")  # the last second written, and how (one tuple:
    # threads replace it whole)

    def formatTime(self, record, datefmt=None):
        # strftime once a second, not once a line (the access line is on every request).
        second, written = self._second
        if int(record.created) != second:
            second = int(record.created)
            written = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._second = (second, written)
        return f"{written}.{int(record.msecs):03d}Z"

    def formatException(self, ei):
        return exception_withheld(ei[1]) if ei[1] is not None else ""


class UtcFormatter(_UtcWithheld, logging.Formatter):
    """The plain line (its format is ``settings.LOGGING``'s)."""

    def format(self, record):
        if record.exc_info:
            record.exc_text = None  # another handler's text would keep the messages
        return super().format(record)


class JsonLineFormatter(_UtcWithheld, JsonFormatter):
    """One JSON object a line: ``time``, ``level``, ``logger``, ``request_id``, ``message``,
    the access line's fields (``ACCESS_FIELDS``), and ``exc_info`` for a traceback.

    Only these: the library's own ``add_fields`` would add every attribute a record was
    given (Django's ``request`` among them, written out with its path)."""

    def __init__(self, *args, **kwargs):
        super().__init__(list(JSON_FIELDS), rename_fields=JSON_NAMES)

    def add_fields(self, log_data, record, message_dict):
        given = record.__dict__
        for field in JSON_FIELDS:
            log_data[JSON_NAMES.get(field, field)] = given.get(field)
        for field in ACCESS_FIELDS:
            if field in given:
                log_data[field] = given[field]
        for field in ("exc_info", "stack_info"):
            if message_dict.get(field):
                log_data[field] = message_dict[field]

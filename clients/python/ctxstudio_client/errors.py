"""The client's errors: one typed exception per way a call fails, never a bare ``httpx`` one.

* ``ApiError``: the server (or the local engine) answered an error; it carries the API's
  ``code``, ``message``, ``path`` and ``retryable``, the HTTP ``status`` and ``Retry-After``.
* ``ServerUnavailable``: no answer in time (``code`` ``TIMEOUT``) or no connection
  (``CONNECTION_FAILED``); retryable.
* ``LocalEvaluationRefused``: ``local="only"`` and the snapshot cannot answer; ``reason``
  says why (no snapshot, another engine version, a served layer the request reads…).
"""


class ClientError(Exception):
    """Every error this client raises."""

    code: str = ""
    path: str = ""
    retryable: bool = False
    status: int | None = None


class ApiError(ClientError):
    """An error answer (``{"error": {"code", "message", "path", "retryable"}}``)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        path: str = "",
        *,
        retryable: bool = False,
        retry_after: float | None = None,
        body: dict | None = None,
        origin: str = "remote",
    ):
        super().__init__(f"{status} {code}: {message}" if message else f"{status} {code}")
        self.status = status
        self.code = code
        self.message = message
        self.path = path
        self.retryable = retryable
        self.retry_after = retry_after
        self.body = body or {}
        self.origin = origin


class ServerUnavailable(ClientError):
    """The server did not answer within the call's timeout, or could not be reached."""

    retryable = True

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class LocalEvaluationRefused(ClientError):
    """Local evaluation was required (``local="only"``) and is not possible: ``reason``."""

    code = "LOCAL_EVALUATION_REFUSED"

    def __init__(self, reason: str):
        super().__init__(f"local evaluation refused: {reason}")
        self.reason = reason

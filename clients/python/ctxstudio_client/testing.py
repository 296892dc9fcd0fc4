"""A fake server for the tests of applications that use the client (docs/client.md).

``FakeServer(workspace)`` answers ``resolve`` and ``snapshot`` in memory with the engine
(``resolver``, the ``local`` extra), through an ``httpx.MockTransport``; failures are
injected on demand::

    server = FakeServer(workspace)
    client = Client("http://studio.test", key=server.key, transport=server.transport)
    server.fail(503, times=1, retry_after=0)   # the next request answers 503, retryable
    server.down = True                         # every request fails to connect

``requests`` records what was sent (method, path, headers, body), to assert on.
"""

import hashlib
import json

import httpx

ERROR_STATUS = {"INVALID_REQUEST": 400, "PROFILE_NOT_FOUND": 404}


class FakeServer:
    def __init__(self, workspace: dict, *, key: str = "test-key", served: dict | None = None):
        import resolver  # the engine: the local extra
        from resolver.fingerprint import engine_version

        self.key = key
        self.workspace = workspace
        self.served = served or {}
        self.down = False
        self.requests: list[tuple[str, str, dict, dict | None]] = []
        self._failures: list[tuple[int, str, bool, float | None]] = []
        self._compiled = resolver.compile_workspace(workspace)
        self._resolver = resolver
        self._engine = engine_version()
        self.transport = httpx.MockTransport(self.handle)

    def fail(
        self,
        status: int = 503,
        code: str = "SERVICE_UNAVAILABLE",
        *,
        retryable: bool = True,
        retry_after: float | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` requests with this error."""
        self._failures.extend([(status, code, retryable, retry_after)] * times)

    def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.requests.append((request.method, request.url.path, dict(request.headers), body))
        if self.down:
            raise httpx.ConnectError("the fake server is down", request=request)
        if request.headers.get("Authorization") != f"Token {self.key}":
            return _error(401, "AUTHENTICATION_FAILED", "wrong key")
        if self._failures:
            status, code, retryable, retry_after = self._failures.pop(0)
            headers = {} if retry_after is None else {"Retry-After": str(int(retry_after))}
            return _error(status, code, "injected", retryable=retryable, headers=headers)
        route = (request.method, request.url.path)
        if route == ("POST", "/api/v1/resolve"):
            return self._resolve(request, body)
        if route == ("GET", "/api/v1/snapshot"):
            return self._snapshot(request)
        return _error(404, "NOT_FOUND", "not found")

    def _resolve(self, request, body) -> httpx.Response:
        try:
            data = self._compiled.resolve_json(body).data
        except self._resolver.RequestError as exc:
            error = exc.as_dict()["error"]
            return _error(ERROR_STATUS.get(exc.code, 400), exc.code, error["message"], exc.path)
        return _conditional(request, data, f'W/"{hashlib.sha256(data).hexdigest()[:32]}"')

    def _snapshot(self, request) -> httpx.Response:
        document = {
            "snapshot": 1,
            "engine": self._engine,
            "version": "fake",
            "served": self.served,
            "workspace": self.workspace,
        }
        data = json.dumps(document).encode()
        return _conditional(request, data, f'"{hashlib.sha256(data).hexdigest()[:32]}"')


def _conditional(request, data: bytes, etag: str) -> httpx.Response:
    if request.headers.get("If-None-Match") == etag:
        return httpx.Response(304, headers={"ETag": etag})
    return httpx.Response(
        200, content=data, headers={"ETag": etag, "Content-Type": "application/json"}
    )


def _error(status, code, message, path="", *, retryable=False, headers=None) -> httpx.Response:
    body = {"error": {"code": code, "message": message, "path": path, "retryable": retryable}}
    return httpx.Response(status, json=body, headers=headers or {})

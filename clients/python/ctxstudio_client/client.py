"""``Client`` and ``AsyncClient``: resolve, expand and scenarios over the API, with explicit
resilience (docs/client.md).

Every call has one **timeout**, for all its attempts. An error the API marks ``retryable``
(429, 503, a lock conflict) and a failed connection are tried again, ``retries`` times at
most, after ``Retry-After`` when the server gives it, else after an exponential backoff
with full jitter; never beyond the timeout. Answers are kept in a bounded cache by request
(``AnswerCache``): sending the same request again sends its ``ETag`` (``If-None-Match``),
and a 304 answers the cached bytes (``not_modified``). Opt-in per call: ``max_age`` answers
from the cache without asking (``cached``), ``max_stale`` answers from the cache when the
server fails (``stale``), and ``local`` resolves from the snapshot (``local``). Each answer
says its origin and age; an error with no such permission is raised, typed.
"""

import asyncio
import json
import os
import random
import time

import httpx

from ctxstudio_client import forksafe
from ctxstudio_client.answers import Answer, ExpandedItem, Origin, Resolution
from ctxstudio_client.cache import AnswerCache, Entry, request_key
from ctxstudio_client.errors import ApiError, ClientError, LocalEvaluationRefused, ServerUnavailable
from ctxstudio_client.local import LocalEngine, LocalRequestError
from ctxstudio_client.snapshot import SnapshotStore

__version__ = "0.1.0"

LOCAL_MODES = (False, True, "only", "degraded")
# The request fields of SPEC §3 (and the API's scenario), passed as given.
FIELDS = ("consumer", "objective", "environment", "now", "format", "availability", "detail")


def request_body(profile, input, fields: dict, request: dict | None = None) -> dict:
    """Return the SPEC §3 request of a call: ``request`` (a whole request, as a dict) with
    the fields given beside it (those given as None are left out)."""
    body = dict(request or {})
    if profile is not None:
        body["profile"] = profile
    if input is not None:
        body["input"] = input
    body.update({name: value for name, value in fields.items() if value is not None})
    return body


def error_from(status: int, headers, content: bytes) -> ApiError:
    """Return the typed error of an error answer (any body: a proxy's page too)."""
    try:
        body = json.loads(content)
        error = body["error"]
        code, message = str(error["code"]), str(error.get("message", ""))
    except (ValueError, KeyError, TypeError):
        body, error = {}, {}
        code, message = ("SERVICE_UNAVAILABLE" if status >= 500 else "HTTP_ERROR"), f"HTTP {status}"
    retry_after = None
    if headers.get("Retry-After", "").strip().isdigit():
        retry_after = float(headers["Retry-After"])
    retryable = bool(error.get("retryable", status in (502, 503, 504)))
    return ApiError(
        status,
        code,
        message,
        str(error.get("path", "")),
        retryable=retryable,
        retry_after=retry_after,
        body=body,
    )


class _Base:
    """What the sync and async clients share: options, the cache, the snapshot, and every
    decision of a call (whether to retry, how long to wait, whether the cache may answer)."""

    def __init__(
        self,
        base_url: str,
        key: str,
        *,
        timeout: float = 5.0,
        retries: int = 2,
        backoff: float = 0.05,
        max_backoff: float = 2.0,
        cache_entries: int = 256,
        cache_bytes: int = 32 * 1024 * 1024,
        local: bool | str = False,
        snapshot_dir=None,
        snapshot_interval: float | None = 30.0,
        snapshot_timeout: float = 30.0,
        transport=None,
    ):
        if local not in LOCAL_MODES:
            raise ValueError(f"local must be one of {LOCAL_MODES}")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.local = local
        self.cache = AnswerCache(cache_entries, cache_bytes)
        self.engine = LocalEngine()
        self._key = key
        self._transport = transport
        self.headers = {
            "Authorization": f"Token {key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"ctxstudio-client/{__version__}",
        }
        self._snapshot_options = (snapshot_dir, snapshot_interval, snapshot_timeout)
        self._store: SnapshotStore | None = None
        self._urls: dict[str, httpx.URL] = {}
        self._pid = os.getpid()
        forksafe.register(self)

    def after_fork(self) -> None:
        """In a child of fork: forget the parent's pools (the next call opens new ones)."""
        self._pid = os.getpid()
        self._drop_pools()
        self.cache.after_fork()

    def _drop_pools(self) -> None:
        raise NotImplementedError

    def _check_fork(self) -> None:
        if self._pid != os.getpid():
            self.after_fork()

    # -- the snapshot ---------------------------------------------------------------------

    @property
    def snapshot(self) -> SnapshotStore:
        """The snapshot store (created, and its file read, on first use)."""
        if self._store is None:
            directory, interval, _ = self._snapshot_options
            self._store = SnapshotStore(
                self._fetch_snapshot,
                self.engine.prepare,
                secret=self._key,
                source=f"{self.base_url}\n{self._key}",
                directory=directory,
                interval=interval,
            )
        return self._store

    def _fetch_snapshot(self, etag: str | None):
        """Poll ``GET /api/v1/snapshot`` (a blocking call: the refresher thread's)."""
        headers = {**self.headers, "If-None-Match": etag} if etag else self.headers
        try:
            with httpx.Client(transport=self._transport) as http:
                response = http.get(
                    self.base_url + "/api/v1/snapshot",
                    headers=headers,
                    timeout=self._snapshot_options[2],
                )
        except httpx.TimeoutException as exc:
            raise ServerUnavailable("TIMEOUT", f"the snapshot: {exc}") from None
        except httpx.TransportError as exc:
            raise ServerUnavailable("CONNECTION_FAILED", f"the snapshot: {exc}") from None
        if response.status_code not in (200, 304):
            raise error_from(response.status_code, response.headers, response.content)
        return response.status_code, response.headers.get("ETag"), response.content

    def _local_answer(self, body: dict, local, scenario, timeout) -> Resolution | str:
        """Return the local resolution, or why the server answers (raise for ``only``).
        ``local=True`` never waits for a first snapshot (the server answers meanwhile);
        ``only`` and ``degraded`` wait for it up to the call's timeout."""
        if scenario is not None:
            reason = "a scenario is resolved by the server"
        elif self.engine.modules() is None:  # no engine: no snapshot polled for nothing
            reason = self.engine.missing
        else:
            wait = 0.0 if local is True else (self.timeout if timeout is None else timeout)
            snapshot = self.snapshot.get(wait)
            outcome = self.engine.evaluate(snapshot, body, degraded=local == "degraded")
            if isinstance(outcome, Resolution):
                outcome.age = snapshot.age()
                outcome.etag = snapshot.etag
                return outcome
            reason = outcome
        if local == "only":
            if isinstance(reason, LocalRequestError):
                raise reason.error
            raise LocalEvaluationRefused(str(reason))
        return str(reason)

    # -- a call's decisions ----------------------------------------------------------------

    def _cached(self, key: str, max_age, make) -> Answer | None:
        entry = self.cache.get(key)
        if max_age is not None and entry is not None and entry.age() <= max_age:
            return make(entry.data, Origin.CACHED, entry.age(), entry.etag, entry.headers)
        return None

    def _accept(self, key: str, status: int, headers, content: bytes, make) -> Answer:
        """Return the answer of a response (storing it), or raise its typed error."""
        if status == 304:
            entry = self.cache.get(key)
            if entry is None:  # evicted meanwhile: ask again without the condition
                raise ServerUnavailable("CACHE_EVICTED", "304 for an answer no longer cached")
            entry = Entry(entry.data, entry.etag, time.monotonic(), entry.headers)
            self.cache.put(key, entry)
            return make(entry.data, Origin.NOT_MODIFIED, 0.0, entry.etag, entry.headers)
        if status >= 400:
            raise error_from(status, headers, content)
        kept = tuple((name, headers[name]) for name in ("X-Profile-Version",) if name in headers)
        etag = headers.get("ETag")
        self.cache.put(key, Entry(content, etag, time.monotonic(), kept))
        return make(content, Origin.REMOTE, 0.0, etag, kept)

    def _wait(self, error: ClientError, attempt: int, deadline: float) -> float | None:
        """Return the seconds to wait before trying again, or None (give up)."""
        if not error.retryable or attempt >= self.retries:
            return None
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:
            delay = retry_after * random.uniform(1.0, 1.1)
        else:
            delay = random.uniform(0, min(self.max_backoff, self.backoff * 2**attempt))
        return delay if time.monotonic() + delay < deadline else None

    def _fallback(self, key: str, error: ClientError, max_stale, make) -> Answer:
        """Return the cached answer within ``max_stale`` when the server failed, else raise."""
        entry = self.cache.get(key)
        server_failed = isinstance(error, ServerUnavailable) or (error.status or 0) >= 500
        if (
            max_stale is not None
            and entry is not None
            and (server_failed or error.retryable)
            and entry.age() <= max_stale
        ):
            answer = make(entry.data, Origin.STALE, entry.age(), entry.etag, entry.headers)
            answer.note = str(error)
            return answer
        raise error

    def _resolve_start(self, profile, input, fields, request, scenario, local, timeout):
        """Return ``(local answer or None, body to send, note)`` of a resolve call."""
        body = request_body(profile, input, _fields(fields), request)
        local = self.local if local is None else local
        note = ""
        if local:
            outcome = self._local_answer(body, local, scenario, timeout)
            if isinstance(outcome, Resolution):
                return outcome, body, ""
            note = outcome
        if scenario is not None:
            body["scenario"] = scenario
        return None, body, note

    @staticmethod
    def _expand_body(ref, profile, input, fields, request, scenario) -> dict:
        body = request_body(profile, input, _fields(fields), request)
        if scenario is not None:
            body["scenario"] = scenario
        body["ref"] = ref
        return body

    def _steps(self, path: str, body: dict, max_stale, max_age, timeout, make):
        """A call as a generator, shared by the sync and async clients: it yields
        ``("send", headers, seconds left)`` and is sent the response (or the ``ClientError``),
        yields ``("sleep", seconds)`` between attempts, and returns the answer (or raises);
        a cached answer within ``max_age`` is returned before anything is sent."""
        key = request_key(path, body)
        cached = self._cached(key, max_age, make)
        if cached is not None:
            return cached
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        attempt = 0
        while True:
            outcome = yield ("send", self._conditional(key), deadline - time.monotonic())
            try:
                if isinstance(outcome, ClientError):
                    raise outcome
                return self._accept(
                    key, outcome.status_code, outcome.headers, outcome.content, make
                )
            except ClientError as error:
                delay = self._wait(error, attempt, deadline)
                if delay is None:
                    return self._fallback(key, error, max_stale, make)
                yield ("sleep", delay)
                attempt += 1

    def _request(self, method: str, path: str, body, headers, timeout: float) -> httpx.Request:
        """Build the request itself (cheaper than the client's ``request``: the URL is parsed
        once per path), with ``timeout`` seconds for each phase of this attempt."""
        url = self._urls.get(path)
        if url is None:
            url = httpx.URL(path if "://" in path else self.base_url + path)
            if len(self._urls) < 64:
                self._urls[path] = url
        seconds = max(timeout, 0.001)
        return httpx.Request(
            method,
            url,
            content=None if body is None else json.dumps(body, ensure_ascii=False).encode(),
            headers=headers,
            extensions={"timeout": dict.fromkeys(("connect", "read", "write", "pool"), seconds)},
        )

    def _conditional(self, key: str) -> dict:
        entry = self.cache.get(key)
        if entry is None or not entry.etag:
            return self.headers
        return {**self.headers, "If-None-Match": entry.etag}


def _resolution(data, origin, age, etag, headers) -> Resolution:
    version = dict(headers).get("X-Profile-Version")
    return Resolution(
        data=data,
        origin=origin,
        age=age,
        etag=etag,
        profile_version=int(version) if version and version.isdigit() else None,
    )


def _item(data, origin, age, etag, headers) -> ExpandedItem:
    return ExpandedItem(data=data, origin=origin, age=age, etag=etag)


def _transport_error(exc: Exception) -> ServerUnavailable:
    if isinstance(exc, httpx.TimeoutException):
        return ServerUnavailable("TIMEOUT", f"no answer in time ({type(exc).__name__})")
    return ServerUnavailable("CONNECTION_FAILED", str(exc) or type(exc).__name__)


class Client(_Base):
    """The synchronous client (thread-safe; fork-safe). ``local`` is the default of the
    calls' ``local`` (False: the server answers; True: the snapshot where it can, else the
    server; ``"only"``: the snapshot or ``LocalEvaluationRefused``; ``"degraded"``: the
    snapshot, served layers unavailable)."""

    _http: httpx.Client | None = None

    def _drop_pools(self) -> None:
        self._http = None  # the parent's sockets are the parent's: not closed from here

    def _client(self) -> httpx.Client:
        self._check_fork()
        if self._http is None:
            self._http = httpx.Client(base_url=self.base_url, transport=self._transport)
        return self._http

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
        if self._http is not None and self._pid == os.getpid():
            self._http.close()
        self._http = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def resolve(
        self,
        profile: str | None = None,
        input: dict | None = None,
        *,
        request: dict | None = None,
        scenario: str | None = None,
        local: bool | str | None = None,
        max_stale: float | None = None,
        max_age: float | None = None,
        timeout: float | None = None,
        **fields,
    ) -> Resolution:
        """Resolve a SPEC §3 request (``consumer``, ``objective``, ``environment``, ``now``,
        ``format``, ``availability``, ``detail`` as keywords, or a whole ``request`` dict),
        or a saved ``scenario``."""
        answered, body, note = self._resolve_start(
            profile, input, fields, request, scenario, local, timeout
        )
        if answered is not None:
            return answered
        answer = self._call("resolve", body, max_stale, max_age, timeout, _resolution)
        answer.note = answer.note or note
        return answer

    def expand(
        self,
        ref: str,
        profile: str | None = None,
        input: dict | None = None,
        *,
        request: dict | None = None,
        scenario: str | None = None,
        max_stale: float | None = None,
        max_age: float | None = None,
        timeout: float | None = None,
        **fields,
    ) -> ExpandedItem:
        """Return one item the resolution of the same request offers (the server's)."""
        body = self._expand_body(ref, profile, input, fields, request, scenario)
        return self._call("expand", body, max_stale, max_age, timeout, _item)

    def scenarios(self, *, timeout: float | None = None) -> list[dict]:
        """Return the saved scenarios (every page)."""
        found, url = [], "/api/v1/scenarios/"
        while url:
            response = self._send("GET", url, None, self.headers, timeout or self.timeout)
            page = json.loads(self._accepted(response))
            found.extend(page["results"])
            url = page.get("next")
        return found

    def _accepted(self, response: httpx.Response) -> bytes:
        if response.status_code >= 400:
            raise error_from(response.status_code, response.headers, response.content)
        return response.content

    def _send(self, method, path, body, headers, timeout) -> httpx.Response:
        try:
            return self._client().send(self._request(method, path, body, headers, timeout))
        except httpx.TransportError as exc:
            raise _transport_error(exc) from None

    def _call(self, name, body, max_stale, max_age, timeout, make) -> Answer:
        path = "/api/v1/" + name
        steps = self._steps(path, body, max_stale, max_age, timeout, make)
        try:
            step = next(steps)
            while True:
                if step[0] == "sleep":
                    time.sleep(step[1])
                    step = next(steps)
                    continue
                try:
                    outcome = self._send("POST", path, body, step[1], step[2])
                except ClientError as error:
                    outcome = error
                step = steps.send(outcome)
        except StopIteration as done:
            return done.value


class AsyncClient(_Base):
    """The asynchronous client: the same calls, awaited (``async with AsyncClient(…)``).
    Local evaluation runs in the calling task (the engine is CPU-bound and quick); the
    snapshot is refreshed by the same background thread as the sync client's."""

    _http: httpx.AsyncClient | None = None

    def _drop_pools(self) -> None:
        self._http = None

    def _client(self) -> httpx.AsyncClient:
        self._check_fork()
        if self._http is None:
            self._http = httpx.AsyncClient(base_url=self.base_url, transport=self._transport)
        return self._http

    async def aclose(self) -> None:
        if self._store is not None:
            self._store.close()
        if self._http is not None and self._pid == os.getpid():
            await self._http.aclose()
        self._http = None

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.aclose()

    async def resolve(
        self,
        profile: str | None = None,
        input: dict | None = None,
        *,
        request: dict | None = None,
        scenario: str | None = None,
        local: bool | str | None = None,
        max_stale: float | None = None,
        max_age: float | None = None,
        timeout: float | None = None,
        **fields,
    ) -> Resolution:
        """As ``Client.resolve``."""
        answered, body, note = self._resolve_start(
            profile, input, fields, request, scenario, local, timeout
        )
        if answered is not None:
            return answered
        answer = await self._call("resolve", body, max_stale, max_age, timeout, _resolution)
        answer.note = answer.note or note
        return answer

    async def expand(
        self,
        ref: str,
        profile: str | None = None,
        input: dict | None = None,
        *,
        request: dict | None = None,
        scenario: str | None = None,
        max_stale: float | None = None,
        max_age: float | None = None,
        timeout: float | None = None,
        **fields,
    ) -> ExpandedItem:
        """As ``Client.expand``."""
        body = self._expand_body(ref, profile, input, fields, request, scenario)
        return await self._call("expand", body, max_stale, max_age, timeout, _item)

    async def _send(self, path, body, headers, timeout) -> httpx.Response:
        try:
            return await self._client().send(self._request("POST", path, body, headers, timeout))
        except httpx.TransportError as exc:
            raise _transport_error(exc) from None

    async def _call(self, name, body, max_stale, max_age, timeout, make) -> Answer:
        path = "/api/v1/" + name
        steps = self._steps(path, body, max_stale, max_age, timeout, make)
        try:
            step = next(steps)
            while True:
                if step[0] == "sleep":
                    await asyncio.sleep(step[1])
                    step = next(steps)
                    continue
                try:
                    outcome = await self._send(path, body, step[1], step[2])
                except ClientError as error:
                    outcome = error
                step = steps.send(outcome)
        except StopIteration as done:
            return done.value


def _fields(fields: dict) -> dict:
    unknown = set(fields) - set(FIELDS)
    if unknown:
        raise TypeError(f"unknown request fields: {', '.join(sorted(unknown))}")
    return fields

"""The client over the API: typed answers and bytes, typed errors, retries with backoff and
Retry-After, conditional requests, and the cache's origins (issue 36, items 1 and 2)."""

import socket
import threading

import httpx
import pytest
from ctxstudio_client import (
    ApiError,
    AsyncClient,
    Client,
    Origin,
    ServerUnavailable,
)
from ctxstudio_client import client as client_module

from resolver import compile_workspace
from tests.clients.conftest import run_async


@pytest.fixture
def sleeps(monkeypatch) -> list[float]:
    """The client's waits between attempts, recorded instead of slept."""
    waited: list[float] = []
    monkeypatch.setattr(client_module.time, "sleep", waited.append)
    return waited


def test_resolve__remote__bytes_are_the_engines_and_typed_fields_match(make_client, support_case):
    client = make_client()

    answer = client.resolve(**support_case["request"])

    expected = compile_workspace(support_case["workspace"]).resolve_json(support_case["request"])
    assert answer.data == expected.data
    assert answer.origin is Origin.REMOTE
    assert answer.status == expected.head["status"]
    assert answer.text == expected.head["output"]["text"]
    assert answer.profile.key == support_case["request"]["profile"]
    assert [layer.layer for layer in answer.layers] == [r["layer"] for r in answer.json["layers"]]
    assert answer.budget.limit == answer.json["budget"]["limit"]


def test_resolve__same_request_again__sends_if_none_match_and_answers_not_modified(
    make_client, server, support_case
):
    client = make_client()
    first = client.resolve(**support_case["request"])

    second = client.resolve(**support_case["request"])

    assert server.requests[-1][2]["if-none-match"] == first.etag
    assert (second.origin, second.data) == (Origin.NOT_MODIFIED, first.data)


def test_resolve__max_age__answers_from_cache_without_asking(make_client, server, support_case):
    client = make_client()
    first = client.resolve(**support_case["request"])
    sent = len(server.requests)

    again = client.resolve(**support_case["request"], max_age=60)

    assert len(server.requests) == sent
    assert (again.origin, again.data) == (Origin.CACHED, first.data)
    assert 0 <= again.age < 60


def test_resolve__retryable_errors__retried_until_an_answer(
    make_client, server, support_case, sleeps
):
    client = make_client(retries=2)
    server.fail(503, times=2)

    answer = client.resolve(**support_case["request"])

    assert answer.origin is Origin.REMOTE
    assert len(server.requests) == 3
    assert len(sleeps) == 2
    # Full jitter below the exponential bound of each attempt.
    assert all(0 <= wait <= 0.001 * 2**n for n, wait in enumerate(sleeps))


def test_resolve__retries_exhausted__raises_the_typed_error(
    make_client, server, support_case, sleeps
):
    client = make_client(retries=1)
    server.fail(503, times=5)

    with pytest.raises(ApiError) as raised:
        client.resolve(**support_case["request"])

    error = raised.value
    assert (error.status, error.code, error.retryable) == (503, "SERVICE_UNAVAILABLE", True)
    assert len(server.requests) == 2


def test_resolve__retry_after__waited_when_it_fits_the_timeout(
    make_client, server, support_case, sleeps
):
    client = make_client(timeout=10)
    server.fail(429, "THROTTLED", retry_after=3)

    answer = client.resolve(**support_case["request"])

    assert answer.origin is Origin.REMOTE
    assert len(sleeps) == 1 and 3 <= sleeps[0] <= 3.3


def test_resolve__retry_after_beyond_the_timeout__raises_at_once(
    make_client, server, support_case, sleeps
):
    client = make_client(timeout=1)
    server.fail(429, "THROTTLED", retry_after=3)

    with pytest.raises(ApiError) as raised:
        client.resolve(**support_case["request"])

    assert (raised.value.code, raised.value.retry_after) == ("THROTTLED", 3.0)
    assert sleeps == []


def test_resolve__error_not_retryable__raised_once_with_code_and_path(make_client, server, sleeps):
    client = make_client()

    with pytest.raises(ApiError) as raised:
        client.resolve("no-such-profile", {"message": "x"})

    error = raised.value
    assert (error.status, error.code, error.path, error.retryable) == (
        404,
        "PROFILE_NOT_FOUND",
        "profile",
        False,
    )
    assert len(server.requests) == 1
    assert sleeps == []


def test_resolve__server_down__max_stale_answers_stale_else_typed_error(
    make_client, server, support_case, sleeps
):
    client = make_client()
    first = client.resolve(**support_case["request"])
    server.down = True

    stale = client.resolve(**support_case["request"], max_stale=60)
    with pytest.raises(ServerUnavailable) as raised:
        client.resolve(**support_case["request"])

    assert (stale.origin, stale.data) == (Origin.STALE, first.data)
    assert "CONNECTION_FAILED" in stale.note
    assert raised.value.code == "CONNECTION_FAILED"


def test_resolve__cached_answer_older_than_max_stale__not_served(
    make_client, server, support_case, sleeps
):
    client = make_client()
    client.resolve(**support_case["request"])
    server.down = True

    with pytest.raises(ServerUnavailable):
        client.resolve(**support_case["request"], max_stale=0)


def test_resolve__timeout__typed_timeout_error(server, support_case, tmp_path):
    def slow(request):
        raise httpx.ReadTimeout("slow", request=request)

    client = Client("http://studio.test", key="k", transport=httpx.MockTransport(slow), retries=0)

    with pytest.raises(ServerUnavailable) as raised:
        client.resolve(**support_case["request"])

    assert (raised.value.code, raised.value.retryable) == ("TIMEOUT", True)


def test_resolve__unknown_field__type_error(make_client):
    with pytest.raises(TypeError):
        make_client().resolve("p", {}, colour="blue")


def test_cache__bounded_by_entries(make_client, support_case):
    client = make_client(cache_entries=2)

    for message in ("a", "b", "c"):
        request = {**support_case["request"], "input": {"message": message}}
        client.resolve(**request)

    assert len(client.cache) == 2


def test_async_client__remote_then_not_modified_then_stale(server, support_case, tmp_path):
    async def run():
        async with AsyncClient(
            "http://studio.test", key=server.key, transport=server.transport, backoff=0.001
        ) as client:
            first = await client.resolve(**support_case["request"])
            second = await client.resolve(**support_case["request"])
            server.down = True
            stale = await client.resolve(**support_case["request"], max_stale=60)
            with pytest.raises(ServerUnavailable):
                await client.resolve(**support_case["request"])
            return first, second, stale

    first, second, stale = run_async(run())

    assert [a.origin for a in (first, second, stale)] == [
        Origin.REMOTE,
        Origin.NOT_MODIFIED,
        Origin.STALE,
    ]
    assert first.data == second.data == stale.data


def test_scenarios__every_page__in_order():
    pages = {
        "/api/v1/scenarios/": {"results": [{"name": "a"}], "next": "/api/v1/scenarios/?page=2"},
        "/api/v1/scenarios/?page=2": {"results": [{"name": "b"}], "next": None},
    }

    def answer(request):
        target = request.url.raw_path.decode()
        return httpx.Response(200, json=pages[target])

    client = Client("http://studio.test", key="k", transport=httpx.MockTransport(answer))

    assert [scenario["name"] for scenario in client.scenarios()] == ["a", "b"]


def test_scenarios__refused__typed_error():
    def refuse(request):
        body = {"error": {"code": "FORBIDDEN", "message": "no", "path": "", "retryable": False}}
        return httpx.Response(403, json=body)

    client = Client("http://studio.test", key="k", transport=httpx.MockTransport(refuse))

    with pytest.raises(ApiError) as raised:
        client.scenarios()

    assert (raised.value.status, raised.value.code) == (403, "FORBIDDEN")


def test_resolve__server_never_answers__timeout_error_not_a_hang(support_case):
    # A real socket that accepts and never answers: the call's timeout reaches the read.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held = []
    threading.Thread(target=lambda: held.append(listener.accept()), daemon=True).start()
    client = Client(f"http://127.0.0.1:{listener.getsockname()[1]}", key="k", retries=0)
    try:
        with pytest.raises(ServerUnavailable) as raised:
            client.resolve(**support_case["request"], timeout=0.3)
    finally:
        client.close()
        listener.close()

    assert raised.value.code == "TIMEOUT"

"""Local evaluation from the snapshot, its file, and fork safety (issue 36, items 3 and 4)."""

import os
import stat

import pytest
from ctxstudio_client import (
    ApiError,
    AsyncClient,
    LocalEvaluationRefused,
    Origin,
    ServerUnavailable,
)

from tests.clients.conftest import run_async


def snapshot_file(client):
    return client.snapshot.path


def test_local_only__answers_the_servers_bytes_from_the_snapshot(make_client, support_case):
    client = make_client()
    remote = client.resolve(**support_case["request"])

    local = client.resolve(**support_case["request"], local="only")

    assert (local.origin, local.data) == (Origin.LOCAL, remote.data)
    assert local.degraded == ()
    assert local.age >= 0


def test_no_snapshot__server_down__local_true_raises_and_only_is_refused(
    make_client, server, support_case
):
    server.down = True
    client = make_client()

    with pytest.raises(ServerUnavailable):
        client.resolve(**support_case["request"], local=True, timeout=0.5)
    with pytest.raises(LocalEvaluationRefused) as raised:
        client.resolve(**support_case["request"], local="only", timeout=0.5)

    assert "snapshot" in raised.value.reason
    assert "the fake server is down" in client.snapshot.last_error


def test_local__engine_version_differs__refused_saying_both(make_client, server, support_case):
    server._engine = "ctxstudio/1+0000000000000000"
    client = make_client()

    with pytest.raises(LocalEvaluationRefused) as raised:
        client.resolve(**support_case["request"], local="only")
    fallback = client.resolve(**support_case["request"], local=True)

    assert "ctxstudio/1+0000000000000000" in raised.value.reason
    assert "install the engine" in raised.value.reason
    assert (fallback.origin, fallback.note) == (Origin.REMOTE, raised.value.reason)


def test_local_only__unknown_profile__the_engines_error_typed(make_client, support_case):
    client = make_client()

    with pytest.raises(ApiError) as raised:
        client.resolve("no-such-profile", {"message": "x"}, local="only")

    error = raised.value
    assert (error.code, error.status, error.path, error.origin) == (
        "PROFILE_NOT_FOUND",
        404,
        "profile",
        "local",
    )


def test_snapshot_file__private_folder_and_file(make_client, support_case):
    client = make_client()
    client.resolve(**support_case["request"], local="only")

    path = snapshot_file(client)

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_cold_start__server_down__answers_locally_from_the_file(make_client, server, support_case):
    first = make_client()
    expected = first.resolve(**support_case["request"], local="only").data
    first.close()
    server.down = True

    cold = make_client()
    answer = cold.resolve(**support_case["request"], local="only")
    with pytest.raises(ServerUnavailable):
        cold.resolve(**support_case["request"], timeout=0.2)

    assert (answer.origin, answer.data) == (Origin.LOCAL, expected)


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-10],  # truncated
        lambda data: data.replace(b'"budget":', b'"budget":1', 1),  # altered
        lambda data: b"garbage" + data,  # no header
    ],
    ids=["truncated", "altered", "garbage"],
)
def test_damaged_file__ignored_removed_and_fetched_again(make_client, server, support_case, damage):
    first = make_client()
    first.resolve(**support_case["request"], local="only")
    first.close()
    path = snapshot_file(first)
    path.write_bytes(damage(path.read_bytes()))
    snapshots_before = sum(1 for r in server.requests if r[1] == "/api/v1/snapshot")

    cold = make_client()
    answer = cold.resolve(**support_case["request"], local="only")

    snapshots_after = sum(1 for r in server.requests if r[1] == "/api/v1/snapshot")
    assert answer.origin is Origin.LOCAL
    assert snapshots_after == snapshots_before + 1
    assert cold.snapshot.current.from_file is False


def test_damaged_file__server_down__not_used(make_client, server, support_case):
    first = make_client()
    first.resolve(**support_case["request"], local="only")
    first.close()
    path = snapshot_file(first)
    path.write_bytes(path.read_bytes().replace(b"Card refunds", b"Card refundz"))
    server.down = True

    with pytest.raises(LocalEvaluationRefused):
        make_client().resolve(**support_case["request"], local="only", timeout=1)


def test_folder_open_to_others__kept_in_memory_only(make_client, support_case, tmp_path):
    folder = tmp_path / "open"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    client = make_client(snapshot_dir=folder)

    answer = client.resolve(**support_case["request"], local="only")

    assert answer.origin is Origin.LOCAL
    assert list(folder.iterdir()) == []
    assert "0700" in client.snapshot.persist_problem


def test_snapshot__unchanged__polled_with_if_none_match_304(make_client, server, support_case):
    client = make_client()
    client.resolve(**support_case["request"], local="only")
    etag = client.snapshot.current.etag

    changed = client.snapshot.refresh()

    _, path, headers, _ = server.requests[-1]
    assert (path, headers["if-none-match"], changed) == ("/api/v1/snapshot", etag, False)


def test_engine_not_installed__server_answers_saying_so_and_nothing_polled(
    make_client, server, support_case, monkeypatch
):
    client = make_client()
    monkeypatch.setattr(client.engine, "modules", lambda: None)
    client.engine.missing = "the engine package is not installed"

    answer = client.resolve(**support_case["request"], local=True)

    assert (answer.origin, answer.note) == (Origin.REMOTE, "the engine package is not installed")
    assert client._store is None
    assert [path for _, path, _, _ in server.requests] == ["/api/v1/resolve"]


def test_async_client__local_only__the_same_bytes_as_remote(server, support_case, tmp_path):
    async def run():
        async with AsyncClient(
            "http://studio.test",
            key=server.key,
            transport=server.transport,
            snapshot_dir=tmp_path / "async",
        ) as client:
            remote = await client.resolve(**support_case["request"])
            local = await client.resolve(**support_case["request"], local="only")
            return remote, local

    remote, local = run_async(run())

    assert (local.origin, local.data) == (Origin.LOCAL, remote.data)

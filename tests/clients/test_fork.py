"""Fork safety (issue 36, item 4): a child of fork refreshes the snapshot with its own
thread and its own connection pool, started lazily by its first call."""

import json
import os
import time

import pytest

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork"),
    # The parent runs the snapshot thread when it forks, as an application under gunicorn may.
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded"),
]


def child_report(client, request) -> dict:
    """In the child: one call, then wait for the snapshot thread to poll again."""
    before = client.snapshot.refreshes
    parent_thread = client.snapshot._thread
    answer = client.resolve(**request, local="only")
    deadline = time.monotonic() + 10
    while client.snapshot.refreshes <= before and time.monotonic() < deadline:
        time.sleep(0.01)
    thread = client.snapshot._thread
    remote = client.resolve(**request)
    return {
        "origin": str(answer.origin),
        "refreshed": client.snapshot.refreshes > before,
        "thread_alive": thread is not None and thread.is_alive(),
        "new_thread": thread is not parent_thread,
        "pool_is_new": client._http is not None and not hasattr(client._http, "made_in_parent"),
        "remote": str(remote.origin),
    }


def test_fork__child__refreshes_the_snapshot_in_its_own_thread(make_client, support_case):
    client = make_client(snapshot_interval=0.05)
    request = support_case["request"]
    client.resolve(**request)  # the parent's pool is open
    client.resolve(**request, local="only")  # and its thread polls
    client._http.made_in_parent = True  # marked: an id may be reused once it is freed
    read, write = os.pipe()

    pid = os.fork()
    if pid == 0:  # the child: report, and leave without running the parent's cleanup
        try:
            report = child_report(client, request)
        except BaseException as exc:  # reported, so that the parent fails with it
            report = {"error": repr(exc)}
        os.write(write, json.dumps(report).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        report = json.loads(pipe.read() or b"{}")
    os.waitpid(pid, 0)

    assert report == {
        "origin": "local",
        "refreshed": True,
        "thread_alive": True,
        "new_thread": True,
        "pool_is_new": True,
        "remote": "not_modified",
    }

"""Two real gunicorn servers sharing one PostgreSQL resolve alike and see each other's saves."""

import contextlib
import http.client
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from django.db import connection

from profiles.import_export.imports import workspace_import
from tests.profiles.conftest import NOW, api_key_for, small_workspace

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).parent / "gunicorn"

# A test that starts a server on the suite's database: only PostgreSQL can be shared so.
needs_postgresql = pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="needs PostgreSQL (the suite's second run): the server shares the test database",
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="needs PostgreSQL (the suite's second run)",
    ),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def call(port, method, path, token, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    sent = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    sent.update(headers or {})
    try:
        conn.request(method, path, None if body is None else json.dumps(body), sent)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def database_url() -> str:
    """Return the URL of the suite's PostgreSQL test database, for a server to share it."""
    settings = connection.settings_dict
    return (
        f"postgres://{settings['USER']}@{settings['HOST'] or '127.0.0.1'}:"
        f"{settings['PORT'] or 5432}/{settings['NAME']}"
    )


@contextlib.contextmanager
def gunicorn(port: int, *, stderr=subprocess.DEVNULL, more_env=None):
    """Run ``make serve``'s gunicorn (one worker, production settings, a metrics folder of
    its own, ``more_env`` over them) on the suite's database at ``port``; yield once
    ``/healthz`` answers 200, and stop it at the end."""
    folder = tempfile.mkdtemp(prefix="ctx-metrics-")  # 0700
    env = {
        **{k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"},
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "HTTPS": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": database_url(),
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": "1",
        "GUNICORN_ACCESSLOG": "",
        "PROMETHEUS_MULTIPROC_DIR": folder,
        **(more_env or {}),
    }
    server = subprocess.Popen(
        [str(GUNICORN), "-c", "scripts/gunicorn.conf.py", "ctxstudio.wsgi"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if call(port, "GET", "/healthz", "")[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"server on {port} did not start"
            time.sleep(0.2)
        yield port
    finally:
        server.terminate()
        server.wait(timeout=20)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def two_servers():
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(gunicorn(free_port())) for _ in range(2)]


def test_two_servers__save_through_one__next_resolve_on_the_other_sees_it(two_servers, admin_user):
    # Given a workspace and two servers that each compiled it,
    workspace_import(document=small_workspace())
    token = api_key_for(admin_user)
    first, second = two_servers
    request = {"profile": "profile-0", "input": {"message": "refund"}, "now": NOW}
    answers = [call(port, "POST", "/api/v1/resolve", token, request) for port in two_servers]
    assert [status for status, _, _ in answers] == [200, 200]
    assert answers[0][2] == answers[1][2]  # identical bytes from both processes
    before = json.loads(answers[1][2])["budget"]["limit"]

    # When the budget is saved through the first server,
    _, headers, _ = call(first, "GET", "/api/v1/profiles/profile-0", token)
    status, _, body = call(
        first,
        "PATCH",
        "/api/v1/profiles/profile-0",
        token,
        {"budget": before + 123},
        {"If-Match": headers["ETag"]},
    )
    assert status == 200, body

    # then the very next resolution on the second server uses it.
    status, _, body = call(second, "POST", "/api/v1/resolve", token, request)
    assert status == 200
    assert json.loads(body)["budget"]["limit"] == before + 123

"""Real processes on a real database file: ``manage.py`` commands, a task worker, a server.

The suite's own database lives in memory; what goes wrong only between processes (a worker
polling beside the web server, a worker killed in the middle of a job) needs a database file
that several processes open, and the processes themselves.
"""

import atexit
import http.cookiejar
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def process_env(database: Path, **extra: str) -> dict[str, str]:
    """Return the environment of a process that uses the SQLite file ``database``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DJANGO_ALLOW_ASYNC_UNSAFE", "TASKS_BACKEND", "DATABASE_URL")
    }
    env.update(
        {
            "DATABASE_URL": f"sqlite:///{database}",
            "DEBUG": "true",
            "LOG_LEVEL": "ERROR",
            "DECISION_LOG_ASYNC": "false",
        }
    )
    env.update(extra)
    return env


def manage(env: dict, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    """Run ``manage.py`` with ``args`` to the end; fail with its output when it fails."""
    completed = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        input=input,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed


_migrated: dict[str, Path] = {}


def migrated_database(directory: Path) -> Path:
    """Return a new migrated SQLite file in ``directory`` (migrations run once per session)."""
    template = _migrated.get("template")
    if template is None or not template.exists():
        template = Path(tempfile.gettempdir()) / f"ctxstudio-migrated-{os.getpid()}.db"
        template.unlink(missing_ok=True)
        atexit.register(template.unlink, missing_ok=True)
        manage(process_env(template), "migrate", "--noinput", "-v", "0")
        _migrated["template"] = template
    database = directory / "ctxstudio.sqlite3"
    shutil.copyfile(template, database)
    return database


def start_worker(env: dict, *, interval: str = "0") -> subprocess.Popen:
    """Start ``manage.py db_worker`` (no reloader, no startup delay) as ``make run`` does."""
    return subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "db_worker",
            "--no-reload",
            "--no-startup-delay",
            "--interval",
            interval,
            "-v",
            "0",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def stop(process: subprocess.Popen) -> None:
    """Stop a process started here and wait for it."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(env: dict) -> tuple[subprocess.Popen, str]:
    """Start ``manage.py runserver`` (no reloader); return it and its base URL once it answers."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=5) as response:
                if response.status == 200:
                    return server, base
        except OSError:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            stop(server)
            raise AssertionError("the server did not start")
        time.sleep(0.1)


class Browser:
    """A client with cookies that signs in and posts forms with their CSRF token."""

    def __init__(self, base: str):
        self.base = base
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.cookies), _NoRedirect()
        )

    def request(self, path: str, data: dict | None = None) -> tuple[int, str]:
        body = None if data is None else urllib.parse.urlencode(data).encode()
        request = urllib.request.Request(self.base + path, data=body)
        if data is not None:
            request.add_header("Referer", self.base + path)
        try:
            with self.opener.open(request, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def csrf_token(self, html: str) -> str:
        return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)

    def post_form(self, path: str, data: dict) -> tuple[int, str]:
        """GET the page for its CSRF token, then POST ``data`` to ``path``."""
        status, html = self.request(path)
        assert status == 200, (status, html[:500])
        return self.request(path, {"csrfmiddlewaretoken": self.csrf_token(html), **data})

    def sign_in(self, username: str, password: str) -> None:
        status, _ = self.post_form("/accounts/login/", {"username": username, "password": password})
        assert status == 302, "sign-in failed"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None

"""Real processes for the scale-out runs: PgBouncer, Redis, gunicorn app servers, haproxy.

Shared by the CI-sized tests (``tests/ctxstudio/test_pgbouncer.py``,
``tests/ctxstudio/test_load_balancer.py``) and the benchmark (``tests.perf.scaleout_bench``).
Each is a context manager that writes its configuration into a temporary folder, listens on a
free loopback port, yields once it answers, and stops its process (and removes the folder) at
the end, in any case. PgBouncer and Redis refuse or warn when run as root: as root they run as
the ``postgres`` account (``runuser``), which owns their folder.
"""

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
GUNICORN = Path(PY).parent / "gunicorn"
# One task worker serves both queues (production runs one of each: docs/operations.md).
QUEUES = ("--queue-name", "default,webhooks", "--no-startup-delay")


def program(name: str) -> str | None:
    """Return the path of a server program (PATH, then /usr/sbin), None when missing."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin")
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def wait_until(check, what: str, *, seconds: float = 30, process=None) -> None:
    deadline = time.monotonic() + seconds
    while True:
        with contextlib.suppress(OSError):
            if check():
                return
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what} exited ({process.returncode})")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start within {seconds:.0f} s")
        time.sleep(0.1)


def stop(process: subprocess.Popen, *, seconds: float = 20) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=seconds)


@contextlib.contextmanager
def own_folder(prefix: str) -> Iterator[Path]:
    """A temporary folder; as root, owned by ``postgres`` (the account the servers run as)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def unprivileged(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


# --- PgBouncer -------------------------------------------------------------------------------

PGBOUNCER_INI = """\
[databases]
* = host={host} port={port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {listen}
unix_socket_dir =
auth_type = trust
auth_file = {folder}/users.txt
admin_users = {user}
pool_mode = transaction
max_client_conn = 500
default_pool_size = {pool_size}
max_db_connections = {pool_size}
server_idle_timeout = 30
ignore_startup_parameters = extra_float_digits
logfile = {folder}/pgbouncer.log
pidfile = {folder}/pgbouncer.pid
"""


@contextlib.contextmanager
def pgbouncer(
    host: str = "127.0.0.1", port: int = 5432, user: str = "postgres", pool_size: int = 20
) -> Iterator[int]:
    """Run PgBouncer in transaction pooling in front of the PostgreSQL at ``host:port``
    (every database, trust authentication for ``user``); yield its port."""
    binary = program("pgbouncer")
    if binary is None:
        raise RuntimeError("pgbouncer is not installed (Debian package pgbouncer)")
    with own_folder("ctx-pgbouncer-") as folder:
        listen = free_port()
        (folder / "users.txt").write_text(f'"{user}" ""\n')
        ini = folder / "pgbouncer.ini"
        ini.write_text(
            PGBOUNCER_INI.format(
                host=host, port=port, listen=listen, folder=folder, user=user, pool_size=pool_size
            )
        )
        if os.geteuid() == 0:
            for path in folder.iterdir():
                shutil.chown(path, "postgres", "postgres")
        process = subprocess.Popen(
            unprivileged([binary, str(ini)]),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            wait_until(lambda: port_open(listen), "pgbouncer", process=process)
            yield listen
        finally:
            stop(process)


# --- Redis ----------------------------------------------------------------------------------


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """Run a Redis of its own (no persistence, loopback); yield its URL (database 0)."""
    binary = program("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (Debian package redis-server)")
    with own_folder("ctx-redis-") as folder:
        port = free_port()
        command = [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(folder),
        ]
        process = subprocess.Popen(
            unprivileged(command), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            wait_until(lambda: port_open(port), "redis-server", process=process)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            stop(process)


# --- gunicorn ---------------------------------------------------------------------------------


def server_env(database_url: str, port: int, **more: str) -> dict:
    """Production settings for one app server on the loopback at ``port``."""
    env = {
        **{k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"},
        "DEBUG": "false",
        "SECRET_KEY": "scaleout-" + secrets.token_urlsafe(40),
        "HTTPS": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": database_url,
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": "1",
        "GUNICORN_ACCESSLOG": "",
        "LOG_LEVEL": "CRITICAL",
        "API_THROTTLE_RESOLVE": "10000000/minute",
        "API_THROTTLE_EXPAND": "10000000/minute",
        "API_THROTTLE_PREVIEW": "10000000/minute",
        "API_THROTTLE_USER": "10000000/minute",
        "API_THROTTLE_BULK": "100000/minute",
    }
    env.update(more)
    return env


@dataclass
class AppServer:
    """One app server: gunicorn (its own workers, metrics and texts folders) and, optionally,
    a task worker beside it (``/readyz`` wants one)."""

    env: dict
    port: int
    folder: Path
    gunicorn: subprocess.Popen | None = None
    tasks: subprocess.Popen | None = None
    log: Path | None = None
    extra: dict = field(default_factory=dict)

    def worker_pids(self) -> list[int]:
        from tests.perf.scale_bench import child_pids

        return child_pids(self.gunicorn.pid)

    def wait_ready(self, ready: str = "/readyz", seconds: float = 90) -> None:
        """Return once ``ready`` answers 200; raise with its last answer and the log's end."""
        from tests.perf.web_bench import http_call

        last = []

        def answers() -> bool:
            reply = http_call(self.port, "GET", ready, timeout=10)
            last[:] = [reply.status, reply.data[:300]]
            return reply.status == 200

        try:
            wait_until(answers, f"gunicorn on {self.port}", seconds=seconds, process=self.gunicorn)
        except RuntimeError as exc:
            text = self.log.read_text(errors="replace")
            tail = text[:3000] + " … " + text[-1000:]
            raise RuntimeError(f"{exc}; last answer {last}; log: {tail}") from None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to the master (SIGKILL: to its workers too, as a machine that dies)."""
        pids = [self.gunicorn.pid, *(self.worker_pids() if sig == signal.SIGKILL else [])]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        if self.tasks is not None and sig == signal.SIGKILL:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.tasks.pid, sig)


@contextlib.contextmanager
def app_server(
    database_url: str,
    *,
    workers: int = 1,
    tasks: bool = True,
    ready: str = "/readyz",
    wait: bool = True,
    **more,
) -> Iterator[AppServer]:
    """Start gunicorn (``scripts/gunicorn.conf.py``, ``workers`` sync workers) and a task
    worker on ``database_url`` with their own metrics and texts folders; yield once
    ``ready`` answers 200 (at once with ``wait=False``: call ``wait_ready``); stop both at
    the end."""
    folder = Path(tempfile.mkdtemp(prefix="ctx-app-"))
    port = free_port()
    env = server_env(
        database_url,
        port,
        GUNICORN_WORKERS=str(workers),
        PROMETHEUS_MULTIPROC_DIR=str(folder / "metrics"),
        MATERIAL_TEXTS_DIR=str(folder / "texts"),
        **more,
    )
    server = AppServer(env=env, port=port, folder=folder, log=folder / "gunicorn.log")
    try:
        with server.log.open("wb") as log:
            if tasks:
                # gunicorn's metrics folder is gunicorn's (emptied when it starts): the task
                # worker writes none (docs/operations.md, "Metrics").
                tasks_env = {k: v for k, v in env.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
                server.tasks = subprocess.Popen(
                    [PY, "manage.py", "db_worker", "-v", "0", "--interval", "0.2", *QUEUES],
                    cwd=ROOT,
                    env=tasks_env,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                )
            server.gunicorn = subprocess.Popen(
                [str(GUNICORN), "-c", "scripts/gunicorn.conf.py", "ctxstudio.wsgi"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        if wait:
            server.wait_ready(ready)
        yield server
    finally:
        for process in (server.gunicorn, server.tasks):
            if process is not None:
                stop(process)
        shutil.rmtree(folder, ignore_errors=True)


# --- haproxy ----------------------------------------------------------------------------------

HAPROXY_CFG = """\
global
    maxconn 2000

defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout http-request 10s
    # A sync worker answers the health check after the requests queued before it: a busy
    # server is slow to answer, not down (a dead one refuses the connection at once).
    timeout check 10s
    # An accepted request whose server failed before answering goes to another server:
    # redispatch on the last retry, retries on a refused connection or an empty answer
    # (the request body is buffered so that it can be sent again). Not on a timeout or an
    # error status: the server may have acted on the request.
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response junk-response
    option http-buffer-request
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter {inter}ms fall 2 rise 2

frontend app
    bind 127.0.0.1:{port}
    default_backend servers

backend servers
    balance {balance}
    http-response set-header X-Served-By %s
{servers}
"""


def haproxy_config(port: int, servers: list[int], *, inter_ms: int = 1000, balance="leastconn"):
    lines = "\n".join(
        f"    server app{n} 127.0.0.1:{server} check" for n, server in enumerate(servers)
    )
    return HAPROXY_CFG.format(port=port, servers=lines, inter=inter_ms, balance=balance)


@contextlib.contextmanager
def haproxy(servers: list[int], *, inter_ms: int = 1000) -> Iterator[int]:
    """Run haproxy in front of the app servers on the loopback ``servers`` ports (health
    checks on ``/readyz``, retries and redispatch); yield its port."""
    binary = program("haproxy")
    if binary is None:
        raise RuntimeError("haproxy is not installed (Debian package haproxy)")
    folder = Path(tempfile.mkdtemp(prefix="ctx-haproxy-"))
    port = free_port()
    config = folder / "haproxy.cfg"
    config.write_text(haproxy_config(port, servers, inter_ms=inter_ms))
    process = subprocess.Popen(
        [binary, "-db", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_until(lambda: port_open(port), "haproxy", process=process)
        yield port
    finally:
        stop(process)
        shutil.rmtree(folder, ignore_errors=True)

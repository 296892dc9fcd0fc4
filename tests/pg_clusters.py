"""Throwaway PostgreSQL clusters for tests and benchmarks: a primary made with ``initdb`` and a
streaming replica of it made with ``pg_basebackup -R``, each in a temporary folder on a free
loopback port, trust authentication on the loopback only, stopped and removed at the end; and
a throwaway Redis (``redis_server``), the shared cache of several server processes.

They need PostgreSQL's server programs (``initdb``, ``pg_ctl``, ``pg_basebackup``: Debian's
``postgresql`` package; found with ``pg_config --bindir`` or under
``/usr/lib/postgresql/*/bin``). Run as root, a cluster belongs to the ``postgres`` account
(PostgreSQL refuses to run as root), as in ``tests/perf/own_postgres.py``.
"""

import contextlib
import dataclasses
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg

PROGRAMS = ("initdb", "pg_ctl", "pg_basebackup")
# A cluster made for a test: small, and not durable (a test's data outlives nothing).
TEST_SETTINGS = (
    "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
    "shared_buffers = 32MB\nmax_connections = 40\n"
)


def server_programs(names: tuple[str, ...] = PROGRAMS) -> Path | None:
    """Return the folder of PostgreSQL's server programs ``names`` (by default ``initdb``,
    ``pg_ctl`` and ``pg_basebackup``), None when they are not installed."""
    candidates = []
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        found = subprocess.run(
            ["pg_config", "--bindir"], capture_output=True, text=True, check=True
        ).stdout.strip()
        candidates.append(Path(found))
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    for folder in candidates:
        if all((folder / name).exists() for name in names):
            return folder
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclasses.dataclass
class Cluster:
    """One running cluster: its folder (data, log, socket), port and programs."""

    folder: Path
    port: int
    programs: Path

    @property
    def data(self) -> Path:
        return self.folder / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def run(self, program: str, *args: str, timeout: float = 120) -> str:
        command = [str(self.programs / program), *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        if done.returncode:
            raise RuntimeError(f"{program} failed: {done.stdout}{done.stderr}")
        return done.stdout

    def start(self) -> None:
        self.run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.folder / "server.log"), "-w", "start"
        )

    def stop(self) -> None:
        self.run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def sql(self, statement: str, params=(), database: str = "postgres") -> list:
        """Run one statement (autocommit); return its rows ([] when it returns none)."""
        with psycopg.connect(self.url(database), autocommit=True, connect_timeout=5) as conn:
            cursor = conn.execute(statement, params)
            return cursor.fetchall() if cursor.description else []


def _folder(prefix: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    return folder


def _local_settings(folder: Path, port: int, more: str) -> str:
    return (
        f"\n# this cluster's\nport = {port}\nlisten_addresses = '127.0.0.1'\n"
        f"unix_socket_directories = '{folder}'\n{more}"
    )


def _append(cluster: Cluster, text: str) -> None:
    # Written as the cluster's owner when run as root (the file is theirs).
    conf = cluster.data / "postgresql.conf"
    with conf.open("a") as handle:
        handle.write(text)


@contextlib.contextmanager
def primary_cluster(
    settings: str = TEST_SETTINGS, prefix: str = "pg-primary-"
) -> Iterator[Cluster]:
    """Start a new cluster that streams its WAL to replicas (``wal_level = replica``); yield
    it; stop and remove it at the end, in any case."""
    programs = server_programs()
    if programs is None:
        raise RuntimeError("needs PostgreSQL's initdb, pg_ctl and pg_basebackup")
    cluster = Cluster(_folder(prefix), free_port(), programs)
    try:
        cluster.run(
            "initdb", "-D", str(cluster.data), "-U", "postgres", "--auth=trust", "-E", "UTF8",
            "--no-locale",
        )  # fmt: skip
        replication = "wal_level = replica\nmax_wal_senders = 4\nhot_standby = on\n"
        _append(cluster, _local_settings(cluster.folder, cluster.port, replication + settings))
        cluster.start()
        yield cluster
    finally:
        with contextlib.suppress(RuntimeError, subprocess.SubprocessError, OSError):
            cluster.stop()
        shutil.rmtree(cluster.folder, ignore_errors=True)


@contextlib.contextmanager
def replica_cluster(primary: Cluster, prefix: str = "pg-replica-") -> Iterator[Cluster]:
    """Make a streaming replica of ``primary`` (``pg_basebackup -R``: a base backup, WAL
    streamed, ``standby.signal`` and the connection to the primary written), start it and
    yield it once it accepts reads; stop and remove it at the end, in any case."""
    cluster = Cluster(_folder(prefix), free_port(), primary.programs)
    try:
        cluster.run(
            "pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
            "-D", str(cluster.data), "-R", "-X", "stream", "--checkpoint=fast",
        )  # fmt: skip
        _append(cluster, _local_settings(cluster.folder, cluster.port, ""))
        cluster.start()
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(psycopg.Error):
                if cluster.sql("SELECT pg_is_in_recovery()") == [(True,)]:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("the replica did not start")
            time.sleep(0.1)
        yield cluster
    finally:
        with contextlib.suppress(RuntimeError, subprocess.SubprocessError, OSError):
            cluster.stop()
        shutil.rmtree(cluster.folder, ignore_errors=True)


def replayed(primary: Cluster, replica: Cluster, timeout: float = 10) -> float:
    """Wait until ``replica`` has replayed everything ``primary`` wrote so far; return the
    seconds it took (raise TimeoutError after ``timeout``)."""
    target = primary.sql("SELECT pg_current_wal_lsn()")[0][0]
    started = time.monotonic()
    while True:
        done = replica.sql("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (str(target),))
        if done == [(True,)]:
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise TimeoutError("the replica did not catch up")
        time.sleep(0.02)


@contextlib.contextmanager
def redis_server() -> Iterator[str | None]:
    """Start a Redis of its own on a free loopback port (no persistence); yield its URL, or
    None when ``redis-server`` is not installed; stop it at the end."""
    program = shutil.which("redis-server")
    if program is None:
        yield None
        return
    port = free_port()
    server = subprocess.Popen(
        [program, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=10)

"""A PostgreSQL server of the benchmark's own, configured for a desk of a million tickets.

``python -m tests.perf.scale_bench --own-postgres`` runs against it instead of the machine's
server, so its figures depend on settings this repository states (``postgresql-desk.conf``,
the sizing docs/operations.md recommends, "Scaling out") and not on how the machine's server
happens to be configured. It is a new cluster (``initdb``) in a temporary folder, on a free
loopback port, trust authentication on the loopback only, stopped and removed at the end.

It needs PostgreSQL's server programs (``initdb``, ``pg_ctl``: Debian's ``postgresql``
package; found with ``pg_config --bindir`` or under ``/usr/lib/postgresql/*/bin``). Run as
root, the cluster belongs to the ``postgres`` account (PostgreSQL refuses to run as root).
"""

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests import pg_clusters
from tests.perf.web_bench import free_port

SETTINGS = Path(__file__).with_name("postgresql-desk.conf")


def server_programs() -> Path | None:
    """Return the folder of ``initdb`` and ``pg_ctl``, None when they are not installed."""
    return pg_clusters.server_programs(("initdb", "pg_ctl"))


def settings_text() -> str:
    """Return the stated settings (``postgresql-desk.conf``) without comments."""
    lines = (line.split("#", 1)[0].strip() for line in SETTINGS.read_text().splitlines())
    return "\n".join(line for line in lines if line) + "\n"


@contextlib.contextmanager
def own_postgres(log=print, *, extra: str = "") -> Iterator[str]:
    """Start a new PostgreSQL cluster with ``postgresql-desk.conf`` (and ``extra`` settings
    lines); yield its server URL (no database name); stop and remove it at the end, in any
    case."""
    programs = server_programs()
    if programs is None:
        raise SystemExit("--own-postgres needs PostgreSQL's initdb and pg_ctl (package postgresql)")
    folder = Path(tempfile.mkdtemp(prefix="ctxscale-postgres-"))
    data = folder / "data"
    as_root = os.geteuid() == 0
    if as_root:
        shutil.chown(folder, "postgres", "postgres")

    def run(*argv: str) -> None:
        command = [str(programs / argv[0]), *argv[1:]]
        if as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=300)

    port = free_port()
    try:
        run(
            "initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale"
        )
        local = (
            f"port = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{folder}'\n"
        )
        with (data / "postgresql.conf").open("a") as conf:
            conf.write("\n# the scale benchmark's\n" + local + settings_text() + extra)
        run("pg_ctl", "-D", str(data), "-l", str(folder / "server.log"), "-w", "start")
        log(f"  own PostgreSQL on 127.0.0.1:{port} ({SETTINGS.name})")
        yield f"postgres://postgres@127.0.0.1:{port}"
    finally:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            run("pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)

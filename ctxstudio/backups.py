"""Backups of the PostgreSQL database: ``pg_dump`` in its custom format, restored with
``pg_restore`` into a fresh database (``manage.py backup_database`` / ``restore_database``;
docs/operations.md "Backups").

``pg_dump`` reads one consistent snapshot while the service keeps writing, so a dump holds
every transaction committed before it started and none after: no half-written import, no
item without its activity entry. Everything the service needs is in the database (the
workspace, keys as their SHA-256 hashes, versions, the decision log, the activity log, the
task queue); the held texts files (``MATERIAL_TEXTS_DIR``) are not backed up: a restored
instance writes them again on first read, and a file it finds there from before is
verified, and rebuilt unless it is exactly the version it needs.

The connection's password goes to the client programs in their environment (``PGPASSWORD``),
never on a command line that ``ps`` shows.
"""

import os
import shutil
import subprocess
from pathlib import Path

import dj_database_url
import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

POSTGRESQL = "django.db.backends.postgresql"
# The database a new one is created from (every PostgreSQL server has it).
MAINTENANCE_DATABASE = "postgres"


class BackupError(Exception):
    """A backup or a restore that cannot be done; the message says why and what to do."""


def client_program(name: str) -> str:
    """Return the path of PostgreSQL's client program ``name`` (``pg_dump``, ``pg_restore``):
    on ``PATH``, else in ``pg_config --bindir``."""
    found = shutil.which(name)
    if found:
        return found
    pg_config = shutil.which("pg_config")
    if pg_config:
        bindir = subprocess.run(
            [pg_config, "--bindir"], capture_output=True, text=True, check=False
        ).stdout.strip()
        candidate = Path(bindir) / name
        if bindir and os.access(candidate, os.X_OK):
            return str(candidate)
    raise BackupError(
        f"{name} not found on PATH nor in pg_config --bindir: install PostgreSQL's client "
        "programs (Debian: postgresql-client), of the server's major version or newer"
    )


def database_of_url(url: str) -> dict:
    """Return the Django database settings of a ``postgres://`` URL."""
    database = dj_database_url.parse(url)
    if database.get("ENGINE") != POSTGRESQL:
        raise BackupError("the database URL must be a PostgreSQL one (postgres://…)")
    return database


def require_postgresql(database: dict) -> None:
    if database.get("ENGINE") != POSTGRESQL:
        raise BackupError(
            "backups are PostgreSQL's (pg_dump); this instance uses "
            f"{database.get('ENGINE')}. For SQLite, copy the file with sqlite3's .backup "
            "command while the service runs (docs/operations.md, Backups)."
        )


def _conninfo(database: dict, name: str | None = None) -> str:
    options = database.get("OPTIONS") or {}
    return make_conninfo(
        "",
        dbname=name or database["NAME"],
        host=database.get("HOST") or None,
        port=str(database["PORT"]) if database.get("PORT") else None,
        user=database.get("USER") or None,
        sslmode=options.get("sslmode"),
    )


def _environment(database: dict) -> dict:
    environment = dict(os.environ)
    if database.get("PASSWORD"):
        environment["PGPASSWORD"] = str(database["PASSWORD"])
    return environment


def _connect(database: dict, name: str | None = None, **kwargs):
    return psycopg.connect(_conninfo(database, name), password=database.get("PASSWORD"), **kwargs)


def _run(program: str, arguments: list[str], database: dict, **kwargs) -> None:
    done = subprocess.run(
        [client_program(program), *arguments],
        env=_environment(database),
        stderr=subprocess.PIPE,
        check=False,
        **kwargs,
    )
    if done.returncode:
        message = done.stderr.decode(errors="replace").strip()
        raise BackupError(f"{program} failed (exit {done.returncode}): {message}")


def database_dump(database: dict, output: Path) -> int:
    """Dump ``database`` to ``output`` (custom format, compressed), a file only its owner
    may read (0600: it holds every item's text and the keys' hashes): written under a
    temporary name and renamed into place when complete. Return its size in bytes."""
    require_postgresql(database)
    output = Path(output)
    temporary = output.with_name(f".{output.name}.{os.getpid()}.partial")
    temporary.unlink(missing_ok=True)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(descriptor, 0o600)  # whatever the umask
        _run(
            "pg_dump",
            ["--format=custom", "--no-password", f"--dbname={_conninfo(database)}"],
            database,
            stdout=descriptor,
        )
        os.fsync(descriptor)
    except BaseException:
        os.close(descriptor)
        temporary.unlink(missing_ok=True)
        raise
    os.close(descriptor)
    os.replace(temporary, output)
    return output.stat().st_size


def database_exists(database: dict) -> bool:
    with _connect(database, MAINTENANCE_DATABASE, autocommit=True) as connection:
        found = connection.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [database["NAME"]]
        ).fetchone()
    return found is not None


def database_create(database: dict) -> None:
    with _connect(database, MAINTENANCE_DATABASE, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database["NAME"])))


def database_relations(database: dict) -> int:
    """Return how many tables, views and sequences the database holds outside PostgreSQL's
    own schemas (0: a fresh database)."""
    with _connect(database) as connection:
        (count,) = connection.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f') "
            "AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
            "AND n.nspname NOT LIKE 'pg\\_toast%%'"
        ).fetchone()
    return count


def database_restore(database: dict, dump: Path, *, replace: bool) -> None:
    """Restore ``dump`` into ``database`` in one transaction (all of it or nothing), as the
    connecting user (owners and grants of the dumped server are not replayed), then refresh
    the planner's statistics (a dump carries none). ``replace``: drop what the database
    holds first."""
    require_postgresql(database)
    arguments = [
        "--no-owner",
        "--no-privileges",
        "--exit-on-error",
        "--single-transaction",
        "--no-password",
        f"--dbname={_conninfo(database)}",
    ]
    if replace:
        arguments[:0] = ["--clean", "--if-exists"]
    _run("pg_restore", [*arguments, str(dump)], database, stdout=subprocess.DEVNULL)
    with _connect(database, autocommit=True) as connection:
        connection.execute("ANALYZE")

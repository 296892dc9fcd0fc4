"""Backups that restore (issue 37, item 3): ``backup_database`` dumps the database of a running
instance under write load, ``restore_database`` restores it into a fresh database, and an
instance started on the restored database answers as the original did when the dump was taken
(``ctxstudio.backups``; docs/operations.md "Backups"). PostgreSQL only.
"""

import io
import json
import secrets
import stat
import threading
import time
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
import yaml
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command
from django.db import connection, connections
from django.test import Client

from ctxstudio.backups import BackupError, client_program
from profiles.import_export.imports import workspace_import
from profiles.workspace.keys import token_replace
from resolver.compiled import compile_workspace
from tests.ctxstudio.test_production import run_manage
from tests.profiles.conftest import CASE_01

LOAD = "load"


@pytest.fixture
def postgresql():
    if connection.vendor != "postgresql":
        pytest.skip(
            "backups are PostgreSQL's pg_dump and pg_restore: run with "
            "DATABASE_URL=postgres://… (CI's REQUIRE_POSTGRES=1 run does)"
        )
    for program in ("pg_dump", "pg_restore"):
        client_program(program)  # fails with what to install when missing


@pytest.fixture
def restored_url(postgresql):
    """The URL of a database that does not exist yet, dropped after the test."""
    source = settings.DATABASES["default"]
    name = f"{source['NAME'].removeprefix('test_')}_restored_{secrets.token_hex(4)}"
    credentials = quote(source.get("USER") or "", safe="")
    if source.get("PASSWORD"):
        credentials += ":" + quote(source["PASSWORD"], safe="")
    host = source.get("HOST") or "localhost"
    yield f"postgres://{credentials}@{host}:{source.get('PORT') or 5432}/{name}"
    with psycopg.connect(
        dbname="postgres",
        host=source.get("HOST") or None,
        port=source.get("PORT") or None,
        user=source.get("USER") or None,
        password=source.get("PASSWORD") or None,
        autocommit=True,
    ) as maintenance:
        maintenance.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class WriteLoad(threading.Thread):
    """Add items to the load layer through the API, with increasing sequence numbers, each
    followed by a resolve (which writes a decision log row), until stopped."""

    def __init__(self, key: str, request: dict):
        super().__init__(daemon=True)
        self.key, self.request = key, request
        self.written = 0
        self.failures: list[str] = []
        self.stopping = threading.Event()

    def run(self):
        client = Client(HTTP_AUTHORIZATION=f"Bearer {self.key}")
        try:
            while not self.stopping.is_set() and self.written < 500:
                number = self.written + 1
                created = client.post(
                    f"/api/v1/layers/{LOAD}/items/",
                    {"path": f"{LOAD}/{number:05d}.md", "body": f"Load item {number}."},
                    content_type="application/json",
                )
                if created.status_code != 201:
                    self.failures.append(f"create {number}: {created.status_code}")
                    return
                self.written = number
                resolved = client.post(
                    "/api/v1/resolve", self.request, content_type="application/json"
                )
                if resolved.status_code != 200:
                    self.failures.append(f"resolve {number}: {resolved.status_code}")
        finally:
            connections.close_all()

    def wait_for(self, written: int) -> None:
        deadline = time.monotonic() + 30
        while self.written < written and not self.failures and self.is_alive():
            assert time.monotonic() < deadline, f"the load wrote {self.written} items"
            time.sleep(0.02)


def restored_instance(url: str, texts: Path, key: str, request: dict) -> dict:
    """Start an instance on the restored database and return what it answered
    (``tests.ctxstudio.restored_instance``)."""
    done = run_manage(
        "shell",
        "-c",
        "from tests.ctxstudio.restored_instance import main; main()",
        DATABASE_URL=url,
        MATERIAL_TEXTS_DIR=str(texts),
        MAPPED_TEXTS_MIN_ITEMS="1",
        DECISION_LOG_ASYNC="false",
        RESTORED_KEY=key,
        RESTORED_REQUEST=json.dumps(request),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def exported(**env) -> dict:
    """The workspace export (JSON) of this database, or of another with ``DATABASE_URL``."""
    if not env:
        buffer = io.StringIO()
        call_command("export_workspace", format="json", stdout=buffer)
        return json.loads(buffer.getvalue())
    done = run_manage("export_workspace", "--format", "json", **env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def load_paths(document: dict) -> list[str]:
    layer = next(layer for layer in document["layers"] if layer["key"] == LOAD)
    return [item["path"] for item in layer["items"]]


def restricted(document: dict, paths: list[str]) -> dict:
    """``document`` with the load layer holding only ``paths``."""
    for layer in document["layers"]:
        if layer["key"] == LOAD:
            layer["items"] = [item for item in layer["items"] if item["path"] in paths]
    return document


@pytest.mark.django_db(transaction=True)
def test_backup_under_write_load__restored_into_a_fresh_database__answers_as_at_the_dump(
    restored_url, tmp_path
):
    # Given a workspace with an extra layer the load writes to, and an editor's API key
    case = yaml.safe_load(CASE_01.read_text(encoding="utf-8"))
    case["workspace"]["layers"].append({"key": LOAD, "name": "Load", "items": []})
    workspace_import(document=case["workspace"], mode="replace")
    editor = User.objects.create_user("editor", password="editor-pass-123")
    editor.groups.add(Group.objects.get_or_create(name="editors")[0])
    _, key = token_replace(user=editor)
    request = case["request"]
    # When the database is dumped while the load writes
    load = WriteLoad(key, request)
    load.start()
    try:
        load.wait_for(5)
        before = load.written
        backup = tmp_path / "ctxstudio.dump"
        call_command("backup_database", output=str(backup), stdout=io.StringIO())
        after = load.written
        load.wait_for(after + 3)
    finally:
        load.stopping.set()
        load.join(30)
    assert load.failures == []
    source = exported()
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600

    # ... and restored into a new database
    call_command(
        "restore_database", input=str(backup), database_url=restored_url, stdout=io.StringIO()
    )

    # Then its export is the source's, up to the items committed when the dump began
    restored = exported(DATABASE_URL=restored_url)
    seen = load_paths(restored)
    # (one request at a time: at most one item committed and not yet counted in ``after``)
    assert before <= len(seen) <= after + 1
    assert load.written > after  # the load went on past the dump
    assert seen == [f"{LOAD}/{number:05d}.md" for number in range(1, len(seen) + 1)]
    assert restored == restricted(source, seen)
    # ... its key resolves as the engine resolves that state, the held texts rebuilt in an
    # empty texts folder
    expected = compile_workspace(restored).resolve_json(request).data.decode()
    texts = tmp_path / "texts"
    first = restored_instance(restored_url, texts, key, request)
    assert first["status"] == 200
    assert first["answer"] == expected
    assert first["texts_built"] >= 1
    files = sorted(texts.glob("*/*.texts"))
    assert files
    # ... the decision log and the activity log came along, consistent with the items
    assert first["decision_log"] >= before
    assert first["item_creations"] == first["load_items"] == len(seen)

    # When the instance starts again on a texts folder holding files it did not write
    for path in files:
        path.write_bytes(b"CTXTEXT2" + b"foreign" * 50)
    second = restored_instance(restored_url, texts, key, request)

    # Then they are verified, rebuilt and not served
    assert second["status"] == 200
    assert second["answer"] == expected
    assert "rebuilt" in second["texts_rebuilt"]
    assert all(b"foreign" not in path.read_bytes() for path in files)


@pytest.mark.django_db
def test_restore__into_a_database_that_holds_tables__refused_unless_forced_and_confirmed(
    restored_url, tmp_path, monkeypatch
):
    backup = tmp_path / "small.dump"
    call_command("backup_database", output=str(backup), stdout=io.StringIO())
    arguments = {"input": str(backup), "database_url": restored_url, "stdout": io.StringIO()}
    call_command("restore_database", **arguments)  # created, then restored

    with pytest.raises(CommandError, match="is not empty"):
        call_command("restore_database", **arguments)
    monkeypatch.setattr("builtins.input", lambda prompt: "another-name")
    with pytest.raises(CommandError, match="not confirmed"):
        call_command("restore_database", force=True, **arguments)
    monkeypatch.setattr("builtins.input", lambda prompt: restored_url.rsplit("/", 1)[1])
    call_command("restore_database", force=True, **arguments)


@pytest.mark.django_db
def test_backup__sqlite__refused_with_what_to_do_instead(tmp_path):
    if connection.vendor != "sqlite":
        pytest.skip("the SQLite run's answer")

    with pytest.raises(CommandError, match=r"PostgreSQL's \(pg_dump\).*sqlite3's \.backup"):
        call_command("backup_database", output=str(tmp_path / "x.dump"))

    assert not list(tmp_path.iterdir())


def test_client_program__nowhere__says_what_to_install(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)

    with pytest.raises(BackupError, match=r"not found.*postgresql-client"):
        client_program("pg_dump")

"""Restore a backup of ``backup_database`` into a fresh PostgreSQL database."""

import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from ctxstudio.backups import (
    BackupError,
    database_create,
    database_exists,
    database_of_url,
    database_relations,
    database_restore,
)


class Command(BaseCommand):
    help = (
        "Restore a backup_database file into the database of --database-url (created when "
        "missing). A database that already holds tables is refused unless --force, which "
        "replaces its content after you type its name."
    )

    def add_arguments(self, parser):
        parser.add_argument("--input", required=True, help="a file written by backup_database")
        parser.add_argument(
            "--database-url", required=True, help="postgres://user@host:5432/name to restore into"
        )
        parser.add_argument(
            "--force", action="store_true", help="replace what a non-empty database holds"
        )
        parser.add_argument(
            "--no-input",
            "--noinput",
            action="store_false",
            dest="interactive",
            help="with --force: do not ask to type the database's name",
        )

    def handle(self, *args, **options):
        dump = Path(options["input"])
        if not dump.is_file():
            raise CommandError(f"{dump}: no such file")
        started = time.monotonic()
        try:
            database = database_of_url(options["database_url"])
            name = database["NAME"]
            replace = False
            if not database_exists(database):
                database_create(database)
                self.stdout.write(f"Created database {name}.")
            elif database_relations(database):
                if not options["force"]:
                    raise CommandError(
                        f"database {name} is not empty: restore into a new database, or "
                        "replace its content with --force"
                    )
                self._confirm(name, database.get("HOST") or "localhost", options["interactive"])
                replace = True
            database_restore(database, dump, replace=replace)
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"Restored {dump} into database {name} in {time.monotonic() - started:.1f} s. "
            "Next: point DATABASE_URL at it, run migrate, start the service (docs/operations.md)."
        )

    def _confirm(self, name: str, host: str, interactive: bool) -> None:
        if not interactive:
            return
        answer = input(
            f"Everything in database {name} on {host} will be replaced by the backup. "
            "Type the database's name to go on: "
        )
        if answer.strip() != name:
            raise CommandError("not confirmed: nothing was changed")

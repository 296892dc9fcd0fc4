"""Dump the service's PostgreSQL database to a file (``pg_dump``, custom format)."""

import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ctxstudio.backups import BackupError, database_dump


class Command(BaseCommand):
    help = (
        "Write a backup of the database (pg_dump's custom format, a file only its owner may "
        "read) while the service runs; restore it with restore_database."
    )

    def add_arguments(self, parser):
        parser.add_argument("--output", required=True, help="the file to write (replaced)")

    def handle(self, *args, **options):
        database = settings.DATABASES["default"]
        started = time.monotonic()
        try:
            size = database_dump(database, options["output"])
        except (BackupError, OSError) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"Wrote {options['output']}: database {database['NAME']}, {size:,} bytes, "
            f"in {time.monotonic() - started:.1f} s."
        )

"""Delete decision log entries older than the retention period."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from profiles.resolution.decision_log import decision_log_prune


class Command(BaseCommand):
    help = "Delete decision log entries older than DECISION_LOG_RETENTION_DAYS (or --days)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--days",
            type=int,
            default=None,
            help=f"keep this many days (default {settings.DECISION_LOG_RETENTION_DAYS})",
        )
        parser.add_argument("--dry-run", action="store_true", help="count, delete nothing")

    def handle(self, *args, days=None, dry_run=False, **options):
        if days is not None and days < 0:
            raise CommandError("--days must be 0 or more")
        count = decision_log_prune(days=days, dry_run=dry_run)
        verb = "would delete" if dry_run else "deleted"
        self.stdout.write(f"{verb} {count} decision log entries")

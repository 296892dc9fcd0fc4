"""Run the task worker (django-tasks-db's ``db_worker``), failing abandoned imports and
enqueueing overdue webhook deliveries again first."""

from django_tasks_db.management.commands import db_worker

from profiles.import_export.jobs import import_jobs_fail_stopped
from profiles.notifications.delivery import webhook_deliveries_prune, webhook_deliveries_resume


class Command(db_worker.Command):
    help = (
        "Run a database background worker. It first fails the import jobs left running by "
        "a worker that stopped (killed, out of memory): nothing of them was written, and "
        "their uploads are freed. Webhook deliveries overdue by more than five minutes "
        "(their task lost) are enqueued again, and finished ones past "
        "WEBHOOKS_LOG_RETENTION_DAYS deleted."
    )

    def handle(self, *args, **options):
        failed = import_jobs_fail_stopped(unrecorded=True)
        if failed and options["verbosity"]:
            self.stdout.write(f"Failed {failed} import job(s) whose worker had stopped.")
        webhook_deliveries_prune()
        resumed = webhook_deliveries_resume()
        if resumed and options["verbosity"]:
            self.stdout.write(f"Enqueued {resumed} overdue webhook delivery(ies) again.")
        super().handle(*args, **options)

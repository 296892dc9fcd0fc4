"""Run a task worker (django-tasks-db's ``db_worker``) with a heartbeat, doing its queues'
chores first: failing abandoned imports, enqueueing overdue webhook deliveries again."""

import contextlib
import os

from django.conf import settings
from django.tasks import DEFAULT_TASK_QUEUE_NAME
from django.utils.autoreload import DJANGO_AUTORELOAD_ENV
from django_tasks_db.management.commands import db_worker

from profiles.import_export.job_workers import import_jobs_fail_stopped
from profiles.notifications.delivery import webhook_deliveries_prune, webhook_deliveries_resume
from profiles.workspace.task_workers import Heartbeat, task_workers_prune


class Command(db_worker.Command):
    help = (
        "Run a database background worker on --queue-name (default: 'default', the imports, "
        "bulk jobs and scheduled applies; 'webhooks': the deliveries; run one of each). It "
        "writes a heartbeat the readiness door (/readyz) reads. A worker of the default "
        "queue first fails the import jobs left running by a worker that stopped (killed, "
        "out of memory): nothing of them was written, and their uploads are freed. A worker "
        "of the webhooks queue first enqueues again the deliveries overdue by more than five "
        "minutes (their task lost) and deletes finished ones past WEBHOOKS_LOG_RETENTION_DAYS."
    )

    def handle(self, *args, **options):
        queues = {name.strip() for name in options["queue_name"].split(",")}
        every = "*" in queues
        if every or DEFAULT_TASK_QUEUE_NAME in queues:
            failed = import_jobs_fail_stopped(unrecorded=True)
            if failed and options["verbosity"]:
                self.stdout.write(f"Failed {failed} import job(s) whose worker had stopped.")
        if every or settings.WEBHOOKS_TASK_QUEUE in queues:
            webhook_deliveries_prune()
            resumed = webhook_deliveries_resume()
            if resumed and options["verbosity"]:
                self.stdout.write(f"Enqueued {resumed} overdue webhook delivery(ies) again.")
        task_workers_prune()
        # With --reload (DEBUG's default) this process only watches the code and restarts
        # a child that runs the tasks: the child writes the heartbeat.
        watching = (
            options["reload"]
            and not options["batch"]
            and os.environ.get(DJANGO_AUTORELOAD_ENV) != "true"
        )
        beating = (
            contextlib.nullcontext()
            if watching
            else Heartbeat(worker_id=options["worker_id"], queues=options["queue_name"])
        )
        with beating:
            super().handle(*args, **options)

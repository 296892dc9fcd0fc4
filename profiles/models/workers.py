"""Task workers as the web processes see them: one row per running ``db_worker``."""

from django.db import models


class TaskWorker(models.Model):
    """A task worker's heartbeat: written by the worker every few seconds while it runs
    (``profiles.workspace.task_workers``), read by the readiness door (``/readyz``), which
    cannot see the worker's process from a web server."""

    worker_id = models.CharField(max_length=64, unique=True)
    # The queues it serves, comma-separated as given to db_worker ("*": every queue).
    queues = models.CharField(max_length=200)
    host = models.CharField(max_length=255, blank=True, default="")
    pid = models.IntegerField(default=0)
    started_at = models.DateTimeField()
    seen_at = models.DateTimeField(db_index=True)

    class Meta:
        verbose_name = "task worker"

    def __str__(self) -> str:
        return f"task worker {self.worker_id} ({self.queues})"

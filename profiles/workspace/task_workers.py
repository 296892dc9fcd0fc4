"""Task workers and their queues as a web process sees them (issue 33, items 12 and 13).

Background work runs in ``manage.py db_worker`` processes (django-tasks-db) on two queues,
``TASK_QUEUES``: ``default`` (workspace imports, bulk ingest jobs, scheduled applies, stored
terms recomputed) and ``WEBHOOKS_TASK_QUEUE`` (webhook deliveries), each served by a worker
of its own, so that a receiver that never answers delays nothing but other deliveries.

A web process cannot see a worker's process, so each worker writes a heartbeat
(``TaskWorker``, every ``TASK_WORKER_HEARTBEAT_SECONDS``) and the readiness door asks two
questions of the database: is every queue served by a worker seen within
``READY_TASK_WORKER_SECONDS``, and how long has each queue's oldest due task waited.
"""

import logging
import os
import socket
import threading
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import Count, Min, Q
from django.tasks import TaskResultStatus, task_backends
from django.utils import timezone
from django_tasks_db.backend import DatabaseBackend
from django_tasks_db.models import DBTaskResult, get_date_max

from profiles.models import TaskWorker

logger = logging.getLogger(__name__)

#: A heartbeat row not written for this long is removed when a worker starts.
FORGOTTEN_AFTER = timedelta(days=1)


def task_queues() -> list[str]:
    """Return the queues the task workers must serve."""
    return list(settings.TASK_QUEUES)


def tasks_run_by_workers() -> bool:
    """Return whether tasks wait for a ``db_worker`` (False: the backend runs them itself,
    as the immediate backend of the tests does)."""
    return isinstance(task_backends["default"], DatabaseBackend)


def task_worker_beat(*, worker_id: str, queues: str, started_at: datetime) -> None:
    """Record that the worker ``worker_id``, serving ``queues``, is alive now."""
    TaskWorker.objects.update_or_create(
        worker_id=worker_id,
        defaults={
            "queues": queues[:200],
            "host": socket.gethostname()[:255],
            "pid": os.getpid(),
            "seen_at": timezone.now(),
        },
        create_defaults={
            "queues": queues[:200],
            "host": socket.gethostname()[:255],
            "pid": os.getpid(),
            "seen_at": timezone.now(),
            "started_at": started_at,
        },
    )


def task_worker_gone(*, worker_id: str) -> None:
    """Forget a worker that stops (its heartbeat would otherwise count until it is stale)."""
    TaskWorker.objects.filter(worker_id=worker_id).delete()


def task_workers_prune() -> int:
    """Delete the heartbeats of workers not seen for ``FORGOTTEN_AFTER`` (killed ones)."""
    deleted, _ = TaskWorker.objects.filter(seen_at__lt=timezone.now() - FORGOTTEN_AFTER).delete()
    return deleted


def task_queues_unserved(*, within: timedelta) -> list[str]:
    """Return the queues no worker seen within ``within`` serves (one query)."""
    seen = TaskWorker.objects.filter(seen_at__gte=timezone.now() - within).values_list(
        "queues", flat=True
    )
    served = {name.strip() for queues in seen for name in queues.split(",")}
    if "*" in served:
        return []
    return [queue for queue in task_queues() if queue not in served]


def task_queue_waits() -> dict[str, float]:
    """Return, for each queue with a due task, how long (seconds) its oldest due task has
    waited: since it was enqueued, or since it became due when it was deferred."""
    now = timezone.now()
    waits: dict[str, float] = {}
    ready = DBTaskResult.objects.ready().filter(queue_name__in=task_queues())
    undeferred = ready.filter(run_after=get_date_max()).values_list("queue_name", "enqueued_at")
    deferred = ready.exclude(run_after=get_date_max()).values_list("queue_name", "run_after")
    for queue, since in [*undeferred.order_by("enqueued_at"), *deferred.order_by("run_after")]:
        waits[queue] = max(waits.get(queue, 0.0), (now - since).total_seconds())
    return waits


def task_queue_depths() -> list[tuple[str, str, int, float]]:
    """Return, per queue and kind of task (its function's name) with tasks waiting, how many
    wait (due or deferred) and how long the oldest due one has waited (seconds, 0 when none
    is due): one grouped query, whatever the number of tasks (the metrics' collector)."""
    now, never = timezone.now(), get_date_max()
    rows = (
        DBTaskResult.objects.filter(status=TaskResultStatus.READY)
        .values_list("queue_name", "task_path")
        .annotate(
            depth=Count("id"),
            undeferred=Min("enqueued_at", filter=Q(run_after=never)),
            deferred=Min("run_after", filter=Q(run_after__lte=now)),
        )
        .order_by()
    )
    found: dict[tuple[str, str], list] = {}
    for queue, path, depth, undeferred, deferred in rows:
        since = min((at for at in (undeferred, deferred) if at is not None), default=now)
        kind = path.rpartition(".")[2]
        entry = found.setdefault((queue, kind), [0, 0.0])
        entry[0] += depth
        entry[1] = max(entry[1], (now - since).total_seconds())
    return [(queue, kind, depth, oldest) for (queue, kind), (depth, oldest) in found.items()]


class Heartbeat:
    """Write a worker's heartbeat now and every ``TASK_WORKER_HEARTBEAT_SECONDS`` from a
    thread of its own until the worker stops (``with Heartbeat(...):`` around its loop). A
    beat that fails (the database away a moment) is logged and tried again at the next."""

    def __init__(self, *, worker_id: str, queues: str):
        self.worker_id = worker_id
        self.queues = queues
        self.started_at = timezone.now()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="task-worker-heartbeat", daemon=True)

    def beat(self) -> None:
        try:
            task_worker_beat(
                worker_id=self.worker_id, queues=self.queues, started_at=self.started_at
            )
        except DatabaseError:
            logger.warning("task worker %s: heartbeat not written", self.worker_id, exc_info=True)

    def _run(self) -> None:
        interval = float(settings.TASK_WORKER_HEARTBEAT_SECONDS)
        try:
            while not self.stopped.wait(interval):
                self.beat()
        finally:
            connection.close()  # this thread's own

    def __enter__(self):
        self.beat()
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopped.set()
        self.thread.join(timeout=5)
        try:
            task_worker_gone(worker_id=self.worker_id)
        except DatabaseError:
            logger.warning("task worker %s: heartbeat not removed", self.worker_id)

"""The worker processes running jobs: who runs a job (``worker_identity``), whether that
process has ended (``worker_stopped``), and failing the jobs of a worker that died in the
middle (``import_jobs_fail_stopped``).

A worker that dies (``kill -9``, out of memory) writes nothing, since an import is one
transaction, but cannot record the outcome: a worker runs ``import_jobs_fail_stopped`` as it
starts, and polling a job checks it (``profiles.import_export.job_status``), which frees the
upload.
"""

import logging
import os
import socket
from pathlib import Path

from django.db import transaction
from django.tasks import TaskResultStatus
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from profiles.import_export.job_runs import bulk_stop_error, job_announce_finished
from profiles.material.bulk_ingest import COUNTS as BULK_COUNTS
from profiles.models import ImportJob

# The import jobs' one logger, whichever of their modules logs (the name operators filter on).
logger = logging.getLogger("profiles.import_export.jobs")

WORKER_STOPPED_ERROR = {
    "code": "IMPORT_WORKER_STOPPED",
    "message": "the worker running this import stopped before it finished; nothing was "
    "imported; upload the file again",
    "path": "",
}


class ImportWorkerStopped(Exception):
    """The worker process running an import job ended before the job did."""


def _process_start(pid: int) -> tuple[str, str] | None:
    """Return a process's state and start time (in clock ticks since boot) from /proc, or
    None where /proc does not tell (another system, or no such process)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return fields[0], fields[19]


def worker_identity(*, pid: int | None = None) -> str:
    """Return the process ``pid`` (this one by default) as a job records its worker:
    ``host:pid:start time``. The start time tells a process from a later one that got the
    same id."""
    pid = pid or os.getpid()
    state = _process_start(pid)
    return f"{socket.gethostname()}:{pid}:{state[1] if state else ''}"


def worker_stopped(identity: str) -> bool:
    """Return whether the worker process ``identity`` names has certainly ended.

    A worker on another host cannot be checked from here, nor one not named (``""``): they
    count as alive.
    """
    host, _, rest = identity.partition(":")
    pid_text, _, started = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # it exists, run by another user
    state = _process_start(pid)
    if state is None:
        return False
    process_state, process_started = state
    return process_state in ("Z", "X") or bool(started and process_started != started)


def import_jobs_fail_stopped(*, job_ids=None, unrecorded: bool = False) -> int:
    """Fail the running import jobs (of ``job_ids``, or all) whose worker has stopped.

    Their upload is freed and their task marked failed; nothing else changes (the import's
    transaction died with the worker). ``unrecorded`` also fails the running jobs that name
    no worker, started by a version that did not record it (a worker does so as it starts).
    Return how many jobs were failed.
    """
    running = ImportJob.objects.filter(status=ImportJob.Status.RUNNING)
    if job_ids is not None:
        running = running.filter(pk__in=job_ids)
    stopped = [
        (pk, task_id)
        for pk, task_id, worker in running.values_list("pk", "task_id", "worker")
        if worker_stopped(worker) or (unrecorded and not worker)
    ]
    failed = 0
    for pk, task_id in stopped:
        now = timezone.now()
        with transaction.atomic():
            # Still running: a job another process failed meanwhile is left as it is.
            job = ImportJob.objects.defer("source").get(pk=pk)
            error = WORKER_STOPPED_ERROR
            if job.kind == ImportJob.Kind.BULK:
                done = sum((job.summary or {}).get(name, 0) for name in BULK_COUNTS)
                message = "the worker running this bulk ingest stopped before it finished"
                error = bulk_stop_error("BULK_INGEST_WORKER_STOPPED", message, done)
            if not ImportJob.objects.filter(pk=pk, status=ImportJob.Status.RUNNING).update(
                status=ImportJob.Status.FAILED,
                phase="failed",
                error=error,
                finished_at=now,
                source="",
            ):
                continue
            failed += 1
            job_announce_finished(ImportJob.objects.defer("source").get(pk=pk))
            if task_id:
                DBTaskResult.objects.filter(id=task_id, finished_at=None).update(
                    status=TaskResultStatus.FAILED,
                    finished_at=now,
                    exception_class_path=f"{__name__}.{ImportWorkerStopped.__qualname__}",
                    traceback=WORKER_STOPPED_ERROR["message"],
                )
        logger.warning("import job %s failed: its worker stopped", pk)
    return failed

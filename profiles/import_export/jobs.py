"""Workspace imports and large bulk ingests as background jobs, with progress.

A large file takes longer to parse, check and write than a web worker may spend on a request,
so the API and the studio only store the upload as an ``ImportJob`` and enqueue a task of
Django's tasks framework (``django.tasks``); a worker (``manage.py db_worker`` of
django-tasks-db, started by ``make run`` and ``make serve``) runs it. The job row carries the
phase and progress, then the summary or the errors with their paths in the file; the API's job
URL and the studio's job page read it.

The import itself is the same service as everywhere
(``profiles.import_export.imports.workspace_import``): all or nothing, under the writers'
lock. ``layer`` imports one layer of the file (its fields and items), leaving every other
layer, consumer and profile as stored.

A job records the worker process running it (host, process id and start time). A worker
that dies in the middle (``kill -9``, out of memory) writes nothing, since the import is one
transaction, but cannot record the outcome: ``import_jobs_fail_stopped`` finds such jobs (a
worker runs it as it starts, and polling a job checks it) and fails them, freeing the upload
(``profiles.import_export.job_workers``).

Costs per user: a user has at most ``IMPORT_MAX_QUEUED_JOBS_PER_USER`` jobs not finished
(queued or running), holding at most ``IMPORT_MAX_QUEUED_BYTES_PER_USER`` bytes of uploads;
an upload beyond either is refused (``ImportQueueFull``, 429 at every door) and nothing is
stored. And users take turns: every job enqueues one task, but a task runs the job that is due
(``import_job_next``: the oldest queued job of the user whose last job started longest ago),
not necessarily the one it was enqueued for, so twenty uploads of one user delay another
user's import by at most the one job already running.

A **bulk ingest job** (``bulk_job_start``; ``POST /api/v1/layers/<key>/bulk?background=true``)
is the same kind of job for a batch of item operations larger than one request may write
(up to ``BULK_INGEST_JOB_MAX_LINES``). Every line is checked first, and a batch with a bad line
writes nothing, as a request's. Then the batch is written ``BULK_INGEST_MAX_LINES`` operations
at a time through the one bulk ingest service (``items_bulk_ingest``), each part its own
transaction: the writers' lock is never held for the whole batch, so the studio's edits go on
meanwhile, and the job's progress and summary grow part by part. A job that stops half way
(a worker killed, a part refused) says how many operations were applied; the batch is
idempotent by path, so sending it again finishes it and writes nothing twice.

This module is the queue: a job stored and enqueued, claimed by the task when it is due.
A claimed job runs in ``profiles.import_export.job_runs``; a client polling it reads it
through ``profiles.import_export.job_status``.
"""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Count, F, OuterRef, Subquery, Sum
from django.tasks import task
from django.utils import timezone

from profiles.import_export.documents import WorkspaceImportError
from profiles.import_export.imports import IMPORT_MODES
from profiles.import_export.job_runs import PHASE_READING, job_announce_finished, job_run_claimed
from profiles.import_export.job_workers import worker_identity
from profiles.models import ImportJob, key_validator
from resolver import ValidationIssue
from resolver.validation import KEY_RE

# Seconds a client refused for a full queue is told to wait (Retry-After): about the time a
# worker takes for an upload of a few megabytes.
IMPORT_QUEUE_RETRY_AFTER = 30


class ImportQueueFull(Exception):
    """The user's unfinished imports are at a per-user bound; nothing was stored."""

    code = "IMPORT_QUEUE_FULL"
    status_code = 429
    retry_after = IMPORT_QUEUE_RETRY_AFTER


def _queue_refusal(user, size: int) -> str | None:
    """Return why an upload of ``size`` bytes by ``user`` cannot be queued, None when it can.

    Counts the user's unfinished jobs (queued or running) and the bytes they hold.
    """
    unfinished = ImportJob.objects.filter(
        user=user, status__in=(ImportJob.Status.QUEUED, ImportJob.Status.RUNNING)
    ).aggregate(jobs=Count("pk"), bytes=Sum("source_bytes"))
    jobs, held = unfinished["jobs"], unfinished["bytes"] or 0
    max_jobs = settings.IMPORT_MAX_QUEUED_JOBS_PER_USER
    max_bytes = settings.IMPORT_MAX_QUEUED_BYTES_PER_USER
    if jobs >= max_jobs:
        return (
            f"you have {jobs} imports waiting or running, the most one user may have "
            f"({max_jobs}): wait until one finishes, then upload again; nothing was imported"
        )
    if held + size > max_bytes:
        return (
            f"your imports waiting or running hold {held:,} bytes; with this upload "
            f"({size:,} bytes) they would pass the {max_bytes:,} bytes one user may have "
            "queued: wait until one finishes, then upload again; nothing was imported"
        )
    return None


def import_layer_refusal(layer: str | None) -> str | None:
    """Return why ``layer`` cannot name the one layer of an import, None when it can (or is
    not given): it must be a layer key, as everywhere else (``resolver.validation.KEY_RE``)."""
    if layer and not KEY_RE.fullmatch(layer):
        return key_validator.message.removesuffix(".")
    return None


def bulk_job_start(*, layer: str, text: str, ndjson: bool, user=None, key=None) -> ImportJob:
    """Store a bulk ingest batch for ``layer`` (a key) as a queued job, enqueue its task and
    return the job. The batch is read and checked by the job, not here.

    Raises ``ImportQueueFull`` (nothing stored) as ``import_job_start`` does: a user's
    unfinished imports and bulk jobs share the same bounds. ``key``: the API key of the
    request (None: a session), checked again when the job starts.
    """
    if "\x00" in text:
        return _refused_job(
            text=text, mode="merge", layer=layer, user=user, kind=ImportJob.Kind.BULK
        )
    return _enqueue(
        text=text,
        user=user,
        key=key,
        kind=ImportJob.Kind.BULK,
        layer=layer,
        ndjson=ndjson,
        mode="merge",
    )


def import_job_start(
    *, text: str, mode: str = "merge", layer: str | None = None, user=None, key=None
):
    """Store the upload as a queued ImportJob, enqueue its task and return the job.

    Raises ValueError for an unknown mode or a ``layer`` that is not a layer key, and
    ``ImportQueueFull`` (nothing stored) when the user's unfinished imports are at a bound.
    The job may already be finished when this returns (the immediate task backend runs it at
    once). ``key``: the API key of the request (None: a session), checked again when the job
    starts, as its user is (``job_start_refusal``).
    """
    if mode not in IMPORT_MODES:
        raise ValueError(f"unknown import mode {mode!r} (use merge or replace)")
    refusal = import_layer_refusal(layer)
    if refusal is not None:
        raise ValueError(f"layer: {refusal}")
    if "\x00" in text:
        return _refused_job(text=text, mode=mode, layer=layer, user=user)
    return _enqueue(text=text, user=user, key=key, mode=mode, layer=layer or "")


def _enqueue(*, text: str, user, key=None, **fields) -> ImportJob:
    """Store a job (its ``fields``) with its source, who queued it and with which key, within
    the user's bounds, and enqueue the task that runs the job due."""
    user = user if getattr(user, "pk", None) else None
    if user is not None:
        fields["username"] = user.get_username()
        fields["api_key"] = key if getattr(key, "pk", None) else None
    size = len(text.encode("utf-8"))
    with transaction.atomic():
        _compress_text_fast()
        if user is not None:
            # One user's uploads are counted one after another (a row lock on PostgreSQL;
            # SQLite runs one write transaction at a time), so two at once cannot both pass.
            get_user_model().objects.select_for_update().filter(pk=user.pk).first()
            refusal = _queue_refusal(user, size)
            if refusal is not None:
                raise ImportQueueFull(refusal)
        job = ImportJob.objects.create(user=user, source=text, source_bytes=size, **fields)
    result = workspace_import_task.enqueue(str(job.pk))
    ImportJob.objects.filter(pk=job.pk, task_id="").update(task_id=str(result.id))
    # Everything but the source, which is what the caller just sent (and may be megabytes).
    job.refresh_from_db(fields=[f.attname for f in job._meta.concrete_fields if f.name != "source"])
    return job


def _compress_text_fast() -> None:
    """Store this transaction's large texts with lz4 rather than PostgreSQL's default pglz
    where the server has it: a 37 MB upload is stored in under half the time."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config(name, 'lz4', true) FROM pg_settings "
            "WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)"
        )


def _refused_job(
    *, text: str, mode: str, layer: str | None, user, kind: str = ImportJob.Kind.IMPORT
) -> ImportJob:
    """Record an upload with a NUL character as a job that failed at once.

    No YAML or JSON document holds a raw NUL, and PostgreSQL's text cannot store one, so the
    source is never stored; the error gives the first NUL's line and column.
    """
    offset = text.index("\0")
    line = text.count("\n", 0, offset) + 1
    column = offset - text.rfind("\n", 0, offset)
    message = "the file contains a NUL character, which YAML and JSON do not allow"
    issue = ValidationIssue("", message, line=line, column=column)
    now = timezone.now()
    job = ImportJob.objects.create(
        user=user if getattr(user, "pk", None) else None,
        kind=kind,
        mode=mode,
        layer=layer or "",
        source_bytes=len(text.encode("utf-8", "surrogatepass")),
        status=ImportJob.Status.FAILED,
        phase="failed",
        error=WorkspaceImportError([issue]).as_dict()["error"],
        started_at=now,
        finished_at=now,
    )
    job_announce_finished(job)
    return job


@task(takes_context=True)
def workspace_import_task(context, job_id: str) -> str:
    """Run the import job that is due (the worker's entry point); return its final status.

    ``job_id`` is the job this task was enqueued for; the task runs whichever queued job is
    due (``import_job_next``), so users take turns. Each job enqueues one task and each task
    runs at most one job, so every queued job is run.
    """
    job = import_job_run_next(task_id=str(context.task_result.id))
    return "nothing queued" if job is None else job.status


def import_job_next() -> ImportJob | None:
    """Return the queued job due next, without its source: the oldest queued job of the user
    whose last job started longest ago (a user with no job started yet first)."""
    last_started = (
        ImportJob.objects.filter(user=OuterRef("user"), started_at__isnull=False)
        .order_by("-started_at")
        .values("started_at")[:1]
    )
    return (
        ImportJob.objects.defer("source")
        .filter(status=ImportJob.Status.QUEUED)
        .annotate(user_last_started=Subquery(last_started))
        .order_by(F("user_last_started").asc(nulls_first=True), "created_at", "pk")
        .first()
    )


def import_job_run_next(*, task_id: str = "") -> ImportJob | None:
    """Claim the queued job due next and run it to the end; None when none is queued.

    A job another worker claimed first is passed over for the next one due. The claimed job
    records ``task_id``, the task running it (its result is failed if the worker dies).
    """
    while (job := import_job_next()) is not None:
        if _claim(job, task_id=task_id):
            job.refresh_from_db()
            return job_run_claimed(job)
    return None


def _claim(job: ImportJob, *, task_id: str) -> bool:
    """Mark a queued job running in this worker; False when it is no longer queued."""
    fields = {
        "status": ImportJob.Status.RUNNING,
        "phase": PHASE_READING[0],
        "progress": PHASE_READING[1],
        "started_at": timezone.now(),
        "worker": worker_identity(),
    }
    if task_id:
        fields["task_id"] = task_id
    return bool(
        ImportJob.objects.filter(pk=job.pk, status=ImportJob.Status.QUEUED).update(**fields)
    )


def import_job_run(*, job_id: str) -> ImportJob:
    """Run this queued import job to the end and record its outcome on the job row (a job
    no longer queued is returned as it is)."""
    job = ImportJob.objects.get(pk=job_id)
    if job.status != ImportJob.Status.QUEUED or not _claim(job, task_id=""):
        return job
    job.refresh_from_db()
    return job_run_claimed(job)

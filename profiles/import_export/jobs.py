"""Workspace imports and large bulk ingests as background jobs, with progress.

A large file takes longer to parse, check and write than a web worker may spend on a request,
so the API and the studio only store the upload as an ``ImportJob`` and enqueue a task of
Django's tasks framework (``django.tasks``); a worker (``manage.py db_worker`` of
django-tasks-db, started by ``make run`` and ``make serve``) runs it. The job row carries the
phase and progress, then the summary or the errors with their paths in the file; the API's job
URL and the studio's job page read it.

The import itself is the same service as everywhere
(``profiles.import_export.workspace.workspace_import``): all or nothing, under the writers'
lock. ``layer`` imports one layer of the file (its fields and items), leaving every other
layer, consumer and profile as stored.

A job records the worker process running it (host, process id and start time). A worker
that dies in the middle (``kill -9``, out of memory) writes nothing, since the import is one
transaction, but cannot record the outcome: ``import_jobs_fail_stopped`` finds such jobs (a
worker runs it as it starts, and polling a job checks it) and fails them, freeing the upload.

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
"""

import logging
import os
import re
import socket
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.db.models import Count, F, OuterRef, Subquery, Sum
from django.tasks import TaskResultStatus, task
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from profiles.import_export.export_stream import workspace_document_read
from profiles.import_export.workspace import (
    IMPORT_MODES,
    ImportSummary,
    WorkspaceImportError,
    workspace_import,
    workspace_parse,
)
from profiles.material.bulk_ingest import (
    COUNTS as BULK_COUNTS,
)
from profiles.material.bulk_ingest import (
    BatchInvalid,
    BatchNotReadable,
    BatchTooLarge,
    IngestStopped,
    IngestSummary,
    bulk_ingest_parse,
    items_bulk_ingest_in_parts,
)
from profiles.models import ImportJob, Layer, key_validator
from profiles.notifications.webhooks import import_job_event, webhook_event_emit
from profiles.versioning.environments import ChangeRequestRequired
from profiles.workspace.concurrency import WriteConflict, workspace_write
from profiles.workspace.mappers import canonical_string
from profiles.workspace.origin import BULK as BULK_ORIGIN
from profiles.workspace.permissions import IMPORT_EXPORT, WRITE_MATERIAL, background_refusal
from profiles.workspace.validation import issues_in_text
from resolver import ValidationIssue
from resolver.validation import KEY_RE

logger = logging.getLogger(__name__)

# (phase, progress in percent) as the job goes.
# What a job does in its user's name, as the doors that queue it require (checked again when
# it starts).
JOB_CAPABILITIES = {
    ImportJob.Kind.IMPORT: (IMPORT_EXPORT,),
    ImportJob.Kind.BULK: (WRITE_MATERIAL,),
}
PHASE_READING = ("reading the file", 5)
PHASE_WRITING = ("checking and writing", 40)
PHASE_DONE = ("done", 100)
# A bulk ingest job: every line checked, then written part by part (progress 10 -> 100).
PHASE_CHECKING = ("checking every line", 5)
BULK_WRITING_FROM = 10

WORKER_STOPPED_ERROR = {
    "code": "IMPORT_WORKER_STOPPED",
    "message": "the worker running this import stopped before it finished; nothing was "
    "imported; upload the file again",
    "path": "",
}


class ImportWorkerStopped(Exception):
    """The worker process running an import job ended before the job did."""


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
    _announce_finished(job)
    return job


def import_job_get(*, job_id, kind: str = ImportJob.Kind.IMPORT) -> ImportJob | None:
    """Return the job of this ``kind`` (an import by default) with this id (None when there
    is none), without its source: a client polls the job while it runs, and the source may
    be megabytes.

    A running job whose worker has stopped is failed first, so the client stops polling.
    """
    job = ImportJob.objects.defer("source").filter(pk=job_id, kind=kind).first()
    if job is not None and job.status == ImportJob.Status.RUNNING and worker_stopped(job.worker):
        import_jobs_fail_stopped(job_ids=[job.pk])
        job.refresh_from_db(fields=["status", "phase", "error", "summary", "finished_at"])
    return job


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
                error = _bulk_stop("BULK_INGEST_WORKER_STOPPED", message, done)
            if not ImportJob.objects.filter(pk=pk, status=ImportJob.Status.RUNNING).update(
                status=ImportJob.Status.FAILED,
                phase="failed",
                error=error,
                finished_at=now,
                source="",
            ):
                continue
            failed += 1
            _announce_finished(ImportJob.objects.defer("source").get(pk=pk))
            if task_id:
                DBTaskResult.objects.filter(id=task_id, finished_at=None).update(
                    status=TaskResultStatus.FAILED,
                    finished_at=now,
                    exception_class_path=f"{__name__}.{ImportWorkerStopped.__qualname__}",
                    traceback=WORKER_STOPPED_ERROR["message"],
                )
        logger.warning("import job %s failed: its worker stopped", pk)
    return failed


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
            return _run(job)
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
    return _run(job)


def job_start_refusal(job: ImportJob) -> str | None:
    """Return why the job may not run now (its user or key may no longer do what it does),
    None when it may (``profiles.workspace.permissions.background_refusal``)."""
    return background_refusal(
        job.user,
        job.api_key,
        capabilities=JOB_CAPABILITIES[job.kind],
        username=job.username,
    )


def _run(job: ImportJob) -> ImportJob:
    """Run a claimed job (status running) and record its outcome: first whether its user
    and key may still run it (a scheduled apply checks its user the same way)."""
    refusal = job_start_refusal(job)
    if refusal is not None:
        _finish(
            job,
            ImportJob.Status.FAILED,
            error={
                "code": "PERMISSION_DENIED",
                "message": f"the job did not run and wrote nothing: {refusal}",
                "path": "",
            },
        )
        return job
    if job.kind == ImportJob.Kind.BULK:
        return _run_bulk(job)
    job_id = job.pk
    try:
        document = workspace_parse(text=job.source)
        _advance(job, PHASE_WRITING)
        summary = _import(document, mode=job.mode, layer=job.layer or None, user=job.user)
    except WorkspaceImportError as exc:
        # Each issue names its entry and its line in the file (the source is read again).
        located = WorkspaceImportError(issues_in_text(exc.issues, text=job.source))
        _finish(job, ImportJob.Status.FAILED, error=located.as_dict()["error"])
    except ChangeRequestRequired as exc:  # the file changes a profile of a protected environment
        _finish(
            job,
            ImportJob.Status.FAILED,
            error={
                "code": exc.code,
                "message": f"{exc}; nothing was imported",
                "path": exc.path,
                "profiles": exc.profiles,
            },
        )
    except Exception:
        logger.exception("import job %s failed", job_id)
        _finish(
            job,
            ImportJob.Status.FAILED,
            error={
                "code": "IMPORT_FAILED",
                "message": "the import stopped on an unexpected error; nothing was imported",
                "path": "",
            },
        )
    else:
        _finish(job, ImportJob.Status.SUCCEEDED, summary=summary.as_dict())
    return job


def _run_bulk(job: ImportJob) -> ImportJob:
    """Run a claimed bulk ingest job: check every line, then write the batch part by part."""
    _advance(job, PHASE_CHECKING)
    try:
        operations = bulk_ingest_parse(
            text=job.source, ndjson=job.ndjson, layer=job.layer, job=True
        )
    except BatchInvalid as exc:
        return _bulk_failed(job, exc.as_dict()["error"])
    except (BatchNotReadable, BatchTooLarge) as exc:
        return _bulk_failed(job, {"code": "INVALID_WORKSPACE", "message": str(exc), "path": ""})

    def part_written(summary: IngestSummary) -> None:
        done = summary.applied
        progress = BULK_WRITING_FROM + (100 - BULK_WRITING_FROM) * done // len(operations)
        phase = f"writing: {done:,} of {len(operations):,} operations applied"
        _advance(job, (phase, min(progress, 99)), summary=summary.as_dict())

    try:
        summary = items_bulk_ingest_in_parts(
            layer=job.layer,
            operations=operations,
            user=job.user,
            origin=BULK_ORIGIN,
            on_part=part_written,
        )
    except IngestStopped as stopped:
        return _bulk_failed(job, _bulk_error(stopped, job.layer), stopped.summary)
    _finish(job, ImportJob.Status.SUCCEEDED, summary=summary.as_dict())
    return job


def _bulk_error(stopped: IngestStopped, layer: str) -> dict:
    """The error of a bulk job that stopped at a part, saying what was applied before."""
    cause, done = stopped.cause, stopped.applied
    if isinstance(cause, Layer.DoesNotExist):
        return _bulk_stop("NOT_FOUND", f'layer "{layer}" does not exist', done)
    if isinstance(cause, ChangeRequestRequired):
        return _bulk_stop(cause.code, str(cause), done) | {"profiles": cause.profiles}
    if isinstance(cause, WriteConflict):
        return _bulk_stop("CONFLICT", str(cause), done)
    logger.error("a bulk ingest job failed", exc_info=cause)
    return _bulk_stop("BULK_INGEST_FAILED", "the bulk ingest stopped on an unexpected error", done)


def _bulk_stop(code: str, message: str, done: int) -> dict:
    """The error of a bulk job stopped after ``done`` operations were applied."""
    if done:
        applied = (
            f"; the first {done:,} operations were applied (see the summary): the batch is "
            "idempotent by path, so sending it again finishes it"
        )
    else:
        applied = "; nothing was written"
    return {"code": code, "message": message + applied, "path": ""}


def _bulk_failed(job: ImportJob, error: dict, summary: IngestSummary | None = None) -> ImportJob:
    fields = {"summary": summary.as_dict()} if summary is not None else {}
    _finish(job, ImportJob.Status.FAILED, error=error, **fields)
    return job


def _advance(job: ImportJob, phase: tuple[str, int], **fields) -> None:
    job.phase, job.progress = phase
    for name, value in fields.items():
        setattr(job, name, value)
    ImportJob.objects.filter(pk=job.pk).update(phase=job.phase, progress=job.progress, **fields)


def _finish(job: ImportJob, status: str, **fields) -> None:
    phase = PHASE_DONE if status == ImportJob.Status.SUCCEEDED else ("failed", job.progress)
    # The source is no longer needed; the summary or the errors are what people read.
    _advance(job, phase, status=status, finished_at=timezone.now(), source="", **fields)
    _announce_finished(job)


def _announce_finished(job: ImportJob) -> None:
    """Tell the webhooks subscribed to ``import.finished`` how an import job ended (a bulk
    ingest job is not an import: its client polls the job)."""
    if job.kind == ImportJob.Kind.BULK:
        return
    event = import_job_event(
        job_id=job.pk,
        status=job.status,
        mode=job.mode,
        layer=job.layer,
        summary=job.summary,
        error=job.error,
    )
    webhook_event_emit("import.finished", event)


def _import(document, *, mode: str, layer: str | None, user) -> ImportSummary:
    with workspace_write():
        if layer is None:
            return workspace_import(document=document, mode=mode, user=user)
        entry, file_prefix = _layer_entry(document, layer)
        if mode == "merge":
            target, position = {"version": 1, "layers": [entry]}, 0
        else:
            # Replace one layer: the stored workspace with this layer as the file gives it.
            target = workspace_document_read()
            keys = [stored["key"] for stored in target["layers"]]
            position = keys.index(layer) if layer in keys else len(keys)
            target["layers"][position : position + 1] = [entry]
        try:
            return workspace_import(document=target, mode=mode, user=user)
        except WorkspaceImportError as exc:
            raise WorkspaceImportError(
                [_in_file(issue, position, file_prefix) for issue in exc.issues]
            ) from exc


def _layer_entry(document, layer: str) -> tuple[dict, str]:
    """Return the file's entry for ``layer`` and its path in the file ("" for a file that
    is one layer document, ``layers[i]`` in a workspace document)."""
    if isinstance(document, dict) and isinstance(document.get("layers"), list):
        for index, entry in enumerate(document["layers"]):
            if isinstance(entry, dict) and canonical_string(entry.get("key") or "") == layer:
                return entry, f"layers[{index}]"
        raise WorkspaceImportError([ValidationIssue("layers", f'the file has no layer "{layer}"')])
    if isinstance(document, dict) and "key" in document:
        if canonical_string(document["key"]) != layer:
            raise WorkspaceImportError(
                [ValidationIssue("key", f'the file is layer "{document["key"]}", not "{layer}"')]
            )
        return document, ""
    raise WorkspaceImportError(
        [ValidationIssue("", "must be a workspace document or one layer's document")]
    )


def _in_file(issue: ValidationIssue, position: int, file_prefix: str) -> ValidationIssue:
    """Name an issue of the imported layer at its path in the file (in its message too)."""

    def in_file(rest: str) -> str:
        return ".".join(part for part in (file_prefix, rest) if part)

    message = re.sub(
        rf"(?<![\w.\]])layers\[{position}\](?:\.(items\[\d+\]))?",
        lambda found: in_file(found.group(1) or "") or "the layer",
        issue.message,
    )
    match = re.match(rf"^layers\[{position}\](\.|$)", issue.path)
    if match is None:
        return ValidationIssue(issue.path, f"{message} (in the stored workspace)", stored=True)
    return ValidationIssue(in_file(issue.path[match.end() :]), message)


def import_job_document(job: ImportJob, *, url: str) -> dict:
    """Return the job's status record as the API shows it."""
    return _job_record(job, url=url, mode=job.mode, layer=job.layer or None)


def bulk_job_document(job: ImportJob, *, url: str) -> dict:
    """Return a bulk ingest job's status record as the API shows it: ``summary`` counts the
    operations applied so far (also when the job failed half way)."""
    return _job_record(job, url=url, layer=job.layer)


def _job_record(job: ImportJob, *, url: str, **own) -> dict:
    """The fields every kind of job shows, with the kind's ``own`` after its progress."""
    return {
        "id": str(job.pk),
        "url": url,
        "status": job.status,
        "phase": job.phase,
        "progress": job.progress,
        **own,
        "bytes": job.source_bytes,
        "createdAt": job.created_at.isoformat(),
        "startedAt": job.started_at.isoformat() if job.started_at else None,
        "finishedAt": job.finished_at.isoformat() if job.finished_at else None,
        "summary": job.summary,
        "error": job.error,
    }

"""Running a claimed job to its end: an import job's parse and import, a bulk ingest job's
check and its parts, each phase recorded on the job row, and the outcome announced.

A job is claimed and handed over here by its queue (``profiles.import_export.jobs``); the
import itself is the same service as everywhere (``workspace_import``), the bulk ingest the
one bulk ingest service (``items_bulk_ingest_in_parts``).
"""

import logging
import re

from django.utils import timezone

from profiles.import_export.documents import WorkspaceImportError, workspace_parse
from profiles.import_export.export_stream import workspace_document_read
from profiles.import_export.import_summary import ImportSummary
from profiles.import_export.imports import workspace_import
from profiles.material.bulk_ingest import (
    BatchInvalid,
    BatchNotReadable,
    BatchTooLarge,
    IngestStopped,
    IngestSummary,
    bulk_ingest_parse,
    items_bulk_ingest_in_parts,
)
from profiles.models import ImportJob, Layer
from profiles.notifications.webhooks import import_job_event, webhook_event_emit
from profiles.versioning.environments import ChangeRequestRequired
from profiles.workspace.concurrency import WriteConflict, workspace_write
from profiles.workspace.mappers import canonical_string
from profiles.workspace.origin import BULK as BULK_ORIGIN
from profiles.workspace.permissions import IMPORT_EXPORT, WRITE_MATERIAL, background_refusal
from profiles.workspace.validation import issues_in_text
from resolver import ValidationIssue

# The import jobs' one logger, whichever of their modules logs (the name operators filter on).
logger = logging.getLogger("profiles.import_export.jobs")

# What a job does in its user's name, as the doors that queue it require (checked again when
# it starts).
JOB_CAPABILITIES = {
    ImportJob.Kind.IMPORT: (IMPORT_EXPORT,),
    ImportJob.Kind.BULK: (WRITE_MATERIAL,),
}
# (phase, progress in percent) as the job goes.
PHASE_READING = ("reading the file", 5)
PHASE_WRITING = ("checking and writing", 40)
PHASE_DONE = ("done", 100)
# A bulk ingest job: every line checked, then written part by part (progress 10 -> 100).
PHASE_CHECKING = ("checking every line", 5)
BULK_WRITING_FROM = 10


def job_start_refusal(job: ImportJob) -> str | None:
    """Return why the job may not run now (its user or key may no longer do what it does),
    None when it may (``profiles.workspace.permissions.background_refusal``)."""
    return background_refusal(
        job.user,
        job.api_key,
        capabilities=JOB_CAPABILITIES[job.kind],
        username=job.username,
    )


def job_run_claimed(job: ImportJob) -> ImportJob:
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
        return bulk_stop_error("NOT_FOUND", f'layer "{layer}" does not exist', done)
    if isinstance(cause, ChangeRequestRequired):
        return bulk_stop_error(cause.code, str(cause), done) | {"profiles": cause.profiles}
    if isinstance(cause, WriteConflict):
        return bulk_stop_error("CONFLICT", str(cause), done)
    logger.error("a bulk ingest job failed", exc_info=cause)
    return bulk_stop_error(
        "BULK_INGEST_FAILED", "the bulk ingest stopped on an unexpected error", done
    )


def bulk_stop_error(code: str, message: str, done: int) -> dict:
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
    job_announce_finished(job)


def job_announce_finished(job: ImportJob) -> None:
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

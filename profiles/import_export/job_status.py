"""What a client polling a job reads: the job without its source (``import_job_get``), and
its status record as the API shows it."""

from profiles.import_export.job_workers import import_jobs_fail_stopped, worker_stopped
from profiles.models import ImportJob


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

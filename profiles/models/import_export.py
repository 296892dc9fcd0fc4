"""The workspace document: import jobs and previewed uploads."""

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone


class ImportJob(models.Model):
    """A workspace import, or a bulk ingest of many items, run in the background
    (``profiles.import_export.jobs``), with its progress.

    The uploaded text waits here (not in the task queue's arguments) until the job runs, and
    is cleared once it finished; the summary or the errors stay for the status page and API.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        SUCCEEDED = "succeeded", "succeeded"
        FAILED = "failed", "failed"

    class Kind(models.TextChoices):
        IMPORT = "import", "workspace import"
        BULK = "bulk", "bulk ingest"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Who queued the job and with which API key (none: a session): the job checks both when
    # it starts, as a request checks them when it arrives. The name stays when the user is
    # deleted, so their queued job is refused rather than run as nobody's.
    username = models.CharField(max_length=150, blank=True, default="")
    api_key = models.ForeignKey(
        "profiles.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    kind = models.CharField(
        max_length=16,
        choices=Kind.choices,
        default=Kind.IMPORT,
        help_text="A workspace import, or a bulk ingest of one layer's items (its batch).",
    )
    ndjson = models.BooleanField(
        default=False, help_text="A bulk ingest's batch is NDJSON (else a JSON array)."
    )
    mode = models.CharField(max_length=16, default="merge")
    layer = models.CharField(max_length=64, blank=True, default="")
    source = models.TextField(blank=True, default="")
    source_bytes = models.PositiveBigIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    phase = models.CharField(max_length=64, blank=True, default="waiting for a worker")
    progress = models.PositiveSmallIntegerField(default=0)
    summary = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    task_id = models.CharField(max_length=64, blank=True, default="")
    worker = models.CharField(
        max_length=300,
        blank=True,
        default="",
        help_text="The worker process running the job: host:pid:start time.",
    )
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"import {self.id} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)


class PreviewedUpload(models.Model):
    """A workspace file uploaded in the studio and previewed (its dry run), kept until its
    Import or Propose (``profiles.import_export.previews``): a row rather than the shared
    cache, where the throttling and login counters live. A few a user, for half an hour."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    mode = models.CharField(max_length=16, default="merge")
    source = models.TextField()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"previewed upload {self.id}"

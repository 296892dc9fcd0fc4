"""Running the workspace: its version token, the decision log, import jobs."""

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from profiles.models.base import new_token


class WorkspaceVersion(models.Model):
    """One row: the writers' lock and the content tokens of the committed workspace.

    Every workspace write (the features' write services) locks this row first and changes ``token``
    in its own transaction; ``profiles_token`` changes too when consumers, profiles or rules
    change, and each layer carries its own ``Layer.content_token``. The tokens are random
    rather than counters, so a rolled-back write can never be mistaken for a committed one.
    """

    counter = models.BigIntegerField(default=0)
    token = models.CharField(max_length=32, default="")
    # Consumers, profiles and rules (everything of the document but the layers' material).
    profiles_token = models.CharField(max_length=32, default="")
    changed_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "workspace version"

    def __str__(self) -> str:
        return f"workspace version {self.counter}"

    @classmethod
    def bump(cls, *, profiles: bool = True) -> None:
        """Mark the workspace as changed; call inside the transaction of the write.

        ``profiles`` says whether consumers, profiles or rules changed (their token too).
        """
        changes = {"counter": models.F("counter") + 1, "token": new_token()}
        if profiles:
            changes["profiles_token"] = new_token()
        updated = cls.objects.filter(pk=1).update(**changes, changed_at=timezone.now())
        if not updated:
            cls.objects.get_or_create(
                pk=1, defaults={"counter": 1, "token": new_token(), "profiles_token": new_token()}
            )

    @classmethod
    def current_token(cls) -> str | None:
        """Return the token of the committed workspace state, or None before any write."""
        return cls.objects.filter(pk=1).values_list("token", flat=True).first()


class DecisionLog(models.Model):
    """One resolution served (API resolve, or a studio preview when enabled), for audit.

    The input is stored only as a fingerprint unless ``DECISION_LOG_STORE_INPUT`` is on:
    inputs carry customer identifiers and messages.
    """

    class Source(models.TextChoices):
        API = "api", "API resolve"
        PREVIEW = "preview", "studio preview"

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.API)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    auth = models.CharField(
        max_length=16, blank=True, default="", help_text="How the caller authenticated."
    )
    profile_key = models.CharField(max_length=64, blank=True, default="", db_index=True)
    workspace_version = models.CharField(
        max_length=32,
        blank=True,
        default="",
        help_text="Content version token of the workspace (profile included) that was resolved.",
    )
    profile_version = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Number of the profile version that answered (see the profile's versions).",
    )
    request_fingerprint = models.CharField(
        max_length=64, help_text="SHA-256 of the canonical request JSON (input included)."
    )
    input = models.JSONField(
        null=True, blank=True, help_text="Stored only when DECISION_LOG_STORE_INPUT is on."
    )
    status = models.CharField(max_length=32, db_index=True)
    blockers = models.JSONField(default=list, blank=True)
    estimated_tokens = models.PositiveIntegerField(default=0)
    duration_ms = models.FloatField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "decision log entry"
        verbose_name_plural = "decision log"

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.profile_key} {self.status}"


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

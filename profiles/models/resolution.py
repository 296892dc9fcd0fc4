"""Resolution: the decision log (one row per resolution served)."""

from django.conf import settings
from django.db import models
from django.utils import timezone


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

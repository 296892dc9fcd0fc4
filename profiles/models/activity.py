"""The activity log: every write to any entity, from any door, recorded once."""

# ruff: noqa: DJ001

from django.conf import settings
from django.db import models
from django.utils import timezone


class ActivityOrigin(models.TextChoices):
    """The door a write came through."""

    STUDIO = "studio", "studio"
    API = "api", "API"
    ADMIN = "admin", "admin"
    IMPORT = "import", "import"
    BULK = "bulk", "bulk ingest"
    CHANGE_REQUEST = "change-request", "change request"
    CLI = "cli", "command line"
    SSO = "sso", "single sign-on"


class Activity(models.Model):
    """One entity write: who (``actor``), through which door (``origin``, and the change request
    that was applied), when, and what changed field by field (``fields``: ``[{path, from,
    to}]`` in SPEC §2 names; long texts are cut, see ``profiles.activity.records``).

    ``kind`` is consumer, layer, item, profile, scenario or environment; ``key`` its key (an
    item's layer key, with ``path``; a scenario's name).
    """

    Origin = ActivityOrigin

    class Op(models.TextChoices):
        CREATE = "create", "created"
        UPDATE = "update", "changed"
        DELETE = "delete", "deleted"

    id = models.BigAutoField(primary_key=True)
    at = models.DateTimeField(default=timezone.now)
    # Indexed by (actor, -id) (``activity_actor``): not on actor alone.
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        db_index=False,
    )
    # Kept when the user is deleted, so the log still names who it was.
    actor_name = models.CharField(max_length=150, blank=True, default="")
    origin = models.CharField(max_length=16, choices=Origin.choices)
    # Most entries have none: indexed only where given (``activity_change_request``).
    change_request = models.ForeignKey(
        "ChangeRequest",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="activity",
        db_index=False,
    )
    kind = models.CharField(max_length=16)
    key = models.CharField(max_length=255)
    path = models.CharField(max_length=255, null=True, blank=True)
    op = models.CharField(max_length=8, choices=Op.choices)
    fields = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "activity"
        indexes = [
            models.Index(fields=["kind", "key", "-id"], name="activity_entity"),
            models.Index(fields=["actor", "-id"], name="activity_actor"),
            models.Index(fields=["origin", "-id"], name="activity_origin"),
            models.Index(fields=["at"], name="activity_at"),
            models.Index(
                fields=["change_request", "-id"],
                name="activity_change_request",
                condition=models.Q(change_request__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        where = f"{self.key}/{self.path}" if self.path else self.key
        return f"{self.op} {self.kind} {where}"

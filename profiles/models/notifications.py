"""Notifications: outgoing webhooks (staff-configured) and their deliveries."""

from django.conf import settings
from django.db import models
from django.utils import timezone

# The events a webhook can subscribe to; a delivery's body names one.
WEBHOOK_EVENTS = (
    "change_request.opened",
    "change_request.approved",
    "change_request.applied",
    "change_request.apply_failed",
    "profile_version.created",
    "import.finished",
)


class Webhook(models.Model):
    """A URL the server posts events to, each body signed with HMAC-SHA256 of ``secret``."""

    url = models.URLField(max_length=2000)
    events = models.JSONField(default=list, help_text="Event names (WEBHOOK_EVENTS).")
    secret = models.CharField(max_length=200)
    active = models.BooleanField(default=True)
    description = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.url


class WebhookDelivery(models.Model):
    """One event sent (or to be sent) to one webhook, with every attempt's outcome."""

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        DELIVERED = "delivered", "delivered"
        FAILED = "failed", "failed (no more retries)"

    id = models.BigAutoField(primary_key=True)
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=64)
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["webhook", "-id"], name="webhook_delivery_log")]

    def __str__(self) -> str:
        return f"{self.event} → {self.webhook_id} ({self.status})"

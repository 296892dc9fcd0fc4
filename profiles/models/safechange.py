"""Safe change: environments and their protection, profile versions, change requests and their
approvals."""

# ruff: noqa: DJ001

from django.conf import settings
from django.core.validators import MaxValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from profiles.models.activity import ActivityOrigin
from profiles.models.base import _choices_check, key_validator

ENVIRONMENT_MAX_APPROVALS = 10


class Environment(models.Model):
    """Protection of one environment (a value of ``Profile.environment``).

    An environment without a row is unprotected. In a protected one, profiles and their rules
    change only by applying an approved change request (``profiles.safechange.change_requests``).
    """

    key = models.CharField(max_length=64, unique=True, validators=[key_validator])
    requires_change_request = models.BooleanField(default=False)
    approvals = models.PositiveSmallIntegerField(
        default=1,
        validators=[MaxValueValidator(ENVIRONMENT_MAX_APPROVALS)],
        help_text="Approvals a change request needs before it can be applied.",
    )
    updated_at = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        editable=False,
    )

    class Meta:
        ordering = ["key"]

    def __str__(self) -> str:
        return self.key


class ProfileVersion(models.Model):
    """An immutable snapshot of one profile (its SPEC §2 document with rules) after a write.

    Numbers count from 1 per profile key and never change; restoring appends a new version.
    ``document`` is None for the version that records the profile's deletion.
    """

    class Source(models.TextChoices):
        WRITE = "write", "direct write"
        CHANGE_REQUEST = "change-request", "applied change request"
        RESTORE = "restore", "restore"
        MIGRATION = "migration", "existing profile"
        RESET = "reset", "demo reset (load_demo --reset)"

    profile_key = models.CharField(max_length=64, validators=[key_validator])
    number = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=timezone.now)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    message = models.TextField(blank=True, default="", help_text="Why: the author's own words.")
    document = models.JSONField(null=True, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.WRITE)
    door = models.CharField(
        max_length=16,
        choices=ActivityOrigin.choices,
        blank=True,
        default="",
        help_text="The door the write came through (studio, api, import…); blank: not recorded.",
    )
    change_request = models.ForeignKey(
        "ChangeRequest",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="versions",
    )
    approvers = models.JSONField(default=list, blank=True, help_text="Usernames.")
    restored_from = models.PositiveIntegerField(null=True, blank=True)
    protection_bypassed = models.BooleanField(
        default=False,
        help_text="Written directly in a protected environment by staff or an operator's reset.",
    )

    class Meta:
        ordering = ["profile_key", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["profile_key", "number"], name="profile_version_number_unique"
            ),
            models.CheckConstraint(condition=Q(number__gte=1), name="profile_version_number_min"),
        ]

    def __str__(self) -> str:
        return f"{self.profile_key} v{self.number}"


class ChangeRequestStatus(models.TextChoices):
    OPEN = "open", "open"
    APPLIED = "applied", "applied"
    REJECTED = "rejected", "rejected"
    CLOSED = "closed", "closed"


class ChangeRequest(models.Model):
    """A proposed change, reviewed and applied in one transaction.

    Either of one profile (``profile_key`` with ``changes``, today's form) or a change set
    (``entity_changes``: a list of ``{kind, op, key | layer+path, value}`` over consumers,
    layers, items and profiles; ``profile_key`` is empty).
    """

    Status = ChangeRequestStatus

    profile_key = models.CharField(max_length=64, blank=True, default="")
    environment = models.CharField(max_length=64, null=True, blank=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    # The profile version the changes were written against; None: the profile does not exist.
    base_version = models.PositiveIntegerField(null=True, blank=True)
    # {"name"?, "description"?, "budget"?, "rules"?}: the draft of SPEC §2 fields (rules as
    # partial rules per layer, None = back to the default rule).
    changes = models.JSONField(default=dict)
    # For a request that creates the profile (a promotion): key, name, consumer, objective,
    # environment of the new profile.
    creates = models.JSONField(null=True, blank=True)
    promoted_from = models.CharField(max_length=64, null=True, blank=True)
    impact = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    applied_version = models.PositiveIntegerField(null=True, blank=True)
    # What a reviewer reads: it grows with every edit of the title, description or changes and
    # with every rebase onto another version. Its ETag is what an approval approves.
    revision = models.PositiveIntegerField(default=1)
    # A change set: the changes in the order given, and each entity's ETag when they were
    # written against it ("layer:tickets", "item:kb/a", "consumer:x", "profile:y" -> ETag,
    # None: it did not exist), which the stale check compares at apply.
    entity_changes = models.JSONField(default=list, blank=True)
    entity_bases = models.JSONField(default=dict, blank=True)
    # The profiles whose answers the request can change (for a change set: computed from
    # its changes; the impact covers their saved scenarios). Keys.
    affected_profiles = models.JSONField(default=list, blank=True)
    # Requested reviewers: notified, and listed on the request.
    reviewers = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="review_requests"
    )
    # The revision each reviewer was last asked by email to review (user id -> revision): a
    # reviewer is emailed once per revision, however often they are removed and added again.
    reviewers_notified = models.JSONField(default=dict, blank=True)
    # Scheduled apply: the worker applies the request when due if it is still approved and
    # not stale (else it notifies the author and whoever scheduled it).
    apply_at = models.DateTimeField(null=True, blank=True)
    apply_scheduled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=_choices_check("status", ChangeRequestStatus, nullable=False),
                name="change_request_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.title}"

    @property
    def is_change_set(self) -> bool:
        return not self.profile_key

    def authorizes_profile(self, key: str) -> bool:
        """Return whether applying this request may write profile ``key`` (in a protected
        environment): its own profile, or a profile its change set changes."""
        return self.profile_key == key or any(
            change.get("kind") == "profile" and change.get("key") == key
            for change in self.entity_changes
            if isinstance(change, dict)
        )


class ChangeRequestApproval(models.Model):
    change_request = models.ForeignKey(
        ChangeRequest, on_delete=models.CASCADE, related_name="approvals"
    )
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # The revision of the request the reviewer approved (ChangeRequest.revision).
    revision = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["change_request", "user"], name="change_request_approval_once"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} approved #{self.change_request_id}"


class ChangeRequestComment(models.Model):
    """One entry of a request's review thread: a comment, or a review verdict with its words.

    ``revision`` is the request's revision the reviewer was reading; a "changes requested"
    review of the current revision blocks applying until the author makes a new revision.
    """

    class Kind(models.TextChoices):
        COMMENT = "comment", "comment"
        APPROVED = "approved", "approved"
        CHANGES_REQUESTED = "changes-requested", "changes requested"

    change_request = models.ForeignKey(
        ChangeRequest, on_delete=models.CASCADE, related_name="comments"
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.COMMENT)
    body = models.TextField(blank=True, default="")
    revision = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.kind} on #{self.change_request_id}"

"""The workspace of SPEC §2 stored in tables: consumers, layers, items, profiles and rules.

The models mirror the workspace document field by field; optional rule fields stay NULL when
the document did not give them, so an export gives back exactly what was imported. The engine
validator (``resolver.validate_workspace``, reached through ``profiles.validation``) is the
source of truth for what is valid; the constraints below are a safety net for writes that
bypass it. Models do not know the engine.
"""

# NULL in a string column means "not given in the document", which differs from "" here.
# ruff: noqa: DJ001

import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone
from simple_history.models import HistoricalRecords

from resolver.model import (
    AVAILABILITIES,
    FORMATS,
    MODES,
    ON_POLICIES,
    ORDERS,
    PARTICIPATIONS,
)
from resolver.validation import FIELD_RE, KEY_RE

# The vocabulary is the engine's (resolver.model, resolver.validation); the database only
# repeats it as choices and constraints.
KEY_PATTERN = rf"^{KEY_RE.pattern}\Z"
FIELD_PATTERN = rf"^{FIELD_RE.pattern}\Z"

# Timestamps change on every save; the history records its own date, so diffs stay readable.
HISTORY_EXCLUDED = ["created_at", "updated_at"]

key_validator = RegexValidator(
    KEY_PATTERN,
    f"must match ^{KEY_RE.pattern}$ (lowercase letters, digits, '-' and '_').",
)


def _choices(name: str, values: tuple[str, ...], labels: dict[str, str] | None = None):
    """Return TextChoices of the engine's values (each value is its own label by default)."""
    labels = labels or {}
    members = [
        (value.upper().replace("-", "_"), (value, labels.get(value, value))) for value in values
    ]
    return models.TextChoices(name, members)


RenderFormat = _choices("RenderFormat", FORMATS, {"markdown": "Markdown", "xml": "XML"})
Availability = _choices("Availability", AVAILABILITIES)
Participation = _choices("Participation", PARTICIPATIONS)
Mode = _choices("Mode", MODES)
Order = _choices("Order", ORDERS)
CurrentnessAction = _choices("CurrentnessAction", ON_POLICIES)


def _choices_check(field: str, choices: type[models.TextChoices], *, nullable: bool) -> Q:
    allowed = Q(**{f"{field}__in": choices.values})
    return allowed | Q(**{f"{field}__isnull": True}) if nullable else allowed


def new_token() -> str:
    """Return a fresh content token: random, so a rolled-back write never reuses one."""
    return uuid.uuid4().hex


class Tracked(models.Model):
    """Who created and last changed a row, and when."""

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        editable=False,
    )
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        editable=False,
    )

    class Meta:
        abstract = True


class Positioned(models.Model):
    """Keep the order of the workspace document so an export reads like the imported file."""

    position = models.PositiveIntegerField(default=0, editable=False)

    class Meta:
        abstract = True

    def _next_position(self, queryset) -> int:
        last = queryset.order_by("-position").values_list("position", flat=True).first()
        return 0 if last is None else last + 1


class Consumer(Tracked, Positioned):
    """Who receives the context, with its render settings (SPEC §1, §2 ``consumers[]``)."""

    key = models.CharField(max_length=64, unique=True, validators=[key_validator])
    name = models.TextField(blank=True, default="")
    # NULL = not given in the document (renders as markdown without dates).
    render_format = models.CharField(
        max_length=16, choices=RenderFormat.choices, null=True, blank=True
    )
    include_currentness = models.BooleanField(null=True, blank=True)

    history = HistoricalRecords(excluded_fields=HISTORY_EXCLUDED)

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.CheckConstraint(
                condition=_choices_check("render_format", RenderFormat, nullable=True),
                name="consumer_render_format_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.key

    def save(self, *args, **kwargs):
        if self._state.adding and not self.position:
            self.position = self._next_position(Consumer.objects.all())
        super().save(*args, **kwargs)


class Layer(Tracked, Positioned):
    """A named source of material shared by all profiles (SPEC §2 ``layers[]``)."""

    key = models.CharField(max_length=64, unique=True, validators=[key_validator])
    name = models.TextField(blank=True, default="")
    description = models.TextField(blank=True, default="")
    availability = models.CharField(
        max_length=16, choices=Availability.choices, default=Availability.AUTO
    )
    applies_to_objectives = models.JSONField(default=list, blank=True)
    applies_to_consumers = models.JSONField(default=list, blank=True)
    requires_input = models.JSONField(default=list, blank=True)
    # metadata field -> input key; always considered in field-name order (SPEC §2.1).
    item_filter = models.JSONField(default=dict, blank=True)
    # Changes in the transaction of any write to the layer or its items (profiles.services),
    # so a compiled layer is reused exactly while its material is unchanged.
    content_token = models.CharField(max_length=32, default=new_token, editable=False)

    history = HistoricalRecords(excluded_fields=[*HISTORY_EXCLUDED, "content_token"])

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.CheckConstraint(
                condition=_choices_check("availability", Availability, nullable=False),
                name="layer_availability_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.key

    def save(self, *args, **kwargs):
        if self._state.adding and not self.position:
            self.position = self._next_position(Layer.objects.all())
        super().save(*args, **kwargs)

    @property
    def display_name(self) -> str:
        return " ".join(self.name.split()) or self.key


class Item(Positioned):
    """One piece of material of a layer; ``path`` is unique in its layer and may contain '/'."""

    layer = models.ForeignKey(Layer, on_delete=models.CASCADE, related_name="items")
    path = models.CharField(max_length=255)
    title = models.TextField(blank=True, default="")
    body = models.TextField(blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords(excluded_fields=HISTORY_EXCLUDED)

    class Meta:
        ordering = ["layer_id", "position", "id"]
        indexes = [models.Index(fields=["layer", "position"], name="item_layer_position")]
        constraints = [
            models.UniqueConstraint(fields=["layer", "path"], name="item_path_unique_in_layer"),
            models.CheckConstraint(condition=~Q(path=""), name="item_path_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.layer.key}/{self.path}" if self.layer_id else self.path

    def save(self, *args, **kwargs):
        if self._state.adding and not self.position and self.layer_id:
            self.position = self._next_position(Item.objects.filter(layer_id=self.layer_id))
        super().save(*args, **kwargs)

    @property
    def ref(self) -> str:
        return f"{self.layer.key}/{self.path}"


class Profile(Tracked, Positioned):
    """The desired composition for consumer + objective (+ environment) (SPEC §2 ``profiles[]``)."""

    key = models.CharField(max_length=64, unique=True, validators=[key_validator])
    name = models.TextField(blank=True, default="")
    consumer = models.ForeignKey(Consumer, on_delete=models.PROTECT, related_name="profiles")
    objective = models.CharField(max_length=64, validators=[key_validator])
    environment = models.CharField(max_length=64, null=True, blank=True, validators=[key_validator])
    budget = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    # Kept for reviewers; not part of the SPEC §2 document unless the engine accepts it.
    description = models.TextField(blank=True, default="")
    # Number of the profile's latest ProfileVersion, set in the transaction of every write
    # (``profiles.versions``), so a resolution can name the version that answered it.
    version = models.PositiveIntegerField(default=0, editable=False)

    history = HistoricalRecords(excluded_fields=[*HISTORY_EXCLUDED, "version"])

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(budget__gte=1), name="profile_budget_positive"),
            models.CheckConstraint(
                condition=Q(environment__isnull=True) | ~Q(environment=""),
                name="profile_environment_not_empty",
            ),
            # A NULL environment counts as one value: two conditional unique constraints work
            # on SQLite and PostgreSQL alike (nulls_distinct=False is PostgreSQL-only).
            models.UniqueConstraint(
                fields=["consumer", "objective", "environment"],
                condition=Q(environment__isnull=False),
                name="profile_selection_unique",
            ),
            models.UniqueConstraint(
                fields=["consumer", "objective"],
                condition=Q(environment__isnull=True),
                name="profile_selection_unique_without_environment",
            ),
        ]

    def __str__(self) -> str:
        return self.key

    def save(self, *args, **kwargs):
        if self._state.adding and not self.position:
            self.position = self._next_position(Profile.objects.all())
        super().save(*args, **kwargs)


class Rule(Tracked, Positioned):
    """How one layer participates in one profile (SPEC §2 ``profiles[].rules.<layer>``).

    Every field is nullable: NULL means "not given", which takes the default rule's value.
    A layer without a Rule row gets the default rule (``ruleSource: default``).
    """

    profile = models.ForeignKey(Profile, on_delete=models.CASCADE, related_name="rules")
    layer = models.ForeignKey(Layer, on_delete=models.CASCADE, related_name="rules")
    participation = models.CharField(
        max_length=16, choices=Participation.choices, null=True, blank=True
    )
    mode = models.CharField(max_length=16, choices=Mode.choices, null=True, blank=True)
    required = models.BooleanField(null=True, blank=True)
    priority = models.FloatField(null=True, blank=True)
    max_items = models.PositiveIntegerField(null=True, blank=True)
    max_tokens = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)]
    )
    order = models.CharField(max_length=16, choices=Order.choices, null=True, blank=True)
    facets = models.JSONField(null=True, blank=True)
    # currentness: present when max_age_days is not NULL; the other three may stay "not given".
    currentness_max_age_days = models.PositiveIntegerField(null=True, blank=True)
    currentness_field = models.CharField(max_length=64, null=True, blank=True)
    currentness_on_stale = models.CharField(
        max_length=16, choices=CurrentnessAction.choices, null=True, blank=True
    )
    currentness_on_unknown = models.CharField(
        max_length=16, choices=CurrentnessAction.choices, null=True, blank=True
    )

    history = HistoricalRecords(excluded_fields=HISTORY_EXCLUDED)

    class Meta:
        ordering = ["profile_id", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["profile", "layer"], name="rule_unique_per_layer"),
            models.CheckConstraint(
                condition=_choices_check("participation", Participation, nullable=True),
                name="rule_participation_valid",
            ),
            models.CheckConstraint(
                condition=_choices_check("mode", Mode, nullable=True), name="rule_mode_valid"
            ),
            models.CheckConstraint(
                condition=_choices_check("order", Order, nullable=True), name="rule_order_valid"
            ),
            models.CheckConstraint(
                condition=_choices_check("currentness_on_stale", CurrentnessAction, nullable=True),
                name="rule_on_stale_valid",
            ),
            models.CheckConstraint(
                condition=_choices_check(
                    "currentness_on_unknown", CurrentnessAction, nullable=True
                ),
                name="rule_on_unknown_valid",
            ),
            models.CheckConstraint(
                condition=Q(max_tokens__isnull=True) | Q(max_tokens__gte=1),
                name="rule_max_tokens_positive",
            ),
            models.CheckConstraint(
                condition=~(Q(required=True) & Q(participation=Participation.EXCLUDE)),
                name="rule_required_not_excluded",
            ),
            models.CheckConstraint(
                condition=~(Q(required=True) & Q(max_items=0)),
                name="rule_required_not_zero_items",
            ),
            models.CheckConstraint(
                condition=Q(currentness_max_age_days__isnull=False)
                | (
                    Q(currentness_field__isnull=True)
                    & Q(currentness_on_stale__isnull=True)
                    & Q(currentness_on_unknown__isnull=True)
                ),
                name="rule_currentness_needs_max_age",
            ),
        ]

    def __str__(self) -> str:
        if self.profile_id and self.layer_id:
            return f"{self.profile.key} · {self.layer.key}"
        return "rule"

    def save(self, *args, **kwargs):
        if self._state.adding and not self.position and self.profile_id:
            self.position = self._next_position(Rule.objects.filter(profile_id=self.profile_id))
        super().save(*args, **kwargs)

    @property
    def has_currentness(self) -> bool:
        return self.currentness_max_age_days is not None


class Scenario(models.Model):
    """A saved request for a profile (input, now, what-ifs), used by the preview and the admin."""

    name = models.CharField(max_length=200, unique=True)
    profile = models.ForeignKey(Profile, on_delete=models.CASCADE, related_name="scenarios")
    input = models.JSONField(default=dict, blank=True)
    # An ISO-8601 date or datetime string (SPEC §3); NULL = the current time.
    now = models.CharField(max_length=64, null=True, blank=True)
    description = models.TextField(blank=True, default="")
    format = models.CharField(max_length=16, choices=RenderFormat.choices, null=True, blank=True)
    availability = models.JSONField(default=dict, blank=True)
    is_default = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    history = HistoricalRecords(excluded_fields=HISTORY_EXCLUDED)

    class Meta:
        ordering = ["profile_id", "-is_default", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["profile"],
                condition=Q(is_default=True),
                name="scenario_one_default_per_profile",
            ),
            models.CheckConstraint(
                condition=_choices_check("format", RenderFormat, nullable=True),
                name="scenario_format_valid",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def as_request(self) -> dict:
        """Return the SPEC §3 request this scenario describes (selection by profile key)."""
        request: dict = {"profile": self.profile.key, "input": dict(self.input or {})}
        if self.now:
            request["now"] = self.now
        if self.format:
            request["format"] = self.format
        if self.availability:
            request["availability"] = dict(self.availability)
        return request


class WorkspaceVersion(models.Model):
    """One row: the writers' lock and the content tokens of the committed workspace.

    Every workspace write (``profiles.services``) locks this row first and changes ``token``
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
    """A workspace import run in the background (``profiles.imports``), with its progress.

    The uploaded text waits here (not in the task queue's arguments) until the job runs, and
    is cleared once it finished; the summary or the errors stay for the status page and API.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        SUCCEEDED = "succeeded", "succeeded"
        FAILED = "failed", "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
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


# --- safe change: environments, profile versions, change requests ---------------------------


ENVIRONMENT_MAX_APPROVALS = 10


class Environment(models.Model):
    """Protection of one environment (a value of ``Profile.environment``).

    An environment without a row is unprotected. In a protected one, profiles and their rules
    change only by applying an approved change request (``profiles.changes``).
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
    message = models.TextField(blank=True, default="")
    document = models.JSONField(null=True, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.WRITE)
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
    """A proposed change of one profile, reviewed and applied as one new version."""

    Status = ChangeRequestStatus

    profile_key = models.CharField(max_length=64, validators=[key_validator])
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


# --- the item change log (incremental recompiles) ---------------------------------------------


class ItemChange(models.Model):
    """One entry of the item change log: which item of which layer a write changed.

    Written in the transaction of the write, under the writers' lock, so the ids grow in
    commit order. A worker keeping a compiled workspace reads the entries after the last one
    it applied and re-reads just those items (``profiles.item_changes``, ``profiles.cache``).
    ``path`` is None when the write changed the layer's items wholesale (an import): the
    layer is read again in full. Old entries are pruned; the first entry left after pruning
    is marked ``after_prune``, so a reader knows entries before it are gone.
    """

    class Op(models.TextChoices):
        CREATE = "create", "item created"
        UPDATE = "update", "item changed"
        DELETE = "delete", "item deleted"
        LAYER = "layer", "layer's items rewritten"

    id = models.BigAutoField(primary_key=True)
    # Not a foreign key: a deleted layer keeps its entries, so readers' positions stay valid.
    layer_id = models.BigIntegerField()
    path = models.CharField(max_length=255, null=True, blank=True)
    op = models.CharField(max_length=8, choices=Op.choices)
    after_prune = models.BooleanField(default=False)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"#{self.id} {self.op} {self.layer_id}/{self.path or '*'}"

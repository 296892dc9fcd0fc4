"""Authoring: profiles, their rules, and saved scenarios (SPEC §2, §3)."""

# ruff: noqa: DJ001

from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from simple_history.models import HistoricalRecords

from profiles.models.base import (
    HISTORY_EXCLUDED,
    CurrentnessAction,
    Mode,
    Order,
    Participation,
    Positioned,
    RenderFormat,
    Tracked,
    _choices_check,
    key_validator,
)
from profiles.models.material import Consumer, Layer


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
    # (``profiles.versioning.versions``), so a resolution can name the version that answered it.
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

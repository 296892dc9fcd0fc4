"""What every table of the workspace shares: the key and field patterns, choices taken from the
engine's vocabulary, the tracked and positioned bases."""

import uuid

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q

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

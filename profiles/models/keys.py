"""API keys: a user's own token and the scoped keys applications hold, stored hashed.

A key is shown once, when it is made; the database keeps only its SHA-256 hash (a key is 256
random bits, so a fast hash is enough: there is nothing to guess) and a short prefix that
names it in lists and the admin without giving it away.
"""

import datetime
import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

# New keys start with this marker, so a leaked one is recognisable (secret scanners, logs).
KEY_MARKER = "ctx_"
# How many characters of a key its prefix keeps: the marker and a few random ones.
PREFIX_LENGTH = 12
NAME_MAX_LENGTH = 100


def key_hash(key: str) -> str:
    """Return the stored form of a key: its SHA-256, in hex."""
    return hashlib.sha256(key.encode()).hexdigest()


def key_prefix(key: str) -> str:
    """Return the part of a key kept to recognise it: the marker and a few characters."""
    return key[:PREFIX_LENGTH] if key.startswith(KEY_MARKER) else key[:6]


def new_key() -> str:
    """Return a fresh key: the marker and 256 random bits (43 URL-safe characters)."""
    return KEY_MARKER + secrets.token_urlsafe(32)


# The latest moment a key may expire, in UTC. A later one cannot be read back: year 10000 (as
# "9999-12-31T23:59:59-14:00" is in UTC) is past what Python's datetime holds, so the driver
# fails on the row. ``profiles.workspace.keys`` refuses a later expiry at every door.
EXPIRY_LATEST = datetime.datetime(9999, 12, 31, 23, 59, 59, tzinfo=datetime.UTC)


class ReadableDateTimeField(models.DateTimeField):
    """A ``DateTimeField`` that every read can turn into a ``datetime``: a stored moment later
    than ``EXPIRY_LATEST`` (written before the bound was checked, or by hand) reads as the
    bound, so one such row cannot make every list of keys, every request with the key and
    its revocation fail.

    The clamp is in the column's SELECT (``select_format``), for every query of the model:
    the ORM's, the key lookup's compiled statement, the admin's. The column itself is a
    plain ``DateTimeField`` (the same schema, no migration).
    """

    def select_format(self, compiler, sql, params):
        sql, params = super().select_format(compiler, sql, params)
        connection = compiler.connection
        latest = connection.ops.adapt_datetimefield_value(EXPIRY_LATEST)
        if connection.vendor == "postgresql":
            return f"LEAST({sql}, %s)", (*params, latest)
        if connection.vendor == "sqlite":
            # Stored as text, "YYYY-MM-DD HH:MM:SS[.ffffff]": a fifth digit of the year puts
            # something else than "-" fifth (NULL stays NULL).
            return f"CASE WHEN substr({sql}, 5, 1) <> '-' THEN %s ELSE {sql} END", (
                latest,
                *params,
                *params,
            )
        return sql, params

    def deconstruct(self):
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.DateTimeField", args, kwargs


class KeyScope(models.TextChoices):
    """What a scoped key may do, within its owner's role (profiles.workspace.permissions)."""

    RESOLVE = "resolve", "resolve"
    READ = "read", "read"
    WRITE = "write", "write"


class ApiKey(models.Model):
    """A key that authenticates API requests as its owner.

    A **user token** (``kind=user``; at most one live per user) carries its owner's whole role;
    it is the token of the studio's API keys page and of ``POST /api/v1/auth/token``. A
    **scoped key** carries only its scopes (within the role), optionally only for some
    environments and until ``expires_at``. Revoking keeps the row (who had which key, until
    when) and stops the key at once.
    """

    class Kind(models.TextChoices):
        USER = "user", "user token"
        SCOPED = "scoped", "scoped key"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys"
    )
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.SCOPED)
    name = models.CharField(max_length=NAME_MAX_LENGTH)
    prefix = models.CharField(max_length=PREFIX_LENGTH, help_text="The key's first characters.")
    hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the key.")
    scopes = models.JSONField(default=list, blank=True, help_text="Empty for a user token.")
    environments = models.JSONField(
        default=list, blank=True, help_text="Environment keys; empty: every environment."
    )
    expires_at = ReadableDateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner"],
                condition=Q(kind="user", revoked_at__isnull=True),
                name="one_live_user_token_per_user",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def scoped(self) -> bool:
        """Whether the key's scopes limit it (a user token carries its owner's whole role)."""
        return self.kind == self.Kind.SCOPED

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def expired(self, now=None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())

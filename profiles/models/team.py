"""The team's own records: invitations (how a staff member brings a teammate into the
workspace) and single sign-on identities (the account a member signs in with).

An invitation names an email address and the role the invitee will have. Its link carries a
random token that the database keeps only as a SHA-256 hash (as API keys are kept): the link
is shown to nobody but the invitee's mailbox, and a copy of the table opens no door. A link
works once (``accepted_at``), until ``expires_at``, and never after it was revoked.
"""

import hashlib

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from django.utils import timezone

#: Longest address an invitation takes (RFC 5321's limit on a path).
INVITATION_EMAIL_MAX_LENGTH = 254


def invitation_token_hash(token: str) -> str:
    """Return the stored form of an invitation token: its SHA-256, in hex."""
    return hashlib.sha256(token.encode()).hexdigest()


class Invitation(models.Model):
    """An invitation to join the workspace with a role, pending until accepted, revoked or
    expired. Accepted and revoked invitations are kept: who invited whom, and when."""

    class Role(models.TextChoices):
        READER = "reader", "reader"
        EDITOR = "editor", "editor"
        STAFF = "staff", "staff"

    email = models.EmailField(max_length=INVITATION_EMAIL_MAX_LENGTH)
    role = models.CharField(max_length=8, choices=Role.choices, default=Role.READER)
    token_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the token.")
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            # One open invitation per address (case aside): a renewal revokes the old one.
            models.UniqueConstraint(
                Lower("email"),
                condition=Q(accepted_at__isnull=True, revoked_at__isnull=True),
                name="one_open_invitation_per_email",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.email} ({self.role})"

    @property
    def accepted(self) -> bool:
        return self.accepted_at is not None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None

    def expired(self, now=None) -> bool:
        return self.expires_at <= (now or timezone.now())

    def pending(self, now=None) -> bool:
        """Whether the link still works: neither accepted, revoked nor expired."""
        return not self.accepted and not self.revoked and not self.expired(now)


class SsoIdentity(models.Model):
    """The identity provider's account (``issuer`` and ``subject``, the ID token's ``iss`` and
    ``sub``) that signs in as ``user``.

    Single sign-on finds a member by this pair, never by email nor username: an address can
    change hands or be unverified at the provider, ``sub`` is the provider's stable identifier
    (OpenID Connect Core §5.7). Created with the user at their first sign-in.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identity"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "single sign-on identity"
        verbose_name_plural = "single sign-on identities"
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_unique")
        ]

    def __str__(self):
        return f"{self.subject} at {self.issuer}"

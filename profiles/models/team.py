"""Who a member is at the identity provider: the account single sign-on signs in."""

from django.conf import settings
from django.db import models


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

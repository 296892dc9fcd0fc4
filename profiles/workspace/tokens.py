"""A user's API token: read, replace, revoke.

The token is how a user signs in to the API, whichever door shows it (the studio's token page,
the admin): like the permissions, it belongs to no feature.
"""

from django.contrib.auth import get_user_model
from django.db import transaction
from rest_framework.authtoken.models import Token


def token_get(*, user) -> Token | None:
    """Return the user's token, or None."""
    return Token.objects.filter(user=user).first()


def token_replace(*, user) -> Token:
    """Create a new token for the user, replacing the old one."""
    with transaction.atomic():
        # Posts of one user (a double click, two tabs) take turns on the user's row: each
        # replaces the token the one before made, and the last page shows the one that works.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        Token.objects.filter(user=user).delete()
        return Token.objects.create(user=user)


def token_revoke(*, user) -> bool:
    """Delete the user's token; return whether there was one."""
    deleted, _ = Token.objects.filter(user=user).delete()
    return bool(deleted)

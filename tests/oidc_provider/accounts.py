"""The provider's accounts, set by the tests through ``shell -c`` (``running.Provider``)."""

from django.contrib.auth.models import Group, User
from oauth2_provider.models import Application


def member_set(username: str, password: str, email: str, groups: list[str]) -> None:
    """Create or update the provider's account ``username``, in exactly ``groups``."""
    user, created = User.objects.get_or_create(username=username)
    user.email = email
    if created:  # a new password would end the account's sessions at the provider
        user.set_password(password)
    user.save()
    user.groups.set([Group.objects.get_or_create(name=name)[0] for name in groups])


def client_set(client_id: str, client_secret: str, redirect_uris: list[str]) -> None:
    """Register the studio: confidential, authorization code, RS256, consent skipped."""
    Application.objects.filter(client_id=client_id).delete()
    Application.objects.create(
        name="Context Studio",
        client_id=client_id,
        client_secret=client_secret,
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=" ".join(redirect_uris),
        algorithm=Application.RS256_ALGORITHM,
        skip_authorization=True,
    )

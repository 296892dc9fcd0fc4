"""Token authentication: DRF's, with the token read by
``profiles.workspace.tokens.token_by_key_get`` (the lookup compiled once per process), so the
answers and the error messages are DRF's."""

from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions

from profiles.workspace.tokens import token_by_key_get


class TokenAuthentication(authentication.TokenAuthentication):
    def authenticate_credentials(self, key):
        token = token_by_key_get(key)
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return (token.user, token)

"""API key authentication: ``Authorization: Token <key>`` (a user's token, as before) and
``Authorization: Bearer <key>`` (scoped keys). Both read the same hashed keys through
``profiles.workspace.keys.key_authenticate`` (the lean door's rule too: a key this process
holds costs no query, ``profiles.workspace.key_cache``) and accept either kind of key; the
answers and the error messages are DRF's, and an expired or revoked key is refused like an
unknown one (401).

What a key may do once it is accepted is ``profiles.workspace.permissions`` (its owner's role
and its scopes); ``request.auth`` is the key's record.
"""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from profiles.workspace.keys import KeyRefused, key_authenticate


class TokenAuthentication(authentication.TokenAuthentication):
    """``Authorization: Token <key>``."""

    def authenticate_credentials(self, key):
        try:
            record = key_authenticate(key)
        except KeyRefused as refused:
            raise exceptions.AuthenticationFailed(refused.message) from None
        return (record.owner, record)


class BearerTokenAuthentication(TokenAuthentication):
    """``Authorization: Bearer <key>``: the scheme of scoped keys (a user token works too)."""

    keyword = "Bearer"


class BearerKeyScheme(OpenApiAuthenticationExtension):
    """The Bearer scheme in the OpenAPI schema (drf-spectacular would otherwise describe it as
    a second ``tokenAuth``)."""

    target_class = BearerTokenAuthentication
    name = "bearerAuth"
    priority = 1

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A scoped API key (`POST /api/v1/keys`); a user token works too.",
        }

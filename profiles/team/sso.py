"""Single sign-on with OpenID Connect: the authorization code flow of mozilla-django-oidc, with
members found by the provider's subject, created at their first sign-in and given at every
sign-in the role their groups claim maps to.

Configured from the environment (``ctxstudio.settings``, README "Single sign-on"): on when a
client id and the issuer (or the provider's endpoints) are set. The role is recomputed from
the groups claim at every sign-in and written through ``member_role_set`` (origin ``sso``), so
a member removed from a group at the provider loses its role at their next sign-in, and the
activity log says so. The last active staff member is the one exception: the service refuses
to demote them, and single sign-on keeps their role, with a warning in the log.
"""

import logging
import re
from dataclasses import dataclass

import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured, SuspiciousOperation
from django.db import IntegrityError, transaction
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from profiles.models import SsoIdentity
from profiles.team.members import MemberChangeError, member_role_set
from profiles.workspace.origin import SSO
from profiles.workspace.permissions import Role

logger = logging.getLogger(__name__)

DISCOVERY_PATH = "/.well-known/openid-configuration"
# Django's username validator: letters, digits and @ . + - _
_USERNAME_REFUSED = re.compile(r"[^\w.@+-]")
_USERNAME_MAX = 150


class SsoRefused(Exception):
    """A sign-in the studio refuses; the message says why, in words for the person."""


class SsoUnavailable(Exception):
    """The identity provider could not be asked (its discovery document is missing or bad)."""


@dataclass(frozen=True)
class Endpoints:
    authorization: str
    token: str
    userinfo: str
    jwks: str


def sso_enabled() -> bool:
    """Return whether single sign-on is configured (a client id and the provider's address)."""
    return bool(
        settings.OIDC_RP_CLIENT_ID
        and (settings.OIDC_ISSUER or settings.OIDC_OP_AUTHORIZATION_ENDPOINT)
    )


# The discovery documents read by this process, by issuer: read once, at the first sign-in.
_discovered: dict[str, dict] = {}


def _discovery(issuer: str) -> dict:
    if issuer not in _discovered:
        try:
            response = requests.get(issuer + DISCOVERY_PATH, timeout=settings.OIDC_TIMEOUT)
            response.raise_for_status()
            document = response.json()
        except (requests.RequestException, ValueError) as error:
            raise SsoUnavailable(f"discovery at {issuer} failed: {error}") from error
        if document.get("issuer", "").rstrip("/") != issuer:
            raise SsoUnavailable(f"{issuer}'s discovery document names another issuer")
        _discovered[issuer] = document
    return _discovered[issuer]


def sso_endpoints() -> Endpoints:
    """Return the provider's endpoints: those set explicitly, the others discovered."""
    given = {
        "authorization": settings.OIDC_OP_AUTHORIZATION_ENDPOINT,
        "token": settings.OIDC_OP_TOKEN_ENDPOINT,
        "userinfo": settings.OIDC_OP_USER_ENDPOINT,
        "jwks": settings.OIDC_OP_JWKS_ENDPOINT,
    }
    if not all(given.values()):
        if not settings.OIDC_ISSUER:
            raise SsoUnavailable("set OIDC_ISSUER, or every OIDC_*_ENDPOINT")
        document = _discovery(settings.OIDC_ISSUER)
        names = {
            "authorization": "authorization_endpoint",
            "token": "token_endpoint",
            "userinfo": "userinfo_endpoint",
            "jwks": "jwks_uri",
        }
        given = {key: value or document.get(names[key], "") for key, value in given.items()}
        if not all(given.values()):
            raise SsoUnavailable("the discovery document lacks an endpoint")
    return Endpoints(**given)


def role_from_groups(groups) -> Role:
    """Return the role the groups claim maps to: staff, editor, else the default role."""
    if isinstance(groups, str):
        groups = [groups]
    names = {str(group) for group in groups or ()}
    if names & set(settings.OIDC_STAFF_GROUPS):
        return Role.STAFF
    if names & set(settings.OIDC_EDITOR_GROUPS):
        return Role.EDITOR
    try:
        return Role(settings.OIDC_DEFAULT_ROLE)
    except ValueError as error:
        raise ImproperlyConfigured("OIDC_DEFAULT_ROLE must be reader, editor or staff.") from error


def _username_new(claims: dict) -> str:
    """Return a free username from the claims: ``preferred_username``, else the email's local
    part, else ``member``, with characters Django refuses removed and a number added when
    taken (an existing local account is never taken over)."""
    wanted = claims.get("preferred_username") or (claims.get("email") or "").split("@")[0]
    base = _USERNAME_REFUSED.sub("", str(wanted))[: _USERNAME_MAX - 8] or "member"
    users = get_user_model().objects
    candidate, number = base, 1
    while users.filter(username__iexact=candidate).exists():
        number += 1
        candidate = f"{base}-{number}"
    return candidate


def _role_apply(user, role: Role) -> None:
    try:
        member_role_set(user, role, actor=None, origin=SSO)
    except MemberChangeError as refusal:
        # The last active staff member keeps their role: losing it would leave nobody able
        # to manage members; the operator is told to make someone else staff.
        logger.warning("single sign-on kept %s's role: %s", user.get_username(), refusal)


def member_sign_in(*, issuer: str, claims: dict):
    """Return the member the provider's account signs in as, created at their first sign-in,
    with their email and role from ``claims``; refuse (``SsoRefused``) a deactivated member."""
    subject = str(claims.get("sub") or "")
    if not subject:
        raise SuspiciousOperation("the identity provider gave no subject")
    role = role_from_groups(claims.get(settings.OIDC_GROUPS_CLAIM))
    email = str(claims.get("email") or "")
    try:
        with transaction.atomic():
            identity = (
                SsoIdentity.objects.select_related("user")
                .filter(issuer=issuer, subject=subject)
                .first()
            )
            if identity is None:
                user = get_user_model().objects.create_user(_username_new(claims), email=email)
                SsoIdentity.objects.create(user=user, issuer=issuer, subject=subject)
            else:
                user = identity.user
    except IntegrityError:  # the same account's first sign-in, twice at once
        user = SsoIdentity.objects.select_related("user").get(issuer=issuer, subject=subject).user
    if not user.is_active:
        raise SsoRefused(
            "Your account is deactivated in Context Studio: ask a staff member to reactivate it."
        )
    if email and user.email != email:
        user.email = email
        user.save(update_fields=["email"])
    _role_apply(user, role)
    user.refresh_from_db()
    return user


class SsoBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's backend, answering only its callback (``nonce`` is required, so
    a password sign-in never reaches it) and only when single sign-on is configured."""

    def __init__(self, *args, **kwargs):
        # The settings are read at each sign-in (tests change them), not when constructed:
        # Django constructs every backend for every sign-in, password ones included.
        self.UserModel = get_user_model()

    def _configure(self) -> None:
        endpoints = sso_endpoints()
        self.OIDC_OP_TOKEN_ENDPOINT = endpoints.token
        self.OIDC_OP_USER_ENDPOINT = endpoints.userinfo
        self.OIDC_OP_JWKS_ENDPOINT = endpoints.jwks
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = settings.OIDC_RP_SIGN_ALGO
        self.OIDC_RP_IDP_SIGN_KEY = None

    def authenticate(self, request, nonce, code_verifier=None):
        if request is None or not sso_enabled():
            return None
        self._configure()
        return super().authenticate(request, nonce=nonce, code_verifier=code_verifier)

    def verify_claims(self, claims):
        return bool(claims.get("sub"))

    def get_or_create_user(self, access_token, id_token, payload):
        # mozilla-django-oidc checks the signature and the nonce; the audience and the issuer
        # are checked here (OpenID Connect Core §3.1.3.7).
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if settings.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("the ID token was issued to another client")
        issuer = str(payload.get("iss") or "").rstrip("/")
        if settings.OIDC_ISSUER and issuer != settings.OIDC_ISSUER:
            raise SuspiciousOperation("the ID token comes from another issuer")
        userinfo = self.get_userinfo(access_token, id_token, payload)
        if userinfo.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("the user info describes another subject")
        return member_sign_in(issuer=issuer, claims={**payload, **userinfo})

    def get_user(self, user_id):
        # As Django's ModelBackend: a deactivated member's session ends.
        user = super().get_user(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None


__all__ = [
    "SsoBackend",
    "SsoRefused",
    "SsoUnavailable",
    "member_sign_in",
    "role_from_groups",
    "sso_enabled",
    "sso_endpoints",
]

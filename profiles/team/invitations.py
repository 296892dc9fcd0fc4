"""Inviting teammates: a staff member names an address and a role, the invitee gets a link
by email, chooses a username and a password, and joins with that role.

The link carries a random token (256 bits) that the database keeps only hashed; it works
once, until ``INVITATION_MAX_AGE_DAYS`` days after it was sent, and not after a revocation.
Inviting an address that already has an open invitation replaces it: the old link stops
working and a new one is sent (a renewal). At most ``INVITATIONS_MAX_PENDING`` links work at a
time, and the studio throttles how many a staff member sends (scope ``invite``).

Every step is in the activity log: ``invitation`` entries keyed by the address (sent,
replaced, revoked, accepted) and the ``member`` entry of the account an acceptance creates.
Both kinds name people's addresses, so only staff read them (``profiles.activity``).
"""

import datetime as dt
import logging
import secrets
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model, password_validation
from django.core.exceptions import ValidationError
from django.core.mail import EmailMessage, mailers
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from profiles.activity.records import activity_record
from profiles.models import INVITATION_EMAIL_MAX_LENGTH, Invitation, invitation_token_hash
from profiles.team import selectors
from profiles.team.members import MEMBER_ROLES, member_create
from profiles.workspace.origin import WriteOrigin
from profiles.workspace.permissions import Role

logger = logging.getLogger("profiles.notifications")

USERNAME_MAX_LENGTH = get_user_model()._meta.get_field("username").max_length
# A password longer than this is refused before it is hashed (a hash of megabytes is work).
PASSWORD_MAX_LENGTH = 4096


class InvitationInvalid(ValueError):
    """Input refused, with a message per field (``errors``: field → messages)."""

    def __init__(self, errors: dict[str, list[str]]):
        self.errors = errors
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))


class InvitationRefused(Exception):
    """The link does not work (``reason``: invalid, expired, accepted, revoked, or taken: an
    account has the address by now)."""

    MESSAGES = {
        "invalid": "This invitation link is not valid: it may have been mistyped or cut. "
        "Copy the whole link from the email, or ask for a new invitation.",
        "expired": "This invitation has expired. Ask a staff member of the workspace to "
        "invite you again.",
        "accepted": "This invitation has already been used. Sign in with the username and "
        "password chosen then, or reset the password.",
        "revoked": "This invitation was withdrawn or replaced by a newer one. Use the link "
        "of the latest invitation email, or ask for a new one.",
        "taken": "An account with this invitation's address exists already: sign in with it, "
        "or ask a staff member of the workspace.",
    }

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(self.MESSAGES[reason])


@dataclass(frozen=True)
class InvitationSent:
    """A new invitation and its token (the only time the token is known: it is in the link)."""

    invitation: Invitation
    token: str
    renewed: bool


def invitation_url(token: str) -> str:
    """Return the absolute link of an invitation (``SITE_URL`` + the join page)."""
    return settings.SITE_URL.rstrip("/") + reverse("team-join", args=[token])


def invitation_entry(invitation: Invitation) -> dict:
    """Return the invitation as the activity log records it."""
    return {
        "email": invitation.email,
        "role": invitation.role,
        "expiresAt": invitation.expires_at.isoformat(timespec="seconds"),
        "state": (
            "accepted" if invitation.accepted else "revoked" if invitation.revoked else "open"
        ),
    }


def email_normalized(email: str) -> str:
    """Return the address as stored: trimmed, its domain in lower case."""
    email = (email or "").strip()
    local, at, domain = email.rpartition("@")
    return f"{local}@{domain.lower()}" if at else email


def _email_checked(email: str) -> str:
    email = email_normalized(email)
    if not email:
        raise InvitationInvalid({"email": ["Enter the address to send the invitation to."]})
    if len(email) > INVITATION_EMAIL_MAX_LENGTH:
        raise InvitationInvalid(
            {"email": [f"An address has at most {INVITATION_EMAIL_MAX_LENGTH} characters."]}
        )
    try:
        validate_email(email)
    except ValidationError:
        raise InvitationInvalid({"email": ["Enter a valid email address."]}) from None
    member = selectors.member_get_by_email(email)
    if member is not None and member.is_active:
        raise InvitationInvalid(
            {"email": [f"{email} is already a member ({member.get_username()})."]}
        )
    if member is not None:
        raise InvitationInvalid(
            {
                "email": [
                    f"{email} belongs to the deactivated member {member.get_username()}: "
                    "reactivate them instead."
                ]
            }
        )
    return email


def _role_checked(role) -> Role:
    try:
        role = Role(role)
    except ValueError:
        role = None
    if role not in MEMBER_ROLES:
        raise InvitationInvalid({"role": ["Choose reader, editor or staff."]})
    return role


def _send_invitation_email(invitation: Invitation, token: str, *, actor) -> None:
    """Send the invitee their link once the invitation is committed; log, never raise."""
    inviter = actor.get_username() if actor is not None else "Context Studio"
    expires = invitation.expires_at.strftime("%Y-%m-%d %H:%M UTC")

    def send():
        try:
            message = EmailMessage(
                subject=f"[Context Studio] {inviter} invites you to join as {invitation.role}",
                body=(
                    f"{inviter} invites you to Context Studio as {invitation.role}.\n\n"
                    "Choose your username and password here (the link works once, until "
                    f"{expires}):\n{invitation_url(token)}\n\n"
                    "If you did not expect this invitation, ignore this email.\n"
                ),
                to=[invitation.email],
            )
            with mailers.default as connection:
                connection.send_messages([message])
        except Exception:
            logger.exception("an invitation email could not be sent")

    transaction.on_commit(send)


def _invitation_recorded(invitation: Invitation, before: dict | None, *, actor, origin) -> None:
    activity_record(
        kind="invitation",
        key=invitation.email,
        before=before,
        after=invitation_entry(invitation),
        user=actor,
        origin=origin,
    )


def _revoked(invitation: Invitation, *, at, actor, origin: WriteOrigin) -> None:
    before = invitation_entry(invitation)
    invitation.revoked_at = at
    invitation.save(update_fields=["revoked_at"])
    _invitation_recorded(invitation, before, actor=actor, origin=origin)


def invitation_create(*, email: str, role, actor, origin: WriteOrigin) -> InvitationSent:
    """Invite ``email`` to join with ``role``; email them the link; return the invitation.

    Refuses (``InvitationInvalid``) an address that is not one, too long, or of an existing
    account, an unknown role, and a new invitation beyond ``INVITATIONS_MAX_PENDING`` working
    links. An open invitation of the same address is revoked and replaced (a renewal).
    """
    email = _email_checked(email)
    role = _role_checked(role)
    now = timezone.now()
    token = secrets.token_urlsafe(32)
    with transaction.atomic():
        previous = list(
            selectors.invitation_list_open()
            .select_for_update(of=("self",))
            .filter(email__iexact=email)
        )
        pending = selectors.invitation_pending_count(now) - sum(
            1 for old in previous if not old.expired(now)
        )
        if pending >= settings.INVITATIONS_MAX_PENDING:
            raise InvitationInvalid(
                {
                    "email": [
                        f"{settings.INVITATIONS_MAX_PENDING} invitations are already waiting "
                        "for an answer: revoke some, or wait until they are accepted or expire."
                    ]
                }
            )
        for old in previous:
            _revoked(old, at=now, actor=actor, origin=origin)
        invitation = Invitation.objects.create(
            email=email,
            role=str(role),
            token_hash=invitation_token_hash(token),
            invited_by=actor if getattr(actor, "pk", None) else None,
            created_at=now,
            expires_at=now + dt.timedelta(days=settings.INVITATION_MAX_AGE_DAYS),
        )
        _invitation_recorded(invitation, None, actor=actor, origin=origin)
        _send_invitation_email(invitation, token, actor=actor)
    return InvitationSent(invitation=invitation, token=token, renewed=bool(previous))


def invitation_revoke(*, invitation: Invitation, actor, origin: WriteOrigin) -> bool:
    """Stop the invitation's link; return False when it was already accepted or revoked."""
    with transaction.atomic():
        invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
        if invitation.accepted or invitation.revoked:
            return False
        _revoked(invitation, at=timezone.now(), actor=actor, origin=origin)
    return True


def _refusal(invitation: Invitation | None, now=None) -> str | None:
    if invitation is None:
        return "invalid"
    if invitation.accepted:
        return "accepted"
    if invitation.revoked:
        return "revoked"
    if invitation.expired(now):
        return "expired"
    return None


def invitation_open(token: str) -> Invitation:
    """Return the invitation whose link carries ``token`` if the link works; else raise
    ``InvitationRefused`` saying why (not valid, expired, used, withdrawn)."""
    invitation = selectors.invitation_get_by_token(token)
    reason = _refusal(invitation)
    if reason is not None:
        raise InvitationRefused(reason)
    return invitation


def _account_checked(invitation: Invitation, username: str, password: str):
    users = get_user_model()
    errors: dict[str, list[str]] = {}
    username = (username or "").strip()
    if not username:
        errors["username"] = ["Choose a username."]
    elif len(username) > USERNAME_MAX_LENGTH:
        errors["username"] = [f"A username has at most {USERNAME_MAX_LENGTH} characters."]
    else:
        try:
            users.username_validator(username)
        except ValidationError as exc:
            errors["username"] = list(exc.messages)
        else:
            if selectors.member_username_taken(username):
                errors["username"] = [f"The username {username} is taken: choose another."]
    if not password:
        errors["password"] = ["Choose a password."]
    elif len(password) > PASSWORD_MAX_LENGTH:
        errors["password"] = [f"A password has at most {PASSWORD_MAX_LENGTH} characters."]
    else:
        try:
            password_validation.validate_password(
                password, users(username=username, email=invitation.email)
            )
        except ValidationError as exc:
            errors["password"] = list(exc.messages)
    if errors:
        raise InvitationInvalid(errors)
    return username


def invitation_accept(*, token: str, username: str, password: str, origin: WriteOrigin):
    """Create the invitee's account with the invitation's role; return the new user.

    Raises ``InvitationRefused`` when the link does not work (checked again under a lock, so
    two tabs cannot both use it) and ``InvitationInvalid`` for a username that is taken or
    not one, or a password Django's ``AUTH_PASSWORD_VALIDATORS`` refuse. Records the
    ``member`` entry of the new account (by the new member, through ``origin``'s door) and
    the invitation's acceptance.
    """
    invitation = invitation_open(token)
    username = _account_checked(invitation, username, password)
    try:
        with transaction.atomic():
            invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
            reason = _refusal(invitation)
            if reason is not None:
                raise InvitationRefused(reason)
            if selectors.member_get_by_email(invitation.email) is not None:
                raise InvitationRefused("taken")  # made by other means since the invitation
            user = member_create(
                username=username,
                email=invitation.email,
                password=password,
                role=invitation.role,
                origin=origin,
            )
            before = invitation_entry(invitation)
            invitation.accepted_at = timezone.now()
            invitation.accepted_user = user
            invitation.save(update_fields=["accepted_at", "accepted_user"])
            _invitation_recorded(invitation, before, actor=user, origin=origin)
    except IntegrityError:  # the same username, created by another request meanwhile
        raise InvitationInvalid(
            {"username": [f"The username {username} is taken: choose another."]}
        ) from None
    return user


__all__ = [
    "InvitationInvalid",
    "InvitationRefused",
    "InvitationSent",
    "invitation_accept",
    "invitation_create",
    "invitation_open",
    "invitation_revoke",
    "invitation_url",
]

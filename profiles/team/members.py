"""Changing a member: their role and whether they may sign in, defined once for every door.

A role is stored where ``permissions.user_role`` reads it: ``is_staff`` (staff), the
``editors`` group (editor), neither (reader). Each change is recorded in the activity log as a
``member`` entry keyed by username, with the member's entry before and after, so the log says
who changed whose role, when, and through which door (the studio, single sign-on, the admin).

The rules that keep a workspace governable: a member never changes their own role nor
deactivates themselves, and the last active staff member stays staff and active.
"""

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import Q

from profiles.activity.records import activity_record
from profiles.workspace.origin import WriteOrigin
from profiles.workspace.permissions import (
    EDITORS_GROUP,
    Role,
    account_role,
    user_role_forget,
)

#: The roles a member can be given (anonymous is no role).
MEMBER_ROLES = (Role.READER, Role.EDITOR, Role.STAFF)


class MemberChangeError(ValueError):
    """A member change that is refused; the message says why, in words for the person."""


def member_entry(user) -> dict:
    """Return the member as the activity log records them."""
    return {
        "username": user.get_username(),
        "email": user.email,
        "role": str(account_role(user)),
        "active": user.is_active,
    }


def _other_active_staff(user) -> bool:
    staff = Q(is_staff=True) | Q(is_superuser=True)
    return get_user_model().objects.filter(staff, is_active=True).exclude(pk=user.pk).exists()


def _role_store(user, role: Role) -> None:
    # Where permissions.user_role reads a role: is_staff (staff), the editors group (editor).
    editors, _ = Group.objects.get_or_create(name=EDITORS_GROUP)
    user.is_staff = role == Role.STAFF
    if role != Role.STAFF:
        user.is_superuser = False
    user.save(update_fields=["is_staff", "is_superuser"])
    if role == Role.EDITOR:
        user.groups.add(editors)
    else:
        user.groups.remove(editors)
    user_role_forget(user)


def _member_recorded(user, before: dict | None, *, actor, origin: WriteOrigin) -> None:
    activity_record(
        kind="member",
        key=user.get_username(),
        before=before,
        after=member_entry(user),
        user=actor,
        origin=origin,
    )


def _check_actor(user, actor, what: str) -> None:
    if actor is not None and getattr(actor, "pk", None) == user.pk:
        raise MemberChangeError(f"You cannot {what} yourself: ask another staff member.")


def member_role_set(user, role: Role | str, *, actor, origin: WriteOrigin) -> bool:
    """Give ``user`` the role; return whether anything changed.

    ``actor`` is who asks (None: the identity provider at sign-in, or a command); the
    activity entry names them and ``origin``'s door. Refuses (``MemberChangeError``) a
    member's change of their own role and the demotion of the last active staff member.
    Demoting a superuser to editor or reader clears ``is_superuser`` too.
    """
    role = Role(role)
    if role not in MEMBER_ROLES:
        raise MemberChangeError(f"{role} is not a role; choose reader, editor or staff.")
    with transaction.atomic():
        user = get_user_model().objects.select_for_update().get(pk=user.pk)
        before = member_entry(user)
        if before["role"] == role:
            return False
        _check_actor(user, actor, "change the role of")
        if before["role"] == Role.STAFF and user.is_active and not _other_active_staff(user):
            raise MemberChangeError(
                f"{user.get_username()} is the last active staff member: make someone else "
                "staff first."
            )
        _role_store(user, role)
        _member_recorded(user, before, actor=actor, origin=origin)
    return True


def member_active_set(user, active: bool, *, actor, origin: WriteOrigin) -> bool:
    """Let ``user`` sign in (``active``) or not; return whether anything changed.

    A deactivated member keeps their history (versions, reviews, activity) but can no longer
    sign in, and their sessions, tokens and API keys stop working at once (every door asks
    ``user.is_active``). Refuses deactivating oneself and the last active staff member.
    """
    with transaction.atomic():
        user = get_user_model().objects.select_for_update().get(pk=user.pk)
        if user.is_active == active:
            return False
        before = member_entry(user)
        if not active:
            _check_actor(user, actor, "deactivate")
            if before["role"] == Role.STAFF and not _other_active_staff(user):
                raise MemberChangeError(
                    f"{user.get_username()} is the last active staff member and stays active."
                )
        user.is_active = active
        user.save(update_fields=["is_active"])
        user_role_forget(user)
        _member_recorded(user, before, actor=actor, origin=origin)
    return True


def member_create(*, username: str, email: str, password: str, role, origin: WriteOrigin):
    """Create a member with the role and return them: the account an invitee makes when they
    join. The activity entry (a ``member`` create) names the new member as its actor. Raises
    ``IntegrityError`` for a username taken meanwhile; call it inside a transaction."""
    role = Role(role)
    user = get_user_model().objects.create_user(username, email, password)
    _role_store(user, role)
    _member_recorded(user, None, actor=user, origin=origin)
    return user


__all__ = [
    "MEMBER_ROLES",
    "MemberChangeError",
    "member_active_set",
    "member_create",
    "member_entry",
    "member_role_set",
]

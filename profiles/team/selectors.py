"""Reads of the team: the members with their stored role, one of them, the open invitations.

A member list costs two queries whatever its length: the users, each with whether they are in
the ``editors`` group as an ``EXISTS`` column, counted and sliced by the page's paginator.
"""

from django.contrib.auth import get_user_model
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from profiles.models import Invitation, invitation_token_hash
from profiles.workspace.permissions import EDITORS_GROUP, Role


def member_list() -> QuerySet:
    """Return every account, active ones first, then by username, each with ``in_editors``."""
    users = get_user_model()
    editors = users.groups.through.objects.filter(user_id=OuterRef("pk"), group__name=EDITORS_GROUP)
    return users.objects.annotate(in_editors=Exists(editors)).order_by(
        "-is_active", users.USERNAME_FIELD
    )


def member_role_stored(member) -> Role:
    """Return the role a listed member holds (active or not), read from ``member_list``'s
    columns without a query."""
    if member.is_staff or member.is_superuser:
        return Role.STAFF
    return Role.EDITOR if member.in_editors else Role.READER


def member_get(*, member_id: int):
    """Return the account with this id (with ``in_editors``, as ``member_list``), or None."""
    return member_list().filter(pk=member_id).first()


def member_get_by_email(email: str):
    """Return an account with this address (case aside), or None."""
    return get_user_model().objects.filter(email__iexact=email).order_by("-is_active").first()


def member_username_taken(username: str) -> bool:
    """Return whether an account has this username (case aside: "Ann" and "ann" are one)."""
    users = get_user_model()
    return users.objects.filter(**{f"{users.USERNAME_FIELD}__iexact": username}).exists()


def staff_active_count() -> int:
    """Return how many active accounts are staff."""
    staff = Q(is_staff=True) | Q(is_superuser=True)
    return get_user_model().objects.filter(staff, is_active=True).count()


def _open() -> Q:
    return Q(accepted_at__isnull=True, revoked_at__isnull=True)


def invitation_list_open() -> QuerySet[Invitation]:
    """Return the invitations neither accepted nor revoked (expired ones too: the page says
    so, and a renewal replaces them), newest first, with who sent them."""
    return Invitation.objects.filter(_open()).select_related("invited_by").order_by("-id")


def invitation_pending_count(now=None) -> int:
    """Return how many invitation links work now (open and not expired)."""
    now = now or timezone.now()
    return Invitation.objects.filter(_open(), expires_at__gt=now).count()


def invitation_get(*, invitation_id: int) -> Invitation | None:
    """Return the invitation with this id, or None."""
    return Invitation.objects.filter(pk=invitation_id).first()


def invitation_get_by_token(token: str) -> Invitation | None:
    """Return the invitation whose link carries ``token`` (any state), or None."""
    if not token or len(token) > 200:
        return None
    return (
        Invitation.objects.filter(token_hash=invitation_token_hash(token))
        .select_related("invited_by")
        .first()
    )

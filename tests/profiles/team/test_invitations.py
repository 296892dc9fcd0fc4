"""Invitations (profiles.team.invitations): one link, one use, until it expires; a new
member with the invitation's role; every step in the activity log."""

import datetime as dt

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.utils import timezone

from profiles.models import Activity, Invitation
from profiles.team.invitations import (
    InvitationInvalid,
    InvitationRefused,
    invitation_accept,
    invitation_create,
    invitation_open,
    invitation_revoke,
)
from profiles.workspace.origin import STUDIO
from profiles.workspace.permissions import Role, user_role

pytestmark = pytest.mark.django_db(transaction=True)  # the email is sent on commit

GOOD_PASSWORD = "a-long-Enough-passphrase"


@pytest.fixture
def boss():
    return get_user_model().objects.create_user("boss", "boss@example.com", "pw", is_staff=True)


def invite(boss, email="ann@example.com", role="editor"):
    return invitation_create(email=email, role=role, actor=boss, origin=STUDIO)


def test_invite__email_sent__with_a_link_to_the_studio_that_opens_the_invitation(boss, settings):
    settings.SITE_URL = "https://studio.example.com/"

    sent = invite(boss)

    (message,) = mail.outbox
    assert message.to == ["ann@example.com"]
    assert "boss invites you" in message.subject and "editor" in message.subject
    link = f"https://studio.example.com/team/join/{sent.token}/"
    assert link in message.body
    assert invitation_open(sent.token) == sent.invitation
    # Only the token's hash is stored.
    assert sent.token not in str(Invitation.objects.values_list().get())


def test_accept__creates_the_member_with_the_role__and_logs_it(boss):
    sent = invite(boss)

    user = invitation_accept(
        token=sent.token, username="ann", password=GOOD_PASSWORD, origin=STUDIO
    )

    user = get_user_model().objects.get(pk=user.pk)
    assert user.email == "ann@example.com" and user.check_password(GOOD_PASSWORD)
    assert user_role(user) == Role.EDITOR
    invitation = Invitation.objects.get()
    assert invitation.accepted_user == user and invitation.accepted_at is not None
    created = Activity.objects.get(kind="member", key="ann")
    assert (created.op, created.origin, created.actor_name) == ("create", "studio", "ann")
    assert {"path": "role", "from": None, "to": "editor"} in [
        {k: f[k] for k in ("path", "from", "to")} for f in created.fields
    ]
    states = list(
        Activity.objects.filter(kind="invitation", key="ann@example.com")
        .order_by("id")
        .values_list("op", "actor_name")
    )
    assert states == [("create", "boss"), ("update", "ann")]


def test_accept__staff_invitation__makes_staff(boss):
    sent = invite(boss, role="staff")
    user = invitation_accept(
        token=sent.token, username="sam", password=GOOD_PASSWORD, origin=STUDIO
    )
    assert user_role(get_user_model().objects.get(pk=user.pk)) == Role.STAFF


def test_accept__twice__the_second_is_refused_as_used(boss):
    sent = invite(boss)
    invitation_accept(token=sent.token, username="ann", password=GOOD_PASSWORD, origin=STUDIO)

    with pytest.raises(InvitationRefused) as refused:
        invitation_accept(token=sent.token, username="ann2", password=GOOD_PASSWORD, origin=STUDIO)

    assert refused.value.reason == "accepted"
    assert get_user_model().objects.filter(email="ann@example.com").count() == 1


def test_open__expired__refused(boss, settings):
    settings.INVITATION_MAX_AGE_DAYS = 7
    sent = invite(boss)
    assert sent.invitation.expires_at - sent.invitation.created_at == dt.timedelta(days=7)
    Invitation.objects.update(expires_at=timezone.now() - dt.timedelta(seconds=1))

    with pytest.raises(InvitationRefused) as refused:
        invitation_accept(token=sent.token, username="ann", password=GOOD_PASSWORD, origin=STUDIO)

    assert refused.value.reason == "expired"
    assert not get_user_model().objects.filter(username="ann").exists()


@pytest.mark.parametrize("token", ["", "x", "no-such-token", "a" * 5000])
def test_open__tampered_or_unknown_token__refused_as_invalid(boss, token):
    sent = invite(boss)
    with pytest.raises(InvitationRefused) as refused:
        invitation_open(token or sent.token[:-1] + ("A" if sent.token[-1] != "A" else "B"))
    assert refused.value.reason == "invalid"


def test_revoke__the_link_stops_working__and_is_logged(boss):
    sent = invite(boss)

    assert invitation_revoke(invitation=sent.invitation, actor=boss, origin=STUDIO)
    assert not invitation_revoke(invitation=sent.invitation, actor=boss, origin=STUDIO)

    with pytest.raises(InvitationRefused) as refused:
        invitation_open(sent.token)
    assert refused.value.reason == "revoked"
    revoked = Activity.objects.filter(kind="invitation").order_by("-id").first()
    assert {"path": "state", "from": "open", "to": "revoked"} in [
        {k: f[k] for k in ("path", "from", "to")} for f in revoked.fields
    ]


def test_invite_again__renews__the_old_link_stops_and_one_invitation_stays_open(boss):
    first = invite(boss, role="reader")

    second = invite(boss, email="ANN@Example.com", role="editor")

    assert second.renewed and not first.renewed
    with pytest.raises(InvitationRefused, match="withdrawn or replaced"):
        invitation_open(first.token)
    assert invitation_open(second.token).role == "editor"
    assert Invitation.objects.filter(revoked_at__isnull=True).count() == 1
    assert len(mail.outbox) == 2


@pytest.mark.parametrize(
    ("email", "role", "field", "message"),
    [
        ("", "reader", "email", "Enter the address"),
        ("not an address", "reader", "email", "valid email"),
        ("a" * 250 + "@example.com", "reader", "email", "at most 254"),
        ("boss@EXAMPLE.com", "reader", "email", "already a member (boss)"),
        ("ann@example.com", "anonymous", "role", "reader, editor or staff"),
        ("ann@example.com", "admin", "role", "reader, editor or staff"),
    ],
)
def test_invite__bad_input__refused_with_the_field_and_a_message(boss, email, role, field, message):
    with pytest.raises(InvitationInvalid) as invalid:
        invite(boss, email=email, role=role)

    assert message in " ".join(invalid.value.errors[field])
    assert not Invitation.objects.exists() and not mail.outbox


def test_invite__a_deactivated_members_address__refused_reactivate_instead(boss):
    get_user_model().objects.create_user("old", "old@example.com", "pw", is_active=False)
    with pytest.raises(InvitationInvalid, match="reactivate them instead"):
        invite(boss, email="old@example.com")


def test_invite__beyond_the_pending_bound__refused(boss, settings):
    settings.INVITATIONS_MAX_PENDING = 2
    invite(boss, email="a@example.com")
    invite(boss, email="b@example.com")
    invite(boss, email="b@example.com")  # a renewal is not one more

    with pytest.raises(InvitationInvalid, match="2 invitations are already waiting"):
        invite(boss, email="c@example.com")


@pytest.mark.parametrize(
    ("username", "password", "field", "message"),
    [
        ("boss", GOOD_PASSWORD, "username", "taken"),
        ("BOSS", GOOD_PASSWORD, "username", "taken"),
        ("ann smith", GOOD_PASSWORD, "username", "valid username"),
        ("", GOOD_PASSWORD, "username", "Choose a username"),
        ("ann", "short", "password", "too short"),
        ("ann", "12345678901", "password", "entirely numeric"),
        ("ann", "password123", "password", "too common"),
        ("ann", "", "password", "Choose a password"),
    ],
)
def test_accept__bad_username_or_password__refused_and_the_link_still_works(
    boss, username, password, field, message
):
    sent = invite(boss)

    with pytest.raises(InvitationInvalid) as invalid:
        invitation_accept(token=sent.token, username=username, password=password, origin=STUDIO)

    assert message in " ".join(invalid.value.errors[field])
    assert invitation_open(sent.token).pending()
    assert not Activity.objects.filter(kind="member").exists()


def test_accept__the_address_got_an_account_meanwhile__refused_as_taken(boss):
    sent = invite(boss)
    get_user_model().objects.create_user("ann-sso", "Ann@example.com", "pw")

    with pytest.raises(InvitationRefused, match="exists already") as refused:
        invitation_accept(token=sent.token, username="ann", password=GOOD_PASSWORD, origin=STUDIO)

    assert refused.value.reason == "taken"
    assert not get_user_model().objects.filter(username="ann").exists()

"""The studio's Team page (staff): members with role and last sign-in, a role changed from
its row, deactivation after a confirmation, invitations sent and revoked; and the page an
invitation's link opens, signed out."""

import re

import pytest
from django.contrib.auth.models import Group, User
from django.core import mail
from django.test import Client

from profiles.models import Activity, Invitation
from profiles.team.invitations import invitation_create
from profiles.workspace.origin import STUDIO
from profiles.workspace.permissions import EDITORS_GROUP, Role, user_role

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-Enough-passphrase"


@pytest.fixture
def boss():
    return User.objects.create_user("boss", "boss@example.com", PASSWORD, is_staff=True)


@pytest.fixture
def ann():
    return User.objects.create_user("ann", "ann@example.com", PASSWORD)


@pytest.fixture
def staff_client(boss):
    client = Client()
    client.force_login(boss)
    return client


def test_team_page__lists_members_with_role_email_and_last_sign_in(staff_client, boss, ann):
    ann.groups.add(Group.objects.get_or_create(name=EDITORS_GROUP)[0])

    response = staff_client.get("/team/")

    assert response.status_code == 200
    rows = {row["member"].username: row["role"] for row in response.context["rows"]}
    assert rows == {"ann": "editor", "boss": "staff"}
    html = response.text
    assert "ann@example.com" in html and "never" in html  # ann never signed in
    assert f'id="role-{ann.pk}"' in html
    assert f'id="role-{boss.pk}"' not in html  # no control to change one's own role
    assert '<a href="/team/">Team</a>' in html  # the nav link, for staff


def test_team_nav_link__not_for_editors(client, ann):
    ann.groups.add(Group.objects.get_or_create(name=EDITORS_GROUP)[0])
    client.force_login(ann)
    assert '<a href="/team/">Team</a>' not in client.get("/profiles/").text


def test_change_role__saved_logged_and_said(staff_client, ann):
    response = staff_client.post(f"/team/members/{ann.pk}/role/", {"role": "editor"}, follow=True)

    assert user_role(User.objects.get(pk=ann.pk)) == Role.EDITOR
    assert "ann is now editor." in response.text
    assert Activity.objects.filter(kind="member", key="ann", actor_name="boss").exists()


def test_change_role__own__refused_with_the_message(staff_client, boss):
    response = staff_client.post(f"/team/members/{boss.pk}/role/", {"role": "reader"}, follow=True)

    assert "You cannot change the role of yourself" in response.text
    assert User.objects.get(pk=boss.pk).is_staff


def test_change_role__not_a_role__refused(staff_client, ann):
    response = staff_client.post(f"/team/members/{ann.pk}/role/", {"role": "root"}, follow=True)
    assert "Choose reader, editor or staff for ann." in response.text
    assert user_role(User.objects.get(pk=ann.pk)) == Role.READER


def test_deactivate__asks_first__then_deactivates_and_reactivates(staff_client, ann):
    confirm = staff_client.get(f"/team/members/{ann.pk}/active/")
    assert confirm.status_code == 200
    assert "can no longer sign in" in confirm.text
    assert User.objects.get(pk=ann.pk).is_active  # asking changes nothing

    done = staff_client.post(f"/team/members/{ann.pk}/active/", follow=True)

    assert "ann is deactivated." in done.text
    assert not User.objects.get(pk=ann.pk).is_active
    signed_out = Client()
    refused = signed_out.post("/accounts/login/", {"username": "ann", "password": PASSWORD})
    assert refused.status_code == 200 and "_auth_user_id" not in signed_out.session
    assert "Reactivate" in staff_client.get(f"/team/members/{ann.pk}/active/").text
    staff_client.post(f"/team/members/{ann.pk}/active/")
    assert User.objects.get(pk=ann.pk).is_active


def test_deactivate__oneself__refused(staff_client, boss):
    response = staff_client.post(f"/team/members/{boss.pk}/active/", follow=True)
    assert "You cannot deactivate yourself" in response.text
    assert User.objects.get(pk=boss.pk).is_active


def test_unknown_member_or_invitation__404(staff_client):
    assert staff_client.post("/team/members/999999/role/", {"role": "reader"}).status_code == 404
    assert staff_client.get("/team/members/999999/active/").status_code == 404
    assert staff_client.post("/team/invitations/999999/revoke/").status_code == 404


def test_invite__sent__listed_with_its_expiry(staff_client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            "/team/invite/", {"email": "new@example.com", "role": "editor"}, follow=True
        )

    assert "Invitation of new@example.com as editor sent." in response.text
    (invitation,) = response.context["invitations"]
    assert invitation.email == "new@example.com"
    assert invitation.expires_at.strftime("%Y-%m-%d %H:%M") in response.text
    assert [message.to for message in mail.outbox] == [["new@example.com"]]


def test_invite__a_members_address__the_error_beside_the_field(staff_client, ann):
    response = staff_client.post("/team/invite/", {"email": "ann@example.com", "role": "reader"})

    assert response.status_code == 400
    assert re.search(r'id="id_email_error">ann@example.com is already a member', response.text)
    assert not Invitation.objects.exists()


def test_invite__empty_form__errors_beside_the_fields(staff_client):
    response = staff_client.post("/team/invite/", {})
    assert response.status_code == 400
    assert 'id="id_email_error"' in response.text and 'id="id_role_error"' in response.text


def test_revoke__the_invitation_leaves_the_list(staff_client, boss):
    sent = invitation_create(email="new@example.com", role="reader", actor=boss, origin=STUDIO)

    response = staff_client.post(f"/team/invitations/{sent.invitation.pk}/revoke/", follow=True)

    assert "Invitation of new@example.com revoked." in response.text
    assert response.context["invitations"] == []
    assert Client().get(f"/team/join/{sent.token}/").status_code == 410


def test_join__signed_out__choose_username_and_password__signed_in_with_the_role(boss):
    sent = invitation_create(email="new@example.com", role="editor", actor=boss, origin=STUDIO)
    client = Client()

    page = client.get(f"/team/join/{sent.token}/")
    assert page.status_code == 200
    assert "new@example.com" in page.text and "editor" in page.text
    response = client.post(
        f"/team/join/{sent.token}/",
        {"username": "newbie", "password": PASSWORD, "password_again": PASSWORD},
        follow=True,
    )

    assert response.redirect_chain[-1][0] == "/profiles/"
    assert "Welcome, newbie" in response.text
    assert response.context["user"].username == "newbie"
    assert user_role(User.objects.get(username="newbie")) == Role.EDITOR
    assert client.get(f"/team/join/{sent.token}/").status_code == 410  # used


def test_join__weak_password_or_mismatch__errors_beside_the_fields(boss):
    sent = invitation_create(email="new@example.com", role="reader", actor=boss, origin=STUDIO)
    client = Client()

    weak = client.post(
        f"/team/join/{sent.token}/",
        {"username": "newbie", "password": "12345678", "password_again": "12345678"},
    )
    differ = client.post(
        f"/team/join/{sent.token}/",
        {"username": "newbie", "password": PASSWORD, "password_again": PASSWORD + "x"},
    )

    assert weak.status_code == 400 and 'id="id_password_error"' in weak.text
    assert "too common" in weak.text or "entirely numeric" in weak.text
    assert differ.status_code == 400 and "The two passwords differ." in differ.text
    assert not User.objects.filter(username="newbie").exists()


@pytest.mark.parametrize(
    ("state", "status", "words"),
    [
        ("tampered", 404, "not valid"),
        ("revoked", 410, "withdrawn or replaced"),
        ("accepted", 410, "already been used"),
        ("expired", 410, "has expired"),
    ],
)
def test_join__a_link_that_does_not_work__a_page_saying_why(boss, state, status, words):
    sent = invitation_create(email="new@example.com", role="reader", actor=boss, origin=STUDIO)
    token = sent.token
    if state == "tampered":
        token = token[:-2] + "zz"
    elif state == "revoked":
        Invitation.objects.update(revoked_at="2026-01-01T00:00:00Z")
    elif state == "accepted":
        Invitation.objects.update(accepted_at="2026-01-01T00:00:00Z")
    else:
        Invitation.objects.update(expires_at="2020-01-01T00:00:00Z")

    for method in ("get", "post"):
        response = getattr(Client(), method)(f"/team/join/{token}/")
        assert response.status_code == status
        assert words in response.text
    assert not User.objects.filter(email="new@example.com").exists()


def test_join__signed_in__asked_to_sign_out_first(staff_client, boss):
    sent = invitation_create(email="new@example.com", role="reader", actor=boss, origin=STUDIO)

    page = staff_client.get(f"/team/join/{sent.token}/")
    posted = staff_client.post(
        f"/team/join/{sent.token}/",
        {"username": "newbie", "password": PASSWORD, "password_again": PASSWORD},
    )

    assert "You are signed in as boss" in page.text
    assert posted.status_code == 403
    assert not User.objects.filter(username="newbie").exists()


def test_invite__beyond_the_staff_members_rate__429_and_nothing_sent(staff_client, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "invite": "2/hour",
        },
    }
    for n in range(2):
        staff_client.post("/team/invite/", {"email": f"n{n}@example.com", "role": "reader"})

    response = staff_client.post("/team/invite/", {"email": "n2@example.com", "role": "reader"})

    assert response.status_code == 429
    assert "invitations" in response.text
    assert Invitation.objects.count() == 2


def test_team_page__many_members__paged_active_first(staff_client, boss):
    User.objects.bulk_create(
        [User(username=f"m{n:03}", email=f"m{n:03}@example.com") for n in range(55)]
    )
    User.objects.filter(username="m000").update(is_active=False)

    first = staff_client.get("/team/")
    second = staff_client.get("/team/?page=2")

    assert len(first.context["rows"]) == 50
    assert 'rel="next"' in first.text and "Page 1 of 2" in first.text
    last = [row["member"].username for row in second.context["rows"]]
    assert len(last) == 6 and last[-1] == "m000"  # the deactivated member comes last

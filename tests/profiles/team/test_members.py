"""Changing a member's role and activity (profiles.team.members): the rules every door shares."""

import pytest
from django.contrib.auth import get_user_model

from profiles.models import Activity
from profiles.team.members import MemberChangeError, member_active_set, member_role_set
from profiles.workspace.origin import STUDIO
from profiles.workspace.permissions import Role, user_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def boss():
    return get_user_model().objects.create_user("boss", "boss@example.com", "pw", is_staff=True)


@pytest.fixture
def ann():
    return get_user_model().objects.create_user("ann", "ann@example.com", "pw")


def test_role_changes_are_stored_where_user_role_reads_them_and_logged(boss, ann):
    assert user_role(ann) == Role.READER
    assert member_role_set(ann, Role.EDITOR, actor=boss, origin=STUDIO)
    ann = get_user_model().objects.get(pk=ann.pk)
    assert user_role(ann) == Role.EDITOR
    assert member_role_set(ann, "staff", actor=boss, origin=STUDIO)
    ann = get_user_model().objects.get(pk=ann.pk)
    assert user_role(ann) == Role.STAFF and not ann.groups.exists()
    assert not member_role_set(ann, Role.STAFF, actor=boss, origin=STUDIO)  # unchanged
    entries = list(Activity.objects.filter(kind="member", key="ann").order_by("id"))
    assert [(e.actor_name, e.origin, e.op) for e in entries] == [("boss", "studio", "update")] * 2
    assert {"path": "role", "from": "reader", "to": "editor"} in [
        {k: f[k] for k in ("path", "from", "to")} for f in entries[0].fields
    ]


def test_nobody_changes_their_own_role_or_deactivates_themselves(boss, ann):
    member_role_set(ann, Role.STAFF, actor=boss, origin=STUDIO)
    with pytest.raises(MemberChangeError, match="yourself"):
        member_role_set(boss, Role.READER, actor=boss, origin=STUDIO)
    with pytest.raises(MemberChangeError, match="yourself"):
        member_active_set(boss, False, actor=boss, origin=STUDIO)
    assert get_user_model().objects.get(pk=boss.pk).is_staff


def test_the_last_active_staff_member_stays_staff_and_active(boss, ann):
    with pytest.raises(MemberChangeError, match="last active staff"):
        member_role_set(boss, Role.READER, actor=None, origin=STUDIO)
    with pytest.raises(MemberChangeError, match="last active staff"):
        member_active_set(boss, False, actor=ann, origin=STUDIO)
    assert not Activity.objects.filter(kind="member").exists()


def test_a_deactivated_member_has_no_role_and_can_be_reactivated(boss, ann):
    assert member_active_set(ann, False, actor=boss, origin=STUDIO)
    ann = get_user_model().objects.get(pk=ann.pk)
    assert user_role(ann) == Role.ANONYMOUS
    assert member_active_set(ann, True, actor=boss, origin=STUDIO)
    assert user_role(get_user_model().objects.get(pk=ann.pk)) == Role.READER

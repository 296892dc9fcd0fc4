"""The activity log in the admin (read-only: listed, filtered, searched, never added, changed
or deleted), and one author for a change a change request applied: the requester, in the
studio's History, the admin's history and the activity log alike."""

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse

from profiles.activity.records import activity_record
from profiles.import_export.imports import workspace_import
from profiles.models import Activity, ActivityOrigin, Profile
from profiles.safechange.change_requests import (
    change_request_apply,
    change_request_approve,
    change_request_create,
)
from profiles.safechange.selectors import change_request_etag
from profiles.workspace.origin import WriteOrigin
from tests.profiles.conftest import small_workspace

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:profiles_activity_changelist")


@pytest.fixture
def rows(db, admin_user):
    workspace_import(document=small_workspace())
    Activity.objects.all().delete()
    for kind, key, door in (
        ("layer", "tickets", ActivityOrigin.API),
        ("consumer", "assistant", ActivityOrigin.IMPORT),
    ):
        activity_record(
            kind=kind,
            key=key,
            before=None,
            after={"key": key},
            user=admin_user,
            origin=WriteOrigin(door=door),
        )
    return list(Activity.objects.order_by("id"))


def test_activity_admin__list__rows_with_kind_and_origin_filters(admin_client, rows):
    response = admin_client.get(CHANGELIST)

    assert response.status_code == 200
    page = response.content.decode()
    assert "tickets" in page and "assistant" in page
    assert "?kind=item" in page and "?origin__exact=import" in page
    layers = admin_client.get(CHANGELIST, {"kind": "layer"}).context["cl"].result_list
    assert [row.key for row in layers] == ["tickets"]


def test_activity_admin__search__by_key_and_actor_name(admin_client, rows):
    by_key = admin_client.get(CHANGELIST, {"q": "tickets"}).context["cl"].result_list
    by_actor = admin_client.get(CHANGELIST, {"q": "admin"}).context["cl"].result_list

    assert [row.key for row in by_key] == ["tickets"]
    assert len(by_actor) == 2


def test_activity_admin__add_change_delete__refused_even_to_superusers(admin_client, rows):
    row = rows[0]
    change = admin_client.get(reverse("admin:profiles_activity_change", args=[row.pk]))

    assert admin_client.get(reverse("admin:profiles_activity_add")).status_code == 403
    assert change.status_code == 200 and 'name="_save"' not in change.content.decode()
    assert (
        admin_client.post(reverse("admin:profiles_activity_delete", args=[row.pk])).status_code
        == 403
    )
    assert Activity.objects.count() == 2


# --- one author --------------------------------------------------------------------------


@pytest.fixture
def applied(db):
    """dana proposes a budget change of profile-0; lee approves and applies it."""
    workspace_import(document=small_workspace())
    editors = Group.objects.get_or_create(name="editors")[0]
    dana = User.objects.create_user("dana", is_staff=True)
    lee = User.objects.create_user("lee", is_staff=True)
    for user in (dana, lee):
        user.groups.add(editors)
    change_request = change_request_create(
        profile_key="profile-0", title="Budget 900", changes={"budget": 900}, user=dana
    )
    change_request_approve(
        pk=change_request.pk, user=lee, if_match=change_request_etag(change_request)
    )
    version = change_request_apply(pk=change_request.pk, user=lee)
    return dana, lee, version


def test_studio_history__applied_change_request__author_is_the_requester(client, applied):
    _dana, lee, version = applied
    client.force_login(lee)

    page = client.get(reverse("profile-history", args=["profile-0"])).content.decode()

    row = page.split(f'data-version="{version.number}"')[1].split("</tr>")[0]
    assert "<td>dana</td>" in row and "approved by lee" in row


def test_admin_history__applied_change_request__changed_by_the_requester(client, applied):
    dana, lee, _version = applied
    client.force_login(lee)
    profile = Profile.objects.get(key="profile-0")

    page = client.get(reverse("admin:profiles_profile_history", args=[profile.pk]))

    assert profile.history.first().history_user == dana
    assert page.status_code == 200 and "dana" in page.content.decode()

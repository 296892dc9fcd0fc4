"""Member and invitation rows of the activity log name people's addresses and roles: staff
read them ("member ann: role reader → editor") and filter on them; readers and editors see
neither in the studio nor through the API, and asking for their kind is refused."""

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from rest_framework.test import APIClient

from profiles.models import Activity
from profiles.team.invitations import invitation_create
from profiles.team.members import member_role_set
from profiles.workspace.origin import STUDIO
from profiles.workspace.permissions import EDITORS_GROUP
from tests.profiles.conftest import api_key_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    editors, _ = Group.objects.get_or_create(name=EDITORS_GROUP)
    users = {
        "reader": User.objects.create_user("reader", "reader@example.com", "pw"),
        "editor": User.objects.create_user("editor", "editor@example.com", "pw"),
        "staff": User.objects.create_user("boss", "boss@example.com", "pw", is_staff=True),
    }
    users["editor"].groups.add(editors)
    ann = User.objects.create_user("ann", "ann@example.com", "pw")
    Activity.objects.all().delete()
    member_role_set(ann, "editor", actor=users["staff"], origin=STUDIO)
    invitation_create(
        email="newbie@example.com", role="reader", actor=users["staff"], origin=STUDIO
    )
    return users


def studio(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def api(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_key_for(user)}")
    return client


def test_activity_page__staff__member_row_says_whose_role_changed_and_links_the_team(people):
    response = studio(people["staff"]).get("/activity/?kind=member")

    assert response.status_code == 200
    (row,) = response.context["rows"]
    assert (row["activity"].kind, row["activity"].key, row["actor"]) == ("member", "ann", "boss")
    assert {"path": "role", "before": "reader", "after": "editor", "long": False} in row["fields"]
    assert row["entity_url"] == "/team/"
    assert "member" in response.context["kinds"]
    assert "newbie@example.com" in studio(people["staff"]).get("/activity/").text


@pytest.mark.parametrize("role", ["reader", "editor"])
def test_activity_page__not_staff__no_member_row_and_the_kind_refused(people, role):
    client = studio(people[role])

    response = client.get("/activity/")

    assert response.status_code == 200
    assert not [row for row in response.context["rows"] if row["activity"].kind == "member"]
    assert "newbie@example.com" not in response.text
    assert "member" not in response.context["kinds"]
    assert client.get("/activity/?kind=member").status_code == 403
    assert client.get("/activity/?kind=invitation").status_code == 403


def test_activity_api__staff__member_rows(people):
    response = api(people["staff"]).get("/api/v1/activity?kind=member")

    assert response.status_code == 200
    assert [(row["kind"], row["key"]) for row in response.json()["results"]] == [("member", "ann")]


@pytest.mark.parametrize("role", ["reader", "editor"])
def test_activity_api__not_staff__no_member_row_and_the_kind_refused(people, role):
    client = api(people[role])

    kinds = [row["kind"] for row in client.get("/api/v1/activity").json()["results"]]
    assert "member" not in kinds and "invitation" not in kinds
    refused = client.get("/api/v1/activity?kind=member")
    assert refused.status_code == 403
    assert refused.json()["error"]["path"] == "kind"


def test_activity_api__staffs_scoped_key__no_member_row(people):
    key = api_key_for(people["staff"], scopes=["read"], name="bot")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")

    response = client.get("/api/v1/activity")

    assert response.status_code == 200
    assert "member" not in [row["kind"] for row in response.json()["results"]]

"""``GET /api/v1/activity``: who changed what, from which door, filtered and paged; item rows
(customer material) only for who may read material; every bad filter a 400 naming it; the
same few queries for a page of 1 row as of 50."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from profiles.activity.records import activity_record
from profiles.models import Activity, ActivityOrigin
from profiles.safechange.change_requests import change_request_create
from profiles.workspace.origin import WriteOrigin
from tests.profiles.conftest import API, api_key_for, token_client

pytestmark = pytest.mark.django_db

ACTIVITY = API + "activity"


def record(kind, key, user, *, door=ActivityOrigin.API, path=None, change_request=None, **after):
    activity_record(
        kind=kind,
        key=key,
        path=path,
        before=None,
        after={"key": key, **after},
        user=user,
        origin=WriteOrigin(door=door, change_request=change_request),
    )


@pytest.fixture
def log(small, editor, staff):
    """A layer edit through the API, a ticket (item) created by an editor, a staff import."""
    Activity.objects.all().delete()  # what setting up the workspace recorded
    record("layer", "layer-001", editor, itemFilter={"customer_id": "customer_id"})
    record("item", "layer-001", editor, path="T-1.md", body="Card of C-1001 declined")
    record("consumer", "assistant", staff, door=ActivityOrigin.IMPORT, name="Assistant")


def keys(response) -> list[tuple[str, str]]:
    return [(row["kind"], row["key"]) for row in response.json()["results"]]


def test_activity__editor__every_row_newest_first_with_fields(log, editor_client):
    response = editor_client.get(ACTIVITY)

    assert response.status_code == 200
    rows = response.json()["results"]
    assert [row["kind"] for row in rows] == ["consumer", "item", "layer"]
    assert rows[1]["path"] == "T-1.md" and "path" not in rows[0]
    assert {"path": "body", "from": None, "to": "Card of C-1001 declined"} in rows[1]["fields"]
    assert rows[0]["actor"] == "staff" and rows[0]["origin"] == "import"
    assert rows[2]["changeRequest"] is None and rows[2]["op"] == "create"
    assert response.json()["next"] is None and response.json()["previous"] is None


def test_activity__reader_without_read_material__no_item_row_nor_its_text(log, reader_client):
    response = reader_client.get(ACTIVITY)

    assert response.status_code == 200
    assert keys(response) == [("consumer", "assistant"), ("layer", "layer-001")]
    assert "C-1001" not in response.content.decode()


def test_activity__reader_asks_for_items__403_naming_kind(log, reader_client):
    response = reader_client.get(ACTIVITY, {"kind": "item"})

    assert response.status_code == 403
    assert response.json()["error"]["path"] == "kind"


def test_activity__read_scoped_key_of_an_editor__sees_item_rows(log, editor):
    client = token_client(editor)
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_key_for(editor, scopes=['read'])}")

    response = client.get(ACTIVITY, {"kind": "item"})

    assert response.status_code == 200
    assert keys(response) == [("item", "layer-001")]


def test_activity__resolve_scoped_key__403(log, editor, anonymous_client):
    client = token_client(editor)
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_key_for(editor, scopes=['resolve'])}")

    assert client.get(ACTIVITY).status_code == 403
    assert anonymous_client.get(ACTIVITY).status_code == 401


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"kind": "layer", "key": "layer-001"}, [("layer", "layer-001")]),
        ({"kind": "item", "key": "layer-001", "path": "T-1.md"}, [("item", "layer-001")]),
        ({"actor": "staff"}, [("consumer", "assistant")]),
        ({"origin": "api"}, [("item", "layer-001"), ("layer", "layer-001")]),
        ({"since": "2000-01-01T00:00:00Z", "until": "2000-01-02"}, []),
        ({"until": "2999-01-01T00:00:00+02:00", "origin": "import"}, [("consumer", "assistant")]),
    ],
)
def test_activity__filter__only_the_rows_it_names(log, editor_client, query, expected):
    response = editor_client.get(ACTIVITY, query)

    assert response.status_code == 200, response.json()
    assert keys(response) == expected


def test_activity__change_request_filter__what_it_applied(log, editor, editor_client):
    change_request = change_request_create(
        profile_key="profile-0", title="Budget", changes={"budget": 900}, user=editor
    )
    record(
        "profile",
        "profile-0",
        editor,
        door=ActivityOrigin.CHANGE_REQUEST,
        change_request=change_request,
        budget=900,
    )

    response = editor_client.get(ACTIVITY, {"changeRequest": change_request.pk})

    assert keys(response) == [("profile", "profile-0")]
    row = response.json()["results"][0]
    assert row["changeRequest"] == change_request.pk and row["origin"] == "change-request"


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ({"kind": "widget"}, "kind"),
        ({"origin": "email"}, "origin"),
        ({"since": "last tuesday"}, "since"),
        ({"until": "2026-13-01"}, "until"),
        ({"changeRequest": "-1"}, "changeRequest"),
        ({"actor": "a" * 151}, "actor"),
        ({"before": "x"}, "before"),
        ({"page_size": "0"}, "page_size"),
    ],
)
def test_activity__bad_filter__400_naming_the_parameter(log, editor_client, query, name):
    response = editor_client.get(ACTIVITY, query)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "INVALID_REQUEST" and error["path"] == name
    assert name in error["message"]


def test_activity__pages__next_then_previous_walk_the_log(small, editor, editor_client):
    Activity.objects.all().delete()
    for n in range(5):
        record("layer", f"layer-{n}", editor)

    first = editor_client.get(ACTIVITY, {"page_size": 2}).json()
    second = editor_client.get(first["next"]).json()
    third = editor_client.get(second["next"]).json()
    back = editor_client.get(third["previous"]).json()

    walked = [row["key"] for page in (first, second, third) for row in page["results"]]
    assert walked == [f"layer-{n}" for n in (4, 3, 2, 1, 0)]
    assert third["next"] is None and first["previous"] is None
    assert back["results"] == second["results"]
    assert "page_size=2" in second["next"]


def test_activity__page_size_beyond_the_bound__capped(small, editor_client):
    response = editor_client.get(ACTIVITY, {"page_size": 10**6})

    assert response.status_code == 200


QUERY = {"page_size": 100, "actor": "editor"}


def _queries(client) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(ACTIVITY, QUERY).status_code == 200
    return len(queries)


def test_activity__queries__the_same_for_1_and_50_rows(
    small, editor, editor_client, django_assert_max_num_queries
):
    Activity.objects.all().delete()
    record("layer", "layer-000", editor)
    one = _queries(editor_client)
    for n in range(49):
        record("item", "layer-000", editor, path=f"docs/{n}.md")

    with django_assert_max_num_queries(one):
        response = editor_client.get(ACTIVITY, QUERY)

    assert len(response.json()["results"]) == 50
    assert one <= 6


def test_activity__schema__declares_the_filters_and_an_example(client):
    operation = client.get(API + "schema/", {"format": "json"}).json()["paths"]["/api/v1/activity"]
    get = operation["get"]

    names = {parameter["name"] for parameter in get["parameters"]}
    assert {"kind", "key", "path", "actor", "origin", "since", "until", "changeRequest"} <= names
    assert get["responses"]["200"]["content"]["application/json"]["examples"]

"""``POST /api/v1/layers/<key>/bulk``: a helpdesk sync's batch of item upserts and deletes,
as NDJSON or a JSON array, all or nothing, with the single item writes' validation,
permissions and governed-layer refusal."""

import json

import pytest
from rest_framework.test import APIClient

from profiles.models import Activity, Environment, Item, Layer, WorkspaceVersion
from tests.profiles.conftest import API, NOW, api_key_for

pytestmark = pytest.mark.django_db

NDJSON = "application/x-ndjson"
# layer-001 is customer-scoped (itemFilter customer_id) and read by profile-0 on the default rule.
BULK = API + "layers/layer-001/bulk"


def ticket(number: int, **changes) -> dict:
    return {
        "path": f"T-{number}",
        "title": f"Ticket {number}: parcel lost",
        "body": f"Order {number} never arrived; the customer asks for a refund.",
        "metadata": {"customer_id": "C-1", "updated": "2026-11-28"},
        **changes,
    }


def ndjson(lines) -> str:
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def send(client: APIClient, lines, *, url: str = BULK):
    return client.generic("POST", url, ndjson(lines), content_type=NDJSON)


class Unchanged:
    """What a refused batch must leave as it was: items, activity, the workspace version."""

    def __init__(self):
        self.items = sorted(Item.objects.values_list("layer__key", "path", "title", "body"))
        self.activity = Activity.objects.count()
        self.token = WorkspaceVersion.current_token()

    def check(self):
        assert sorted(Item.objects.values_list("layer__key", "path", "title", "body")) == self.items
        assert Activity.objects.count() == self.activity
        assert WorkspaceVersion.current_token() == self.token


# --- writing ---------------------------------------------------------------------------------


def test_bulk__ndjson_upserts_and_a_delete__200_with_counts_and_items_readable(
    small, editor_client
):
    response = send(
        editor_client,
        [
            {"op": "upsert", "item": ticket(1)},
            ticket(2),
            {"op": "upsert", "item": {"path": "docs/item-0000.md", "title": "Renamed"}},
            {"op": "delete", "path": "docs/item-0003.md"},
        ],
    )

    assert response.status_code == 200, response.content
    assert response.json() == {
        "layer": "layer-001",
        "operations": 4,
        "created": 2,
        "updated": 1,
        "deleted": 1,
        "unchanged": 0,
    }
    item = editor_client.get(API + "layers/layer-001/items/T-1").json()
    assert (item["title"], item["metadata"]["customer_id"]) == (ticket(1)["title"], "C-1")
    assert editor_client.get(API + "layers/layer-001/items/docs/item-0003.md").status_code == 404


def test_bulk__json_array__same_as_ndjson(small, editor_client):
    response = editor_client.post(
        BULK, [ticket(1), {"op": "delete", "path": "docs/item-0002.md"}], format="json"
    )

    assert response.status_code == 200, response.content
    assert (response.json()["created"], response.json()["deleted"]) == (1, 1)


def test_bulk__same_batch_twice__second_unchanged_and_no_activity(small, editor_client):
    lines = [ticket(n) for n in range(10)] + [{"op": "delete", "path": "docs/item-0001.md"}]
    send(editor_client, lines)
    activity = Activity.objects.filter(origin="bulk").count()
    token = WorkspaceVersion.current_token()

    response = send(editor_client, lines)

    assert response.json()["unchanged"] == 11
    assert Activity.objects.filter(origin="bulk").count() == activity == 11
    assert WorkspaceVersion.current_token() == token


def test_bulk__new_ticket__in_the_next_resolution_and_gone_after_its_delete(
    small, editor_client, reader_client
):
    request = {"profile": "profile-0", "input": {"message": "parcel", "customer_id": "C-1"}}
    request["now"] = NOW
    reader_client.post(API + "resolve", request, format="json")  # the workspace compiled

    send(editor_client, [ticket(9)])
    served = reader_client.post(API + "resolve", request, format="json").content
    send(editor_client, [{"op": "delete", "path": "T-9"}])
    after = reader_client.post(API + "resolve", request, format="json").content

    assert "Order 9 never arrived" in served.decode()
    assert "Order 9 never arrived" not in after.decode()


def test_bulk__activity__origin_bulk_and_the_editor_as_actor(small, editor_client):
    send(editor_client, [ticket(1)])

    response = editor_client.get(
        API + "activity", {"kind": "item", "key": "layer-001", "origin": "bulk"}
    )

    (entry,) = response.json()["results"]
    assert (entry["origin"], entry["actor"], entry["op"]) == ("bulk", "editor", "create")


# --- refused: nothing written -------------------------------------------------------------------


def test_bulk__bad_line__400_naming_line_and_field_and_nothing_written(small, editor_client):
    lines = [ticket(n) for n in range(20)]
    lines[16] = {"op": "upsert", "item": ticket(16, metadata={"customer_id": "C-1", "rank": []})}
    lines[16]["item"]["metadata"]["rank"] = {"a": {"b": {"c": {"d": "C-SECRET-77"}}}}
    unchanged = Unchanged()

    response = send(editor_client, lines)

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "INVALID_WORKSPACE"
    assert error["path"] == "[16].item.metadata"
    (issue,) = error["issues"]
    assert (issue["line"], issue["entry"]) == (17, "item layer-001/T-16")
    assert "line 17" in error["message"]
    assert "C-SECRET-77" not in response.content.decode()  # the value is not echoed
    unchanged.check()


@pytest.mark.parametrize(
    ("line", "path"),
    [
        ('{"path": "T-1", "title": "nul \\u0000 inside"}', "[1].title"),
        ('{"path": "T-1", "body": "lone \\ud800 surrogate"}', "[1].body"),
        ('{"path": "T-1", "metadata": {"n": NaN}}', "[1]"),
        ('{"path": "T-1", "metadata": ' + "[" * 5000 + "]" * 5000 + "}", "[1]"),
        ('{"path": "T-1", "metadata": {"n": ' + "9" * 5000 + "}}", "[1]"),
    ],
    ids=["nul", "surrogate", "nan", "deep", "huge-integer"],
)
def test_bulk__hostile_line__400_at_its_operation_and_nothing_written(
    small, editor_client, line, path
):
    unchanged = Unchanged()

    response = editor_client.generic(
        "POST", BULK, json.dumps(ticket(0)) + "\n" + line, content_type=NDJSON
    )

    assert response.status_code == 400, response.content
    (issue,) = response.json()["error"]["issues"]
    assert (issue["path"], issue["line"]) == (path, 2)
    unchanged.check()


def test_bulk__body_not_utf8__400(small, editor_client):
    response = editor_client.generic("POST", BULK, b"\xff\xfe{}", content_type=NDJSON)

    assert response.status_code == 400


def test_bulk__body_not_a_batch__400_invalid_request(small, editor_client):
    response = editor_client.post(BULK, {"path": "T-1"}, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_REQUEST"


def test_bulk__more_lines_than_allowed__413_telling_to_split(small, editor_client, settings):
    settings.BULK_INGEST_MAX_LINES = 3
    unchanged = Unchanged()

    response = send(editor_client, [ticket(n) for n in range(4)])

    assert response.status_code == 413
    error = response.json()["error"]
    assert error["code"] == "PAYLOAD_TOO_LARGE"
    assert error["maxLines"] == 3
    assert "split it" in error["message"]
    unchanged.check()


def test_bulk__unknown_layer__404(small, editor_client):
    response = send(editor_client, [ticket(1)], url=API + "layers/no-such-layer/bulk")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"


@pytest.fixture
def governed(release):
    Environment.objects.create(key="production", requires_change_request=True)
    Layer.objects.filter(key="layer-001").update(governed=True)


def test_bulk__governed_layer_read_by_protected_profile__409_naming_it(governed, editor_client):
    unchanged = Unchanged()

    response = send(editor_client, [ticket(1), {"op": "delete", "path": "docs/item-0001.md"}])

    assert response.status_code == 409
    error = response.json()["error"]
    assert (error["code"], error["profiles"]) == ("CHANGE_REQUEST_REQUIRED", ["profile-0"])
    assert "C-1" not in json.dumps(error) and "parcel" not in json.dumps(error)
    unchanged.check()


def test_bulk__governed_layer__unchanged_batch_is_not_refused(governed, editor_client):
    stored = Item.objects.get(layer__key="layer-001", path="docs/item-0000.md")
    same = {"path": stored.path, "title": stored.title, "body": stored.body}

    response = send(editor_client, [{**same, "metadata": stored.metadata}])

    assert response.status_code == 200
    assert response.json()["unchanged"] == 1


def test_bulk__ungoverned_layer_in_a_protected_workspace__writes(governed, editor_client):
    response = send(editor_client, [ticket(1)], url=API + "layers/layer-002/bulk")

    assert response.status_code == 200
    assert response.json()["created"] == 1


# --- who may ---------------------------------------------------------------------------------


def test_bulk__reader__403_and_nothing_written(small, reader_client):
    unchanged = Unchanged()

    response = send(reader_client, [ticket(1)])

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "PERMISSION_DENIED"
    unchanged.check()


def test_bulk__anonymous__401(small, anonymous_client):
    assert send(anonymous_client, [ticket(1)]).status_code == 401


@pytest.mark.parametrize(("scopes", "status"), [(["read"], 403), (["write"], 200)])
def test_bulk__scoped_key__write_scope_needed(small, editor, scopes, status):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_key_for(editor, scopes=scopes)}")

    assert send(client, [ticket(1)]).status_code == status


def test_bulk__over_the_rate__429_retryable(small, editor_client, settings):
    rates = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**rates, "bulk": "2/minute"},
    }

    statuses = [send(editor_client, [ticket(n)]).status_code for n in range(3)]

    assert statuses == [200, 200, 429]


# --- the schema --------------------------------------------------------------------------------


def test_schema__bulk__an_array_of_upserts_and_deletes_answered_with_counts(client):
    schema = client.get(API + "schema/", {"format": "json"}).json()

    operation = schema["paths"]["/api/v1/layers/{key}/bulk"]["post"]
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    assert body["type"] == "array"
    shapes = schema["components"]["schemas"]
    one_of = shapes[body["items"]["$ref"].rsplit("/", 1)[1]]["oneOf"]
    assert len(one_of) == 2
    assert operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert "application/x-ndjson" in operation["description"]

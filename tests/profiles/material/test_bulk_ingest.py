"""Bulk ingest (``profiles.material.bulk_ingest``): a batch of item upserts and deletes of one
layer, validated line by line, written all or nothing at O(batch) with its history, item change
log and activity entries, and idempotent by path."""

import json

import pytest
from django.db import connection
from django.db.models.signals import post_init
from django.test.utils import CaptureQueriesContext

from profiles.activity.records import activity_fields_encoded, activity_record_many
from profiles.import_export.imports import workspace_import
from profiles.material.bulk_ingest import (
    BatchInvalid,
    BatchNotReadable,
    BatchTooLarge,
    bulk_ingest_parse,
    items_bulk_ingest,
)
from profiles.material.items import item_create
from profiles.models import Activity, Item, ItemChange, Layer, WorkspaceVersion
from profiles.workspace.entity_changes import EntityChange
from profiles.workspace.mappers import map_item_to_resolver
from tests.profiles.conftest import small_workspace

pytestmark = pytest.mark.django_db

LAYER = "layer-001"


def ticket(number: int, **changes) -> dict:
    return {
        "path": f"T-{number}",
        "title": f"Ticket {number}",
        "body": f"Refund for order {number} has not arrived.",
        "metadata": {"customer_id": f"C-{number % 7}", "updated": "2026-11-28"},
        **changes,
    }


def ndjson(lines) -> str:
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def ingest(lines, *, user=None, ndjson_body: bool = True):
    text = ndjson(lines) if ndjson_body else json.dumps(lines)
    operations = bulk_ingest_parse(text=text, ndjson=ndjson_body, layer=LAYER)
    return items_bulk_ingest(layer=LAYER, operations=operations, user=user)


def stored(layer: str = LAYER) -> dict[str, dict]:
    return {item.path: map_item_to_resolver(item) for item in Item.objects.filter(layer__key=layer)}


@pytest.fixture
def small(db):
    workspace_import(document=small_workspace())
    Activity.objects.all().delete()  # the import's own entries


# --- upsert and delete ---------------------------------------------------------------------


def test_items_bulk_ingest__new_and_changed_items__created_updated_in_order(small):
    summary = ingest(
        [
            {"op": "upsert", "item": ticket(1)},
            ticket(2),  # a plain item: an upsert
            {"op": "upsert", "item": {"path": "docs/item-0000.md", "title": "Renamed"}},
        ]
    )

    items = stored()
    assert summary.as_dict() == {
        "layer": LAYER,
        "operations": 3,
        "created": 2,
        "updated": 1,
        "deleted": 0,
        "unchanged": 0,
    }
    assert items["T-1"] == ticket(1)
    assert items["T-2"] == ticket(2)
    # An upsert is the whole item: the fields it leaves out go back to their defaults.
    assert items["docs/item-0000.md"] == {"path": "docs/item-0000.md", "title": "Renamed"}
    # New items go at the end of the layer, in the batch's order.
    order = list(
        Item.objects.filter(layer__key=LAYER).order_by("position").values_list("path", flat=True)
    )
    assert order[-2:] == ["T-1", "T-2"]


def test_items_bulk_ingest__delete__removes_the_item_and_a_missing_path_is_unchanged(small):
    summary = ingest(
        [{"op": "delete", "path": "docs/item-0001.md"}, {"op": "delete", "path": "never-was"}]
    )

    assert (summary.deleted, summary.unchanged) == (1, 1)
    assert "docs/item-0001.md" not in stored()
    assert len(stored()) == 3


def test_items_bulk_ingest__same_batch_twice__second_changes_and_records_nothing(small):
    lines = [ticket(n) for n in range(5)] + [{"op": "delete", "path": "docs/item-0002.md"}]
    ingest(lines)
    token = WorkspaceVersion.current_token()
    counts = (Activity.objects.count(), ItemChange.objects.count(), Item.history.count())

    summary = ingest(lines)

    assert summary.as_dict()["unchanged"] == 6
    assert (summary.created, summary.updated, summary.deleted) == (0, 0, 0)
    assert WorkspaceVersion.current_token() == token
    assert (Activity.objects.count(), ItemChange.objects.count(), Item.history.count()) == counts


def test_items_bulk_ingest__json_array__same_as_ndjson(small):
    summary = ingest([ticket(1), {"op": "delete", "path": "docs/item-0003.md"}], ndjson_body=False)

    assert (summary.created, summary.deleted) == (1, 1)
    assert stored()["T-1"] == ticket(1)


def test_items_bulk_ingest__other_layers__untouched(small):
    others = {key: stored(key) for key in ("layer-000", "layer-002")}
    tokens = dict(Layer.objects.values_list("key", "content_token"))

    ingest([ticket(1), {"op": "delete", "path": "docs/item-0000.md"}])

    assert {key: stored(key) for key in others} == others
    after = dict(Layer.objects.values_list("key", "content_token"))
    assert after[LAYER] != tokens[LAYER]
    assert {k: v for k, v in after.items() if k != LAYER} == {
        k: v for k, v in tokens.items() if k != LAYER
    }


# --- history, item change log, activity -------------------------------------------------------


def test_items_bulk_ingest__writes__history_change_log_and_activity_with_origin_bulk(
    small, django_user_model
):
    user = django_user_model.objects.create_user("sync")
    last_change = ItemChange.objects.order_by("-id").values_list("id", flat=True).first() or 0

    ingest(
        [
            ticket(1),
            {"op": "upsert", "item": {"path": "docs/item-0000.md", "title": "Renamed"}},
            {"op": "delete", "path": "docs/item-0001.md"},
            {"op": "upsert", "item": dict(stored()["docs/item-0002.md"])},  # unchanged
        ],
        user=user,
    )

    history = Item.history.filter(history_user=user)
    assert sorted(history.values_list("path", "history_type")) == [
        ("T-1", "+"),
        ("docs/item-0000.md", "~"),
        ("docs/item-0001.md", "-"),
    ]
    changes = ItemChange.objects.filter(id__gt=last_change)
    assert sorted(changes.values_list("path", "op")) == [
        ("T-1", "create"),
        ("docs/item-0000.md", "update"),
        ("docs/item-0001.md", "delete"),
    ]
    activity = Activity.objects.order_by("path")
    assert [(a.path, a.op, a.origin, a.actor_name) for a in activity] == [
        ("T-1", "create", "bulk", "sync"),
        ("docs/item-0000.md", "update", "bulk", "sync"),
        ("docs/item-0001.md", "delete", "bulk", "sync"),
    ]
    renamed = activity.get(path="docs/item-0000.md")
    assert {"path": "title", "from": "Item 0 of layer 1", "to": "Renamed"} in renamed.fields


def test_items_bulk_ingest__created_item__logs_the_fields_a_single_create_logs(small):
    ingest([ticket(1, body="Refund\tlate\n\nsee [1]", metadata={"tags": ["a", "b"], "n": 1.5})])
    item_create(
        layer=LAYER,
        document=ticket(2, body="Refund\tlate\n\nsee [1]", metadata={"tags": ["a", "b"], "n": 1.5}),
    )

    logged = {a.path: a.fields for a in Activity.objects.filter(op="create")}
    named = {"title": "Ticket 1", "path": "T-1"}  # what differs between the two items
    assert logged["T-1"] == [
        {**field, "to": named.get(field["path"], field["to"])} for field in logged["T-2"]
    ]
    assert {"path": "metadata", "from": None, "to": {"tags": ["a", "b"], "n": 1.5}} in logged["T-1"]


def test_activity_record_many__fields_encoded_for_a_create__not_used_for_an_update(small):
    before, after = {"path": "T-1", "title": "Old"}, {"path": "T-1", "title": "New"}
    created = EntityChange("item", LAYER, None, after, path="T-1")
    updated = EntityChange("item", LAYER, before, after, path="T-1")
    encoded = {("item", LAYER, "T-1", "create"): activity_fields_encoded(created)}

    activity_record_many([updated], user=None, origin=None, encoded=encoded)

    (entry,) = Activity.objects.all()
    assert entry.fields == [{"path": "title", "from": "Old", "to": "New"}]


# --- O(batch) ------------------------------------------------------------------------------


def cost_of(write) -> tuple[int, int]:
    """Return (SQL queries, Item rows loaded as model instances) of a write."""
    loaded = []

    def count(sender, **kwargs):
        if kwargs["instance"].pk is not None:  # a stored row, not an entry being mapped
            loaded.append(kwargs["instance"])

    post_init.connect(count, sender=Item)
    try:
        with CaptureQueriesContext(connection) as captured:
            write()
    finally:
        post_init.disconnect(count, sender=Item)
    return len(captured.captured_queries), len(loaded)


@pytest.mark.parametrize("layer_size", [4, 600])
def test_items_bulk_ingest__30_or_500_lines__same_queries_whatever_the_layer(
    db, layer_size, monkeypatch
):
    # The item change log prunes itself every 1,000 entries (ids go on across tests on
    # PostgreSQL): an occasional, amortized cost that would make the count depend on the order.
    monkeypatch.setattr("profiles.workspace.item_change_log.PRUNE_EVERY", 10**9)
    costs = []
    # (Both sizes write more rows of a kind than SMALL_INSERT: a few rows take one INSERT
    # that returns their ids, one query fewer than numbering many before their COPY.)
    for size in (30, 500):
        # Given a layer of `layer_size` items (and the batch's updates and deletes stored),
        workspace_import(document=small_workspace(items=layer_size), mode="replace")
        third = size // 3
        ingest([ticket(n) for n in range(third, 3 * third)])
        lines = [
            *(ticket(n) for n in range(third)),  # created
            *(ticket(n, title="Changed") for n in range(third, 2 * third)),  # updated
            *({"op": "delete", "path": f"T-{n}"} for n in range(2 * third, 3 * third)),
        ]
        operations = bulk_ingest_parse(text=ndjson(lines), ndjson=True, layer=LAYER)

        # when a batch of `size` lines creates, updates and deletes a third each,
        costs.append(cost_of(lambda ops=operations: items_bulk_ingest(layer=LAYER, operations=ops)))
        assert Activity.objects.filter(origin="bulk").count() >= 3 * third

    # then it costs the same number of queries, and loads no stored item as a model.
    assert costs[0] == costs[1], costs
    assert costs[1][1] == 0


# --- refused batches: every issue with its line, nothing written -------------------------


def test_bulk_ingest_parse__bad_lines__each_issue_names_the_operation_line_and_column(small):
    lines = [ticket(n) for n in range(20)]
    lines[16] = {"op": "upsert", "item": ticket(16, metadata={"customer_id": "C-1", "x": 1e999})}
    lines[18] = {"op": "remove", "path": "T-18"}
    text = ndjson(lines).replace("1e999", "Infinity")

    with pytest.raises(BatchInvalid) as caught:
        bulk_ingest_parse(text=text, ndjson=True, layer=LAYER)

    issues = [issue.as_dict() for issue in caught.value.issues]
    assert issues[0]["path"] == "[16]"
    assert issues[0]["line"] == 17
    assert "not valid JSON" in issues[0]["message"]
    assert issues[1]["path"] == "[18].op"
    assert issues[1]["line"] == 19
    assert text.splitlines()[18][issues[1]["column"] - 1 :].startswith('"remove"')


def test_bulk_ingest_parse__invalid_item__the_single_write_validation_at_its_field(small):
    lines = [ticket(n) for n in range(20)]
    deep = {"customer_id": {"a": {"b": {"c": {"d": "C-SECRET-1"}}}}}
    lines[16] = {"op": "upsert", "item": ticket(16, metadata=deep)}
    text = ndjson(lines)

    with pytest.raises(BatchInvalid) as caught:
        bulk_ingest_parse(text=text, ndjson=True, layer=LAYER)

    (issue,) = caught.value.issues
    assert (issue.path, issue.line, issue.entry) == (
        "[16].item.metadata",
        17,
        "item layer-001/T-16",
    )
    assert "must nest at most 4 levels" in issue.message
    assert "C-SECRET-1" not in str(caught.value.as_dict())  # the value is not echoed


def test_bulk_ingest_parse__path_given_twice__refused_naming_the_first(small):
    with pytest.raises(BatchInvalid) as caught:
        bulk_ingest_parse(
            text=ndjson([ticket(1), ticket(2), {"op": "delete", "path": "T-1"}]),
            ndjson=True,
            layer=LAYER,
        )

    (issue,) = caught.value.issues
    assert (issue.path, issue.line) == ("[2].path", 3)
    assert "first at [0], line 1" in issue.message


def test_bulk_ingest_parse__json_array__issues_located_in_the_text(small):
    lines = [ticket(1), {"op": "upsert", "item": ticket(2, unknown="x")}]
    text = json.dumps(lines, indent=2)

    with pytest.raises(BatchInvalid) as caught:
        bulk_ingest_parse(text=text, ndjson=False, layer=LAYER)

    (issue,) = caught.value.issues
    assert issue.path == "[1].item.unknown"
    assert text.splitlines()[issue.line - 1].strip() == '"unknown": "x"'


@pytest.mark.parametrize("text", ['{"path": "T-1"}', "[1, 2", "\ud800"])
def test_bulk_ingest_parse__json_body_not_an_array__not_readable(small, text):
    with pytest.raises(BatchNotReadable):
        bulk_ingest_parse(text=text, ndjson=False)


@pytest.mark.parametrize("ndjson_body", [True, False])
def test_bulk_ingest_parse__more_lines_than_allowed__too_large(small, settings, ndjson_body):
    settings.BULK_INGEST_MAX_LINES = 5
    lines = [ticket(n) for n in range(6)]
    text = ndjson(lines) if ndjson_body else json.dumps(lines)

    with pytest.raises(BatchTooLarge) as caught:
        bulk_ingest_parse(text=text, ndjson=ndjson_body)

    assert "split it into batches of at most 5" in str(caught.value)


def test_bulk_ingest_parse__path_too_long__not_repeated_in_the_error(small):
    with pytest.raises(BatchInvalid) as caught:
        bulk_ingest_parse(text=ndjson([ticket(1, path="T" * 5000)]), ndjson=True, layer=LAYER)

    (issue,) = caught.value.issues
    assert (issue.path, issue.entry) == ("[0].path", None)
    assert "T" * 300 not in str(caught.value.as_dict())


def test_bulk_ingest_parse__blank_lines__skipped_and_lines_still_counted(small):
    text = "\n" + json.dumps(ticket(1)) + "\n\n   \n" + json.dumps({"op": "delete"}) + "\n"

    with pytest.raises(BatchInvalid) as caught:
        bulk_ingest_parse(text=text, ndjson=True)

    (issue,) = caught.value.issues
    assert (issue.path, issue.line) == ("[1].path", 5)


def test_bulk_ingest_parse__150_bad_lines__100_listed_each_with_its_line(small):
    text = ndjson([{"op": "delete"} for _ in range(150)])

    with pytest.raises(BatchInvalid) as caught:
        bulk_ingest_parse(text=text, ndjson=True)

    error = caught.value.as_dict()["error"]
    assert len(error["issues"]) == 100
    assert error["moreIssues"] == 50
    assert [issue["line"] for issue in error["issues"]] == list(range(1, 101))

"""What an import writes: rows with their authors and dates, and a history record per row
written or changed with the content django-simple-history gives it."""

import copy
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, transaction
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from profiles.import_export.imports import workspace_import
from profiles.material.items import item_create
from profiles.material.layers import layer_create, layer_delete
from profiles.models import Activity, Consumer, Item, Layer, Profile, Rule
from profiles.workspace.bulk_writes import SMALL_INSERT, BulkWriter, json_encoder, rows_insert
from tests.profiles.conftest import small_workspace

pytestmark = pytest.mark.django_db

MODELS = (Consumer, Layer, Item, Profile, Rule)


def tracked(model) -> list[str]:
    return [field.attname for field in model.history.model.tracked_fields]


def rows_by_id(model) -> dict:
    return {row["id"]: row for row in model.objects.values(*tracked(model))}


def history_by_id(model, history_type: str) -> dict:
    records = model.history.filter(history_type=history_type).values(
        *tracked(model), "history_user_id", "history_change_reason", "history_date"
    )
    return {record["id"]: record for record in records}


@pytest.fixture
def author():
    return get_user_model().objects.create_user("importer")


def test_workspace_import__fresh__records_each_row_created_with_its_fields_and_author(author):
    workspace_import(document=small_workspace(layers=3, items=5), user=author)

    for model in MODELS:
        rows = rows_by_id(model)
        created = history_by_id(model, "+")
        assert rows, model
        assert set(created) == set(rows), model
        for row_id, row in rows.items():
            record = created[row_id]
            assert {name: record[name] for name in tracked(model)} == row, model
            assert record["history_user_id"] == author.pk
            assert record["history_change_reason"] is None
        assert model.history.exclude(history_type="+").count() == 0
    for model in (Consumer, Layer, Profile, Rule):
        assert set(model.objects.values_list("created_by_id", "updated_by_id")) == {
            (author.pk, author.pk)
        }
    for model in MODELS:
        assert not model.objects.filter(created_at__isnull=True).exists()
        assert not model.objects.filter(updated_at__isnull=True).exists()


def test_workspace_import__changed_rows__get_one_change_record_each_as_they_are_now(author):
    document = small_workspace(layers=2, items=4)
    workspace_import(document=document)
    document["layers"][0]["name"] = "Renamed"
    document["layers"][1]["items"][2]["body"] = "A new body."
    document["layers"][1]["items"][3]["metadata"] = {"updated": "2024-05-01", "tags": ["x"]}
    first_rule_layer = next(iter(document["profiles"][0]["rules"]))
    document["profiles"][0]["rules"][first_rule_layer] = {"maxItems": 2}
    item_created_at = dict(Item.objects.values_list("id", "created_at"))

    summary = workspace_import(document=document, user=author)

    assert summary.counts["layers"]["updated"] == 1
    assert summary.counts["items"]["updated"] == 2
    assert summary.counts["rules"]["updated"] == 1
    changed = {model: history_by_id(model, "~") for model in MODELS}
    assert {model.__name__: len(records) for model, records in changed.items()} == {
        "Consumer": 0,
        "Layer": 1,
        "Item": 2,
        "Profile": 0,
        "Rule": 1,
    }
    for model, records in changed.items():
        rows = rows_by_id(model)
        for row_id, record in records.items():
            assert {name: record[name] for name in tracked(model)} == rows[row_id]
            assert record["history_user_id"] == author.pk
    layer = Layer.objects.get(key=document["layers"][0]["key"])
    assert layer.name == "Renamed"
    assert layer.updated_by_id == author.pk and layer.created_by_id is None
    item = Item.objects.get(
        layer__key=document["layers"][1]["key"], path=document["layers"][1]["items"][3]["path"]
    )
    assert item.metadata == {"updated": "2024-05-01", "tags": ["x"]}
    assert item.created_at == item_created_at[item.pk] < item.updated_at
    rule = Rule.objects.get(
        profile__key=document["profiles"][0]["key"], layer__key=first_rule_layer
    )
    assert rule.max_items == 2 and rule.mode is None


def test_workspace_import__then_a_single_item_write__gets_a_fresh_id():
    workspace_import(document=small_workspace(layers=1, items=6))
    largest = max(Item.objects.values_list("id", flat=True))

    item = item_create(layer="layer-000", document={"path": "after/import.md"})

    assert item.pk > largest


def test_bulk_writer__row_the_database_refuses__raises_djangos_integrity_error():
    workspace_import(document=small_workspace(layers=1, items=2))
    layer = Layer.objects.get()
    writer = BulkWriter(user=None, now=timezone.now())
    row = {
        "layer_id": layer.pk,
        "path": "docs/item-0000.md",
        "title": "",
        "body": "",
        "metadata": {},
        "position": 9,
    }

    with pytest.raises(IntegrityError), transaction.atomic():
        writer.create(Item, [row])

    assert Item.objects.count() == 2


def without(document: dict, *, layers=(), paths=()) -> dict:
    """Return the document without the given layers (and their rules) and item paths."""
    return {
        **document,
        "layers": [
            {**layer, "items": [item for item in layer["items"] if item["path"] not in paths]}
            for layer in document["layers"]
            if layer["key"] not in layers
        ],
        "profiles": [
            {
                **profile,
                "rules": {k: v for k, v in profile["rules"].items() if k not in layers},
            }
            for profile in document["profiles"]
        ],
    }


def test_workspace_import__replace_deleting_items_and_a_layer__one_record_each_as_they_were(
    author,
):
    document = small_workspace(layers=3, items=5)
    workspace_import(document=document)
    before = rows_by_id(Item)
    dropped = ("docs/item-0001.md", "docs/item-0003.md")
    gone = {
        row_id
        for row_id, row in before.items()
        if row["layer_id"] == Layer.objects.get(key="layer-002").pk
        or Item.objects.get(pk=row_id).path in dropped
    }

    summary = workspace_import(
        document=without(document, layers=("layer-002",), paths=dropped),
        mode="replace",
        user=author,
    )

    assert summary.counts["items"]["deleted"] == len(gone) == 5 + 2 * 2
    assert set(rows_by_id(Item)) == set(before) - gone
    deleted = history_by_id(Item, "-")
    assert set(deleted) == gone
    for row_id, record in deleted.items():
        assert {name: record[name] for name in tracked(Item)} == before[row_id]
        assert record["history_user_id"] == author.pk
        assert record["history_change_reason"] is None


@pytest.mark.parametrize("items", [3, 60])
def test_workspace_import__replace_deleting_a_layer__queries_do_not_grow_with_its_items(
    items, django_assert_max_num_queries
):
    document = small_workspace(layers=2, items=items)
    workspace_import(document=document)

    # 60 items cost what 3 do: the items go in one read, one history write and one delete.
    with django_assert_max_num_queries(40):
        summary = workspace_import(
            document=without(document, layers=("layer-001",)), mode="replace"
        )

    assert summary.counts["items"]["deleted"] == items
    assert not Item.objects.filter(layer__key="layer-001").exists()
    assert Item.history.filter(history_type="-").count() == items


@pytest.mark.parametrize("items", [3, 60])
def test_layer_delete__many_items__a_record_each_in_queries_that_do_not_grow(
    items, author, django_assert_max_num_queries
):
    workspace_import(document=small_workspace(layers=2, items=items))
    before = {
        row_id: row
        for row_id, row in rows_by_id(Item).items()
        if row["layer_id"] == Layer.objects.get(key="layer-001").pk
    }

    with django_assert_max_num_queries(30):
        layer_delete(key="layer-001", user=author)

    deleted = history_by_id(Item, "-")
    assert set(deleted) == set(before) and len(before) == items
    for row_id, record in deleted.items():
        assert {name: record[name] for name in tracked(Item)} == before[row_id]
        assert record["history_user_id"] == author.pk
    assert Layer.history.filter(history_type="-").count() == 1


@pytest.mark.parametrize("items", [2, 60])
def test_layer_create__with_items__a_record_each_in_queries_that_do_not_grow(
    items, author, django_assert_max_num_queries
):
    workspace_import(document=small_workspace(layers=1, items=1))
    document = {
        "key": "fresh",
        "items": [
            {"path": f"fresh/{n}.md", "title": f"T{n}", "metadata": {"n": n}} for n in range(items)
        ],
    }

    with django_assert_max_num_queries(25):
        layer = layer_create(document=document, user=author)

    rows = {row_id: row for row_id, row in rows_by_id(Item).items() if row["layer_id"] == layer.pk}
    created = history_by_id(Item, "+")
    assert len(rows) == items
    assert [row["metadata"] for row in sorted(rows.values(), key=lambda r: r["position"])] == [
        {"n": n} for n in range(items)
    ]
    for row_id, row in rows.items():
        assert {name: created[row_id][name] for name in tracked(Item)} == row
        assert created[row_id]["history_user_id"] == author.pk


@pytest.mark.parametrize("mode", ["merge", "replace"])
def test_import__profiles_take_each_other_s_selections__all_written(mode):
    # Given two profiles of one consumer: profile-0 for objective-0, profile-1 for objective-1
    document = small_workspace(profiles=2)
    document["profiles"][1]["consumer"] = "assistant"
    workspace_import(document=document)

    # When an import gives profile-0 objective-1, profile-1 another one, and a new profile
    # objective-0 (each taking a selection another profile holds until it is written)
    changed = copy.deepcopy(document)
    first, second = changed["profiles"]
    first["objective"], second["objective"] = "objective-1", "objective-moved"
    changed["profiles"].append({**first, "key": "profile-new", "objective": "objective-0"})
    workspace_import(document=changed, mode=mode)

    # Then every profile has the selection the file gives (no transient conflict refused it)
    assert dict(Profile.objects.values_list("key", "objective")) == {
        "profile-0": "objective-1",
        "profile-1": "objective-moved",
        "profile-new": "objective-0",
    }
    assert not Profile.history.filter(objective__startswith="parked-").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("count", [1, SMALL_INSERT, SMALL_INSERT + 1, 40])
def test_rows_insert__few_or_many_rows__stored_alike(count):
    # A few rows go in one INSERT on PostgreSQL, more by COPY; the stored values are the same.
    at = timezone.now()
    rows = [
        {
            "at": at,
            "actor_id": None,
            "actor_name": "",
            "origin": "bulk",
            "change_request_id": None,
            "kind": "item",
            "key": "kb",
            "path": f"a/{n}",
            "op": "create",
            "fields": [{"path": "body", "from": None, "to": 'tab\there, "quoted", \\ and ü'}],
        }
        for n in range(count)
    ]

    rows_insert(Activity, rows)

    stored = list(Activity.objects.order_by("path").values("at", "path", "fields"))
    assert len(stored) == count
    assert {row["at"] for row in stored} == {at}
    assert all(row["fields"] == rows[0]["fields"] for row in stored)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True)
    | st.text()
    | st.datetimes(timezones=st.just(timezone.UTC))
    | st.decimals(allow_nan=False)
    | st.uuids(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


def outcome(encode, value):
    try:
        return encode(value)
    except (TypeError, ValueError) as exc:
        return type(exc)


@given(json_values)
def test_json_encoder__any_value__the_text_json_dumps_gives(value):
    for cls in (None, DjangoJSONEncoder):
        expected = outcome(lambda value, cls=cls: json.dumps(value, cls=cls), value)
        assert outcome(json_encoder(cls).encode, value) == expected

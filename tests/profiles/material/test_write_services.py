"""The one write path: each service writes one entry at O(change), with history and tokens."""

import pytest
from django.db import connection
from django.db.models.signals import post_init
from django.test.utils import CaptureQueriesContext

from profiles.authoring.profiles import profile_create, profile_update, rule_update
from profiles.authoring.scenarios import ScenarioNameTaken, scenario_save, scenarios_upsert
from profiles.import_export.imports import workspace_import
from profiles.material.consumers import consumer_create, consumer_delete
from profiles.material.items import item_create, item_delete, item_update
from profiles.material.layers import layer_delete, layer_update
from profiles.models import Consumer, Item, Layer, Profile, Rule, Scenario, WorkspaceVersion
from profiles.workspace.concurrency import PreconditionFailed, item_etag, profile_etag
from profiles.workspace.writing import Conflict, EntryInvalid
from tests.profiles.conftest import NOW, small_workspace

pytestmark = pytest.mark.django_db


def tokens() -> dict:
    version = WorkspaceVersion.objects.get(pk=1)
    return {
        "workspace": version.token,
        "profiles": version.profiles_token,
        **{key: token for key, token in Layer.objects.values_list("key", "content_token")},
    }


def cost_of(write) -> tuple[int, int]:
    """Return (SQL queries, Item rows loaded) of a write."""
    loaded = []

    def count(sender, **kwargs):
        loaded.append(kwargs["instance"])

    post_init.connect(count, sender=Item)
    try:
        with CaptureQueriesContext(connection) as captured:
            write()
    finally:
        post_init.disconnect(count, sender=Item)
    return len(captured.captured_queries), len(loaded)


# --- O(change): the same number of queries whatever the size ------------------------------


@pytest.mark.parametrize(
    "write",
    [
        lambda n: item_update(
            layer="layer-000", path="docs/item-0001.md", changes={"body": f"edit {n}"}
        ),
        lambda n: item_create(layer="layer-000", document={"path": f"new-{n}", "title": "New"}),
        lambda n: item_delete(layer="layer-000", path="docs/item-0002.md"),
        lambda n: layer_update(key="layer-000", changes={"name": f"Layer {n}"}),
        lambda n: rule_update(profile="profile-0", layer="layer-000", changes={"maxItems": n}),
        lambda n: profile_update(key="profile-0", changes={"budget": 900 + n}),
    ],
    ids=["item_update", "item_create", "item_delete", "layer_update", "rule_update", "profile"],
)
def test_single_entry_write__10_or_500_items__same_queries_and_no_other_item_read(write):
    costs = []
    for size in (10, 500):
        # Given a workspace whose layers have `size` items each,
        workspace_import(document=small_workspace(items=size), mode="replace")

        # when one entry is written,
        costs.append(cost_of(lambda size=size: write(size)))

    # then the write costs the same whatever the size, and reads no item but its own.
    assert costs[0] == costs[1]
    assert costs[1][1] <= 1


# --- items ----------------------------------------------------------------------------------


def test_item_update_then_delete__history_records_each_by_its_author_with_the_values(
    django_user_model,
):
    workspace_import(document=small_workspace())
    user = django_user_model.objects.create_user("writer")
    tracked = [field.attname for field in Item.history.model.tracked_fields]
    item = Item.objects.get(layer__key="layer-001", path="docs/item-0002.md")
    counted = Layer.objects.get(key="layer-001").items_counted

    # When an item is changed, then deleted, by a user,
    updated = item_update(
        layer="layer-001",
        path=item.path,
        changes={"title": "Renamed", "metadata": {"k": "v"}},
        user=user,
    )
    stored = Item.objects.get(pk=item.pk)
    item_delete(layer="layer-001", path=item.path, user=user)

    # then the change is stored with its date, and each write has its history record,
    assert (stored.title, stored.metadata, stored.updated_at) == (
        "Renamed",
        {"k": "v"},
        updated.updated_at,
    )
    assert stored.updated_at > item.updated_at
    changed, deleted = item.history.filter(history_type__in="~-").order_by("history_id")
    for record, values in ((changed, stored), (deleted, stored)):
        assert record.history_user == user
        assert [getattr(record, name) for name in tracked] == [
            getattr(values, name) for name in tracked
        ]
    assert (changed.history_type, deleted.history_type) == ("~", "-")
    assert changed.history_date == stored.updated_at
    # and the item is gone, its layer counting one fewer.
    assert not Item.objects.filter(pk=item.pk).exists()
    assert Layer.objects.get(key="layer-001").items_counted == counted - 1


def test_item_update__one_field__changes_it_records_the_author_and_bumps_only_its_layer(
    django_user_model,
):
    workspace_import(document=small_workspace())
    user = django_user_model.objects.create_user("writer")
    before = tokens()

    item = item_update(
        layer="layer-001", path="docs/item-0002.md", changes={"title": "Renamed"}, user=user
    )

    after = tokens()
    assert Item.objects.get(pk=item.pk).title == "Renamed"
    assert item.history.first().history_user == user
    assert after["layer-001"] != before["layer-001"]
    assert after["workspace"] != before["workspace"]
    assert {key: after[key] for key in ("layer-000", "layer-002", "profiles")} == {
        key: before[key] for key in ("layer-000", "layer-002", "profiles")
    }


def test_item_create__by_a_user__stored_last_with_its_history_count_and_author(
    django_user_model,
):
    workspace_import(document=small_workspace())
    user = django_user_model.objects.create_user("writer")
    layer = Layer.objects.get(key="layer-001")
    last = Item.objects.filter(layer=layer).order_by("-position").first()
    counted = layer.items_counted
    before = tokens()

    # When an item is created by a user,
    item = item_create(
        layer="layer-001",
        document={"path": "new.md", "title": "New", "body": "Text", "metadata": {"a": [1]}},
        user=user,
    )

    # then the returned item is the stored row, last in its layer, with its dates,
    stored = Item.objects.get(pk=item.pk)
    assert not item._state.adding
    assert (stored.path, stored.title, stored.body, stored.metadata) == (
        "new.md",
        "New",
        "Text",
        {"a": [1]},
    )
    assert stored.position == item.position == last.position + 1
    assert stored.created_at == stored.updated_at == item.updated_at
    # its one history record is a creation by the user with the stored values,
    (record,) = stored.history.all()
    assert (record.history_type, record.history_user, record.history_change_reason) == (
        "+",
        user,
        None,
    )
    assert record.history_date == stored.updated_at
    assert [getattr(record, f.attname) for f in Item.history.model.tracked_fields] == [
        getattr(stored, f.attname) for f in Item.history.model.tracked_fields
    ]
    # its layer counts it and only its layer's token moved.
    after = tokens()
    assert Layer.objects.get(pk=layer.pk).items_counted == counted + 1
    assert after["layer-001"] != before["layer-001"]
    assert after["layer-000"] == before["layer-000"]


def test_item_create__path_taken__conflict_and_nothing_written():
    workspace_import(document=small_workspace())
    before = tokens()
    count = Item.objects.count()

    with pytest.raises(Conflict) as caught:
        item_create(layer="layer-000", document={"path": "docs/item-0000.md", "title": "Again"})

    assert caught.value.path == "path"
    assert (Item.objects.count(), tokens()) == (count, before)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's round trips")
def test_item_create__postgresql__its_statements_each_write_one_thing():
    workspace_import(document=small_workspace())

    with CaptureQueriesContext(connection) as captured:
        item_create(layer="layer-000", document={"path": "new.md", "title": "New"})

    # The writers' lock with its timeout is one statement; the change log's INSERT returns
    # its id (no nextval first); the layer's token and count are one UPDATE.
    sql = [
        query["sql"]
        for query in captured.captured_queries
        if not query["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))  # the test's own
    ]
    (lock,) = [text for text in sql if "lock_timeout" in text]
    assert "FOR UPDATE" in lock
    assert not [text for text in sql if "nextval" in text]
    (layer_update,) = [text for text in sql if text.startswith('UPDATE "profiles_layer"')]
    assert "content_token" in layer_update and "items_counted" in layer_update
    # Before: 14 (lock_timeout and the lock apart, a nextval, two layer updates).
    assert len(sql) == 11, [text[:80] for text in sql]


def test_item_update__same_values__writes_nothing_and_keeps_the_version():
    workspace_import(document=small_workspace())
    before = tokens()
    item = Item.objects.get(layer__key="layer-000", path="docs/item-0000.md")

    item_update(layer="layer-000", path=item.path, changes={"title": item.title})

    assert tokens() == before
    assert item.history.count() == 1


def test_item_update__stale_if_match__refused_and_nothing_changes():
    workspace_import(document=small_workspace())
    item = Item.objects.get(layer__key="layer-000", path="docs/item-0000.md")
    before = tokens()

    with pytest.raises(PreconditionFailed) as caught:
        item_update(layer="layer-000", path=item.path, changes={"title": "x"}, if_match='"stale"')

    assert caught.value.current_etag == item_etag(item)
    assert Item.objects.get(pk=item.pk).title == item.title
    assert tokens() == before


def test_item_update__invalid_field__entry_invalid_at_its_document_path():
    workspace_import(document=small_workspace())

    with pytest.raises(EntryInvalid) as caught:
        item_update(layer="layer-001", path="docs/item-0003.md", changes={"title": ["a"]})

    body = caught.value.as_dict()["error"]
    assert body["path"] == "layers[1].items[3].title"
    assert body["field"] == "title"


@pytest.mark.parametrize("text", ["nul\x00inside", "lone \ud800 surrogate"])
def test_item_update__text_the_database_cannot_store__refused_at_the_field(text):
    workspace_import(document=small_workspace())

    with pytest.raises(EntryInvalid) as caught:
        item_update(layer="layer-000", path="docs/item-0000.md", changes={"body": text})

    assert caught.value.as_dict()["error"]["field"] == "body"


def test_item_create__path_taken__conflict_at_path_and_nothing_written():
    workspace_import(document=small_workspace())
    before = tokens()

    with pytest.raises(Conflict) as caught:
        item_create(layer="layer-000", document={"path": "docs/item-0000.md"})

    assert caught.value.path == "path"
    assert Item.objects.filter(layer__key="layer-000").count() == 4
    assert tokens() == before


# --- consumers, layers ----------------------------------------------------------------------


def test_consumer_create__key_taken__conflict_naming_the_key():
    workspace_import(document=small_workspace())

    with pytest.raises(Conflict) as caught:
        consumer_create(document={"key": "assistant"})

    assert str(caught.value) == 'key: consumer "assistant" already exists'
    assert caught.value.path == "key"


def test_consumer_delete__used_by_a_profile__conflict_and_kept():
    workspace_import(document=small_workspace())

    with pytest.raises(Conflict):
        consumer_delete(key="assistant")

    assert Consumer.objects.filter(key="assistant").exists()


def test_layer_update__name__bumps_its_token_not_the_profiles_token():
    workspace_import(document=small_workspace())
    before = tokens()

    layer_update(key="layer-002", changes={"name": "Renamed"})

    after = tokens()
    assert after["layer-002"] != before["layer-002"]
    assert after["profiles"] == before["profiles"]
    assert after["layer-000"] == before["layer-000"]


def test_layer_delete__rules_use_it__conflict_and_kept():
    workspace_import(document=small_workspace())

    with pytest.raises(Conflict):
        layer_delete(key="layer-000")

    assert Layer.objects.filter(key="layer-000").exists()


# --- profiles and rules -----------------------------------------------------------------------


def test_rule_update__bumps_the_profiles_token_and_no_layer_token():
    workspace_import(document=small_workspace())
    before = tokens()

    rule_update(profile="profile-0", layer="layer-001", changes={"mode": "on-demand"})

    after = tokens()
    assert after["profiles"] != before["profiles"]
    assert all(after[key] == before[key] for key in ("layer-000", "layer-001", "layer-002"))
    rule = Rule.objects.get(profile__key="profile-0", layer__key="layer-001")
    assert rule.mode == "on-demand"


def test_rule_update__stale_profile_etag__refused():
    workspace_import(document=small_workspace())
    etag = profile_etag(Profile.objects.get(key="profile-0"))
    rule_update(profile="profile-0", layer="layer-000", changes={"maxItems": 1}, if_match=etag)

    with pytest.raises(PreconditionFailed):
        rule_update(profile="profile-0", layer="layer-000", changes={"maxItems": 2}, if_match=etag)

    assert Rule.objects.get(profile__key="profile-0", layer__key="layer-000").max_items == 1


def test_profile_update__selection_of_another_profile__invalid_at_the_profile_path():
    workspace_import(document=small_workspace())

    with pytest.raises(EntryInvalid) as caught:
        profile_update(
            key="profile-1", changes={"consumer": "assistant", "objective": "objective-0"}
        )

    assert caught.value.issues[0].path == "profiles[1]"
    assert "profile-0" in caught.value.issues[0].message
    assert Profile.objects.get(key="profile-1").objective == "objective-1"


def test_profile_create__with_rules__creates_both_in_document_order():
    workspace_import(document=small_workspace())

    profile_create(
        document={
            "key": "fresh",
            "consumer": "reviewer",
            "objective": "new",
            "budget": 10,
            "rules": {"layer-002": {"mode": "retrieve"}, "layer-000": {}},
        }
    )

    rules = Rule.objects.filter(profile__key="fresh").order_by("position")
    assert [rule.layer.key for rule in rules] == ["layer-002", "layer-000"]


# --- scenarios --------------------------------------------------------------------------------


def test_scenario_save__name_of_another_profiles_scenario__refused_and_not_moved():
    # Given profile-1's default scenario "Late refund",
    workspace_import(document=small_workspace())
    scenarios_upsert(
        scenarios=[{"name": "Late refund", "profile": "profile-1", "input": {}, "default": True}]
    )

    # when the editor of profile-0 saves its sample under the same name,
    with pytest.raises(ScenarioNameTaken):
        scenario_save(profile="profile-0", name="Late refund", request={"now": NOW})

    # then profile-1 keeps its scenario, still its default.
    scenario = Scenario.objects.get(name="Late refund")
    assert (scenario.profile.key, scenario.is_default, scenario.now) == ("profile-1", True, None)


def test_scenario_save__name_of_its_own_scenario__overwrites_it_and_keeps_the_default():
    workspace_import(document=small_workspace())
    scenarios_upsert(
        scenarios=[{"name": "Late refund", "profile": "profile-0", "input": {}, "default": True}]
    )

    scenario_save(profile="profile-0", name="Late refund", request={"now": NOW})

    scenario = Scenario.objects.get(name="Late refund")
    assert (scenario.profile.key, scenario.is_default, scenario.now) == ("profile-0", True, NOW)


# --- the import -------------------------------------------------------------------------------


def test_workspace_import__one_item_changed__bumps_only_that_layers_token():
    document = small_workspace()
    workspace_import(document=document)
    before = tokens()
    document["layers"][2]["items"][1]["body"] = "changed"

    workspace_import(document=document, mode="replace")

    after = tokens()
    assert after["layer-002"] != before["layer-002"]
    assert {key: after[key] for key in ("layer-000", "layer-001", "profiles")} == {
        key: before[key] for key in ("layer-000", "layer-001", "profiles")
    }

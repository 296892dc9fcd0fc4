"""The compiled-workspace cache and the cost of a resolution in SQL queries."""

import gc
import random
import tracemalloc

import pytest

from profiles.authoring.profiles import profile_update, rule_delete
from profiles.import_export.imports import workspace_import
from profiles.material.items import item_create, item_delete, item_update
from profiles.material.layers import layer_update
from profiles.models import Item, Rule
from profiles.resolution.services import profile_resolve
from profiles.workspace import cache
from profiles.workspace import item_change_log as item_changes
from profiles.workspace.mappers import map_rows_to_document
from profiles.workspace.selectors import workspace_rows_get
from resolver import compile_workspace
from tests.profiles.conftest import REQUEST, small_workspace

pytestmark = pytest.mark.django_db

# One query for the version token, one for the layers' content tokens, four for the small
# sections (consumers, layers, profiles, rules), one for the held layers' stored terms, one
# for their items and, the first time a version of them is compiled, one that reads their
# texts into the file every worker maps (profiles.workspace.held_texts);
# a warm cache needs the token only. The request reads a served (filtered) layer: one more
# query fetches its customer's items, whatever the number of served layers; the same request
# again finds them remembered (until a served layer changes).
COLD_RESOLUTION_QUERIES = 10
WARM_RESOLUTION_QUERIES = 1


def rendered_text(resolution: dict) -> str:
    return (resolution["output"] or {}).get("text", "")


def test_profile_resolve__item_edited_after_a_resolution__next_resolution_sees_the_edit():
    workspace_import(document=small_workspace())
    before = profile_resolve(profile="profile-0", request=REQUEST)
    item_update(
        layer="layer-000", path="docs/item-0000.md", changes={"title": "Freshly edited title"}
    )
    after = profile_resolve(profile="profile-0", request=REQUEST)

    assert "Freshly edited title" not in rendered_text(before)
    assert "Freshly edited title" in rendered_text(after)


def test_profile_resolve__rule_deleted__next_resolution_uses_the_default_rule():
    workspace_import(document=small_workspace())
    profile_resolve(profile="profile-0", request=REQUEST)

    rule_delete(profile="profile-0", layer="layer-000")
    after = profile_resolve(profile="profile-0", request=REQUEST)

    layer = next(entry for entry in after["layers"] if entry["layer"] == "layer-000")
    assert layer["ruleSource"] == "default"


def test_profile_resolve__nothing_changed__does_not_recompile():
    workspace_import(document=small_workspace())
    profile_resolve(profile="profile-0", request=REQUEST)
    compiled_after_first = cache.compilations

    for _ in range(3):
        profile_resolve(profile="profile-1", request=REQUEST)

    assert cache.compilations == compiled_after_first


def test_profile_resolve__layer_renamed_through_the_service__recompiles_once():
    workspace_import(document=small_workspace())
    profile_resolve(profile="profile-0", request=REQUEST)
    compiled_before = cache.compilations

    layer_update(key="layer-000", changes={"name": "Renamed layer"})
    first = profile_resolve(profile="profile-0", request=REQUEST)
    profile_resolve(profile="profile-0", request=REQUEST)

    assert cache.compilations == compiled_before + 1
    assert "## Renamed layer" in rendered_text(first)


@pytest.mark.parametrize(("scale", "layers", "items"), [("small", 3, 4), ("50x", 30, 20)])
def test_profile_resolve__any_workspace_size__costs_a_constant_number_of_queries(
    scale, layers, items, django_assert_max_num_queries, django_assert_num_queries
):
    # Given a workspace of `layers` × `items` (the 50x one has 50 times the items)
    workspace_import(document=small_workspace(layers=layers, items=items, profiles=4))
    assert Item.objects.count() == layers * items
    cache.workspace_cache_clear()

    # When a resolution compiles the workspace, and another one reuses it
    with django_assert_max_num_queries(COLD_RESOLUTION_QUERIES):
        cold = profile_resolve(profile="profile-0", request=REQUEST)
    with django_assert_num_queries(WARM_RESOLUTION_QUERIES):
        warm = profile_resolve(profile="profile-0", request=REQUEST)

    # Then both cost the same bound whatever the size, and give the same answer
    assert cold == warm
    assert cold["status"] in {"RESOLVED", "RENDERING_INCOMPLETE", "BLOCKED"}


def test_profile_resolve__draft_overrides__resolve_unsaved_edits_without_writing():
    workspace_import(document=small_workspace())

    draft = profile_resolve(
        profile="profile-0",
        request=REQUEST,
        rule_overrides={"layer-000": {"participation": "exclude"}},
        budget_override=123,
    )
    saved = profile_resolve(profile="profile-0", request=REQUEST)

    draft_layer = next(entry for entry in draft["layers"] if entry["layer"] == "layer-000")
    saved_layer = next(entry for entry in saved["layers"] if entry["layer"] == "layer-000")
    assert draft_layer["decision"]["reason"] == "EXCLUDED_BY_PROFILE"
    assert draft["budget"]["limit"] == 123
    assert saved_layer["decision"]["reason"] != "EXCLUDED_BY_PROFILE"
    assert Rule.objects.get(profile__key="profile-0", layer__key="layer-000").participation is None


def edit_item(item: Item, number: int) -> None:
    """Change one item's body through the write service (which bumps its layer's token).

    The bodies alternate between two texts: new words would grow the engine's bounded word
    caches, which is not what the memory test looks for.
    """
    body = "Edited refund body, " + ("even" if number % 2 == 0 else "odd") + " edition."
    item_update(layer=item.layer.key, path=item.path, changes={"body": body})


def test_workspace_get__100_item_edits_each_resolved__memory_stays_flat():
    # Given a compiled workspace of 10,000 items (one compilation is ~20 MB here, each of its
    # four layers ~5 MB), traced from before a few warm-up edits (so the compilation alive at
    # the start is traced too, and its release counts)
    workspace_import(document=small_workspace(layers=4, items=2_500))
    item = Item.objects.filter(layer__key="layer-000").order_by("position").first()
    tracemalloc.start()
    try:
        for number in range(5):
            edit_item(item, number)
            profile_resolve(profile="profile-0", request=REQUEST)
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        compiled_size = before - traced_without_compilation()
        # When 100 edits are made, each followed by a resolution (a recompile)
        for number in range(100):
            # A request's objects form reference cycles and are alive while it recompiles
            # (a frozen cycle is never collected: this is what leaked under gunicorn).
            request_like = {"body": bytearray(16 * 1024)}
            request_like["self"] = request_like
            edit_item(item, 100 + number)
            profile_resolve(profile="profile-0", request=REQUEST)
            del request_like
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()

    # Then the process holds one compilation, not a hundred, nor a hundred copies of the
    # edited layer: what remains is bounded caches (psycopg's statements, the engine's
    # shared record lists), a few hundred KB whatever the number of edits
    assert grown < 512 * 1024, f"memory grew by {grown:,} bytes over 100 edits"
    assert compiled_size > 8_000_000, compiled_size  # the workspace is large enough to tell
    assert "odd edition" in rendered_text(profile_resolve(profile="profile-0", request=REQUEST))
    assert cache.compilations >= 100


def traced_without_compilation() -> int:
    """Return the traced memory once the cached compilation is dropped (it is then rebuilt
    by the next read)."""
    cache.workspace_cache_clear()
    gc.collect()
    without = tracemalloc.get_traced_memory()[0]
    cache.workspace_get()
    return without


def fresh_compilation():
    """Return the document and compilation of the stored rows, read and compiled anew."""
    document = map_rows_to_document(workspace_rows_get())
    return document, compile_workspace(document)


def held(document: dict) -> dict:
    """Return the document as a worker holds it: a filtered layer is served (its items are
    fetched per request, profiles.workspace.served), so its entry has none."""
    return {
        **document,
        "layers": [
            {**layer, "items": []} if layer.get("itemFilter") else layer
            for layer in document["layers"]
        ],
    }


def assert_current(requests=(REQUEST,)) -> None:
    """Assert the cached workspace equals a fresh compilation of the stored rows: the same
    document (served layers without items), the same held layers, profiles and consumers,
    the same served layers, and the same answers (their totals are each request's own)."""
    cached = cache.workspace_get()
    document, fresh = fresh_compilation()
    assert cached.document == held(document)
    mine, theirs = cached.compiled.workspace, fresh.workspace
    assert (mine.consumers, mine.profiles) == (theirs.consumers, theirs.profiles)
    assert [layer for layer in mine.layers if layer.total is None] == [
        layer for layer in theirs.layers if not layer.item_filter
    ]
    assert {layer.key for layer in mine.layers if layer.total is not None} == {
        layer.key for layer in theirs.layers if layer.item_filter
    }
    for request in requests:
        assert cached.compiled.resolve(request) == fresh.resolve(request)


def test_workspace_get__one_item_edited__reads_only_that_item():
    workspace_import(document=small_workspace(layers=4, items=20))
    profile_resolve(profile="profile-0", request=REQUEST)
    item = Item.objects.filter(layer__key="layer-002").first()

    edit_item(item, 7)
    after = profile_resolve(profile="profile-0", request=REQUEST)

    assert (cache.layers_read, cache.items_read, cache.compiled_document) == (0, 1, False)
    assert_current()
    assert after == profile_resolve(profile="profile-0", request=REQUEST)


def test_workspace_get__held_items__metadata_names_and_short_values_held_once():
    document = small_workspace(layers=2, items=30)
    long_text = "x" * (cache.SHARED_CHARS + 1)
    for layer in document["layers"]:
        layer.pop("itemFilter", None)  # held by the worker
        for item in layer["items"]:
            item["metadata"] = {
                "updated": "2026-11-01",
                "tags": ["open", {"team": "billing"}],
                "note": long_text,
                "size": 3,
            }
    workspace_import(document=document)

    # When a worker reads the held layers' items,
    items = [
        item for layer in cache.workspace_get().compiled.workspace.layers for item in layer.items
    ]

    # then equal field names and short strings are one object each, long texts stay apart,
    assert len(items) == 60
    first = items[0].metadata
    for item in items[1:]:
        assert [id(key) for key in item.metadata] == [id(key) for key in first]
        assert item.metadata["updated"] is first["updated"]
        assert item.metadata["tags"][1]["team"] is first["tags"][1]["team"]
        assert item.metadata["note"] == long_text and item.metadata["note"] is not first["note"]
    # and the values, the document and the answers are those of a fresh compilation.
    assert first == document["layers"][0]["items"][0]["metadata"]
    assert_current()


# A catch-up after item writes: the version, the change log, the layer rows, the changed
# items. After a profile write: the version, the log, the layer rows, consumers, profiles,
# rules (no item).
ITEM_EDIT_QUERIES = 4
PROFILE_EDIT_QUERIES = 6


@pytest.mark.parametrize(("layers", "items"), [(3, 4), (30, 20)])
def test_workspace_get__after_an_item_or_a_profile_edit__constant_queries_whatever_the_size(
    layers, items, django_assert_num_queries
):
    # Given a compiled workspace of `layers` × `items` (the second has 50 times the items)
    workspace_import(document=small_workspace(layers=layers, items=items, profiles=4))
    cache.workspace_get()

    # When an item is edited, or a profile's budget, the next read catches up
    item_update(layer="layer-000", path="docs/item-0001.md", changes={"body": "Card refunds."})
    with django_assert_num_queries(ITEM_EDIT_QUERIES):
        cache.workspace_get()
    items_read_after_item_edit = cache.items_read
    profile_update(key="profile-1", changes={"budget": 900})
    with django_assert_num_queries(PROFILE_EDIT_QUERIES):
        cache.workspace_get()

    # Then each costs the same number of queries at both sizes, and reads no layer whole
    assert items_read_after_item_edit == 1
    assert (cache.layers_read, cache.items_read) == (0, 0)
    assert_current()


def test_workspace_get__items_created_deleted_recreated_and_moved__match_a_fresh_compilation():
    workspace_import(document=small_workspace(layers=3, items=6))
    cache.workspace_get()
    layer = "layer-000"

    # A new item, an item deleted, an item deleted and created again (it moves to the end),
    # an item whose path changes (its layer is read again), all before one catch-up
    item_create(layer=layer, document={"path": "docs/new.md", "body": "New refund card note."})
    item_delete(layer=layer, path="docs/item-0002.md")
    item_delete(layer=layer, path="docs/item-0003.md")
    item_create(layer=layer, document={"path": "docs/item-0003.md", "body": "Cards again."})
    item_update(layer=layer, path="docs/item-0004.md", changes={"title": "Retitled"})
    assert_current()
    assert (cache.layers_read, cache.items_read) == (0, 3)
    paths = [item["path"] for item in cache.workspace_get().document["layers"][0]["items"]]
    assert paths[-2:] == ["docs/new.md", "docs/item-0003.md"]

    item_update(layer=layer, path="docs/item-0005.md", changes={"path": "docs/renamed.md"})
    assert_current()
    assert cache.layers_read == 1


def test_workspace_get__log_pruned_past_the_worker__reads_everything_again():
    workspace_import(document=small_workspace(layers=3, items=6))
    cache.workspace_get()
    item_update(layer="layer-001", path="docs/item-0001.md", changes={"body": "Pruned away."})

    item_changes.item_changes_prune(before=item_changes.item_changes_last() + 1)
    assert_current()

    # Every layer the workers hold is read again (layer-001 is served: it holds no items)
    assert cache.layers_read == 2


def test_workspace_get__layer_fields_changed__items_kept_without_reading_them():
    workspace_import(document=small_workspace(layers=3, items=6))
    cache.workspace_get()

    layer_update(key="layer-002", changes={"name": "Renamed layer"})
    assert_current()
    assert (cache.layers_read, cache.items_read, cache.compiled_document) == (0, 0, True)

    # Both at once: the layer's fields and one of its items
    layer_update(key="layer-002", changes={"name": "Renamed again"})
    item_update(layer="layer-002", path="docs/item-0001.md", changes={"title": "Both"})
    assert_current()


def test_workspace_get__many_items_of_a_layer_changed__reads_that_layer_once():
    workspace_import(document=small_workspace(layers=2, items=40))
    cache.workspace_get()

    for number in range(20):
        item_update(
            layer="layer-000", path=f"docs/item-{number:04d}.md", changes={"title": f"T{number}"}
        )
    assert_current()

    assert (cache.layers_read, cache.items_read) == (1, 40)


def test_workspace_get__random_writes_between_reads__always_match_a_fresh_compilation():
    # Given a workspace compiled once, then a seeded sequence of writes of every kind, with a
    # read after a random number of them
    rng = random.Random(20261201)
    workspace_import(document=small_workspace(layers=4, items=8))
    cache.workspace_get()
    retrieve = {**REQUEST, "profile": "profile-1", "input": {"message": "refund note cards"}}
    created = 0
    for step in range(60):
        layer = f"layer-{rng.randrange(4):03d}"
        paths = list(
            Item.objects.filter(layer__key=layer)
            .order_by("position")
            .values_list("path", flat=True)
        )
        action = rng.choice(["create", "update", "update", "delete", "move", "layer", "profile"])
        if action == "create" or not paths:
            created += 1
            body = rng.choice(["Refund note.", "Card reissue steps.", "Cards refund fast."])
            item_create(layer=layer, document={"path": f"docs/new-{created}.md", "body": body})
        elif action == "update":
            path = rng.choice(paths)
            changes = rng.choice([{"body": f"Refund {step} cards."}, {"title": f"Title {step}"}])
            item_update(layer=layer, path=path, changes=changes)
        elif action == "delete":
            item_delete(layer=layer, path=rng.choice(paths))
        elif action == "move":
            created += 1
            item_update(layer=layer, path=rng.choice(paths), changes={"path": f"m/{created}.md"})
        elif action == "layer":
            layer_update(key=layer, changes={"description": f"Described at step {step}"})
        else:
            profile_update(key="profile-0", changes={"budget": 700 + step})
        # Then every read equals a fresh compilation of the stored rows
        if rng.random() < 0.5:
            assert_current(requests=(REQUEST, retrieve))
    assert_current(requests=(REQUEST, retrieve))

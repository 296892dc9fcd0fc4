"""The compiled-workspace cache and the cost of a resolution in SQL queries."""

import gc
import tracemalloc

import pytest

from profiles import cache
from profiles.mappers import map_rows_to_document
from profiles.models import Item, Rule
from profiles.selectors import workspace_rows_get
from profiles.services import (
    item_update,
    layer_update,
    profile_resolve,
    rule_delete,
    workspace_import,
)
from tests.profiles.conftest import REQUEST, small_workspace

pytestmark = pytest.mark.django_db

# One query for the version token, one for the layers' content tokens, four for the small
# sections (consumers, layers, profiles, rules) and one for the items of the changed layers;
# a warm cache needs the token only.
COLD_RESOLUTION_QUERIES = 7
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
    # Given a compiled workspace of 800 items, traced from before a few warm-up edits (so the
    # compilation alive at the start is traced too, and its release counts)
    workspace_import(document=small_workspace(layers=4, items=200))
    item = Item.objects.filter(layer__key="layer-000").order_by("position").first()
    tracemalloc.start()
    try:
        for number in range(5):
            edit_item(item, number)
            profile_resolve(profile="profile-0", request=REQUEST)
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        # When 100 edits are made, each followed by a resolution (a recompile)
        for number in range(100):
            # A request's objects form reference cycles and are alive while it recompiles
            # (a frozen cycle is never collected: this is what leaked under gunicorn).
            request_like = {"body": bytearray(16 * 1024)}
            request_like["self"] = request_like
            edit_item(item, 100 + number)
            resolution = profile_resolve(profile="profile-0", request=REQUEST)
            del request_like
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()

    # Then the process holds one compilation, not a hundred (one is ~1.5 MB here)
    assert "odd edition" in rendered_text(resolution)
    assert cache.compilations >= 100
    assert grown < 256 * 1024, f"memory grew by {grown:,} bytes over 100 edits"


def test_workspace_get__one_item_edited__rereads_only_that_layer():
    workspace_import(document=small_workspace(layers=4, items=20))
    profile_resolve(profile="profile-0", request=REQUEST)
    item = Item.objects.filter(layer__key="layer-002").first()

    edit_item(item, 7)
    after = profile_resolve(profile="profile-0", request=REQUEST)

    assert cache.layers_read == 1
    assert cache.workspace_get().document == map_rows_to_document(workspace_rows_get())
    assert after == profile_resolve(profile="profile-0", request=REQUEST)

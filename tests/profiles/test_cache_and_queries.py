"""The compiled-workspace cache and the cost of a resolution in SQL queries."""

import pytest

from profiles import cache
from profiles.models import Item, Layer, Rule
from profiles.services import profile_resolve, workspace_import
from tests.profiles.conftest import REQUEST, small_workspace

pytestmark = pytest.mark.django_db

# One query for the version token, five for the rows (consumers, layers, items, profiles,
# rules); a warm cache needs the token only.
COLD_RESOLUTION_QUERIES = 6
WARM_RESOLUTION_QUERIES = 1


def rendered_text(resolution: dict) -> str:
    return (resolution["output"] or {}).get("text", "")


def test_profile_resolve__item_edited_after_a_resolution__next_resolution_sees_the_edit():
    workspace_import(document=small_workspace())
    before = profile_resolve(profile="profile-0", request=REQUEST)
    item = Item.objects.get(layer__key="layer-000", path="docs/item-0000.md")

    item.title = "Freshly edited title"
    item.save()
    after = profile_resolve(profile="profile-0", request=REQUEST)

    assert "Freshly edited title" not in rendered_text(before)
    assert "Freshly edited title" in rendered_text(after)


def test_profile_resolve__rule_deleted__next_resolution_uses_the_default_rule():
    workspace_import(document=small_workspace())
    profile_resolve(profile="profile-0", request=REQUEST)

    Rule.objects.filter(profile__key="profile-0", layer__key="layer-000").delete()
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


def test_profile_resolve__layer_renamed_through_the_orm__recompiles_once():
    workspace_import(document=small_workspace())
    profile_resolve(profile="profile-0", request=REQUEST)
    compiled_before = cache.compilations

    layer = Layer.objects.get(key="layer-000")
    layer.name = "Renamed layer"
    layer.save()
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

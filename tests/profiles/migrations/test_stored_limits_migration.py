"""The upgrade to SPEC v1.1 stops while stored material is beyond a §2.2 limit (migration 0005)."""

import importlib

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from profiles.import_export.imports import workspace_import
from profiles.models import Item
from tests.profiles.conftest import small_workspace

BEFORE = ("profiles", "0004_editors_group")
CHECK = ("profiles", "0005_stored_material_within_limits")

pytestmark = pytest.mark.django_db(transaction=True)


def historical_apps(target):
    """Return the models as they were at migration ``target``."""
    return MigrationExecutor(connection).loader.project_state(target).apps


@pytest.fixture
def before_the_check():
    """Load a workspace, go back to the migration before the check; migrate fully afterwards."""
    workspace_import(document=small_workspace())
    call_command("migrate", *BEFORE, verbosity=0)
    apps = historical_apps(BEFORE)
    yield apps
    # What a test left beyond the limits would stop the way back to the latest migration.
    for name in ("Rule", "Profile", "Item", "Layer", "Consumer"):
        apps.get_model("profiles", name).objects.all().delete()
    call_command("migrate", "profiles", verbosity=0)


def upgrade():
    call_command("migrate", "profiles", CHECK[1], verbosity=0)


def test_upgrade__clean_database__applies_and_changes_nothing(before_the_check):
    items = list(Item.objects.values_list("title", "body", "metadata").order_by("pk"))

    upgrade()

    assert list(Item.objects.values_list("title", "body", "metadata").order_by("pk")) == items


def test_upgrade__values_beyond_the_limits__stops_and_lists_each_with_its_path(before_the_check):
    # Given material stored before the limits existed (written past any validator),
    apps = before_the_check
    Layer, Item, Profile = (
        apps.get_model("profiles", name) for name in ("Layer", "Item", "Profile")
    )
    layer = Layer.objects.order_by("position", "id")[1]
    Layer.objects.filter(pk=layer.pk).update(name="N" * 1_001)
    items = Item.objects.filter(layer_id=layer.pk).order_by("position", "id")
    deep = {"a": {"b": {"c": {"d": {"e": 1}}}}}  # a container at level 5
    Item.objects.filter(pk=items[0].pk).update(metadata=deep)
    Item.objects.filter(pk=items[2].pk).update(title="T" * 1_001, body="B" * 1_000_001)
    Profile.objects.filter(key="profile-1").update(description="D" * 1_001)

    # when the upgrade runs, it stops with every value listed, in document order,
    with pytest.raises(CommandError) as stopped:
        upgrade()
    listing = str(stopped.value)
    lines = [line.strip() for line in listing.splitlines() if line.startswith("  ")]
    assert [line.split(":")[0] for line in lines] == [
        "layers[1].name",
        "layers[1].items[0].metadata",
        "layers[1].items[2].title",
        "layers[1].items[2].body",
        "profiles[1].description",
    ]
    assert "must nest at most 4 levels" in lines[1]
    assert "(layer 'layer-001', item 'docs/item-0002.md')" in lines[2]
    assert listing.startswith("5 stored value(s) are beyond the limits")
    # and nothing is migrated;
    applied = MigrationExecutor(connection).loader.applied_migrations
    assert CHECK not in applied

    # once the values are fixed, the upgrade goes through.
    Layer.objects.filter(pk=layer.pk).update(name="Layer 1")
    Item.objects.filter(pk=items[0].pk).update(metadata={"a": {"b": 1}})
    Item.objects.filter(pk=items[2].pk).update(title="Item 2", body="Body")
    Profile.objects.filter(key="profile-1").update(description="")
    upgrade()
    assert CHECK in MigrationExecutor(connection).loader.applied_migrations


@pytest.mark.skipif(connection.vendor == "postgresql", reason="PostgreSQL cannot store a NUL")
def test_upgrade__nul_in_stored_text__stops_with_its_path(before_the_check):
    apps = before_the_check
    Consumer = apps.get_model("profiles", "Consumer")
    Consumer.objects.filter(key="reviewer").update(name="Re\x00viewer")

    with pytest.raises(CommandError, match=r"consumers\[1\]\.name: must not contain U\+0000"):
        upgrade()


def test_check__called_on_current_models__reports_the_same_as_the_validator(db):
    # The migration's own mapping of rows agrees with the engine on a valid workspace.
    module = importlib.import_module("profiles.migrations.0005_stored_material_within_limits")
    from django.apps import apps

    workspace_import(document=small_workspace(layers=4, items=3, profiles=3))

    assert module.stored_material_issues(apps) == []

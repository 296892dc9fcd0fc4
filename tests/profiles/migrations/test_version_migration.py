"""The upgrade that starts versions: every existing profile's current state becomes version 1."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("profiles", "0008_profile_versions_environments_change_requests")]
AFTER = [("profiles", "0009_existing_profiles_become_version_one")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.fixture(autouse=True)
def latest_schema_afterwards():
    """Leave the database at the latest migration, as the tests after these expect."""
    yield
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_upgrade__existing_profiles__each_gets_version_1_equal_to_its_current_state():
    apps = migrate(BEFORE)
    Consumer = apps.get_model("profiles", "Consumer")
    Layer = apps.get_model("profiles", "Layer")
    Profile = apps.get_model("profiles", "Profile")
    Rule = apps.get_model("profiles", "Rule")
    consumer = Consumer.objects.create(key="assistant")
    kb = Layer.objects.create(key="kb")
    answer = Profile.objects.create(
        key="answer", name="Answer", consumer=consumer, objective="answer", budget=900,
        environment="production",
    )  # fmt: skip
    Profile.objects.create(key="bare", consumer=consumer, objective="bare", budget=5)
    Rule.objects.create(
        profile=answer, layer=kb, mode="retrieve", priority=50.0, max_items=3,
        currentness_max_age_days=30, currentness_on_stale="warn",
    )  # fmt: skip

    apps = migrate(AFTER)

    ProfileVersion = apps.get_model("profiles", "ProfileVersion")
    versions = {version.profile_key: version for version in ProfileVersion.objects.all()}
    assert sorted(versions) == ["answer", "bare"]
    assert versions["answer"].number == 1
    assert versions["answer"].source == "migration"
    assert versions["answer"].document == {
        "key": "answer",
        "name": "Answer",
        "consumer": "assistant",
        "objective": "answer",
        "environment": "production",
        "budget": 900,
        "rules": {
            "kb": {
                "mode": "retrieve",
                "priority": 50,
                "maxItems": 3,
                "currentness": {"maxAgeDays": 30, "onStale": "warn"},
            }
        },
    }
    assert versions["bare"].document == {
        "key": "bare",
        "consumer": "assistant",
        "objective": "bare",
        "budget": 5,
    }
    Profile = apps.get_model("profiles", "Profile")
    assert set(Profile.objects.values_list("version", flat=True)) == {1}


@pytest.mark.django_db(transaction=True)
def test_upgrade__version_1_document__equals_what_the_mapper_records_now():
    """A write right after the upgrade that changes nothing appends no version 2."""
    from profiles.import_export.imports import workspace_import
    from profiles.versioning.versions import profile_versions_record
    from tests.profiles.conftest import small_workspace

    # Versions recorded by today's write (made at the latest schema, which it needs)…
    workspace_import(document=small_workspace())
    apps = migrate(BEFORE)
    apps.get_model("profiles", "ProfileVersion").objects.all().delete()  # …forgotten,
    migrate(AFTER)  # …and recreated by the migration.
    # Today's code reads today's columns: the later migrations leave versions as they are.
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    assert profile_versions_record(keys=["profile-0", "profile-1"]) == []

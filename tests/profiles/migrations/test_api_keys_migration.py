"""The upgrade to hashed API keys: DRF's plain-text tokens become user tokens with the same key,
and the plain text is gone."""

import datetime as dt

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from rest_framework.test import APIClient

from profiles.models import ApiKey

BEFORE = [("profiles", "0014_import_task_moved")]
AFTER = [("profiles", "0015_api_keys")]
KEY = "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"  # the shape of a DRF token


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.fixture(autouse=True)
def latest_schema_afterwards():
    yield
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS authtoken_token")
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def drf_token_table() -> None:
    """Create ``authtoken_token`` as DRF's migrations made it (the app is no longer installed)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE authtoken_token (key varchar(40) NOT NULL PRIMARY KEY, "
            "created timestamp with time zone NOT NULL, user_id integer NOT NULL UNIQUE)"
            if connection.vendor == "postgresql"
            else "CREATE TABLE authtoken_token (key varchar(40) NOT NULL PRIMARY KEY, "
            "created datetime NOT NULL, user_id integer NOT NULL UNIQUE)"
        )


@pytest.mark.django_db(transaction=True)
def test_upgrade__drf_token__same_key_authenticates_and_no_plain_text_is_left():
    # Given a database at 0014 with DRF's token of an active user
    migrate(BEFORE)
    user = User.objects.create_user("dana")
    created = dt.datetime(2026, 6, 1, 9, 30, tzinfo=dt.UTC)
    drf_token_table()
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO authtoken_token (key, created, user_id) VALUES (%s, %s, %s)",
            [
                KEY,
                created.replace(tzinfo=None) if connection.vendor == "sqlite" else created,
                user.pk,
            ],
        )

    # When the upgrade runs
    migrate(AFTER)

    # Then the same key signs in as the same user, with the whole role of a user token
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {KEY}")
    response = client.get("/api/v1/profiles/")
    assert response.status_code == 200
    record = ApiKey.objects.get()
    assert (record.owner, record.kind, record.scoped) == (user, "user", False)
    assert record.created_at == created
    # and the key is nowhere in the database: not in the record, not in DRF's table
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM authtoken_token")
        assert cursor.fetchone() == (0,)
        cursor.execute("SELECT * FROM profiles_apikey")
        assert not any(KEY in str(value) for value in cursor.fetchone())


@pytest.mark.django_db(transaction=True)
def test_upgrade__fresh_database_without_drf_tokens__no_keys():
    migrate(BEFORE)
    migrate(AFTER)

    assert not ApiKey.objects.exists()

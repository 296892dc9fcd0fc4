"""Migrations: complete for the models, and applicable from zero on this database."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from profiles.import_export.documents import workspace_export
from profiles.import_export.imports import workspace_import
from tests.profiles.conftest import normalize_document, small_workspace


@pytest.mark.django_db
def test_makemigrations__current_models__need_no_new_migration():
    out = StringIO()

    call_command("makemigrations", "profiles", "--check", "--dry-run", stdout=out)

    assert "No changes detected" in out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_migrate__from_zero_and_back__recreates_working_tables():
    call_command("migrate", "profiles", "zero", verbosity=0)
    assert "profiles_profile" not in connection.introspection.table_names()

    call_command("migrate", "profiles", verbosity=0)
    workspace_import(document=small_workspace())

    assert normalize_document(workspace_export()) == normalize_document(small_workspace())


# The tables every item write adds rows to (a bulk ingest of a million items pays each of
# their indexes a million times).
ITEM_WRITE_TABLES = (
    "profiles_item",
    "profiles_historicalitem",
    "profiles_itemchange",
    "profiles_itemterms",
    "profiles_itemkey",
    "profiles_activity",
)


@pytest.mark.django_db
def test_item_write_tables__no_index_is_the_leading_columns_of_another():
    constraints = {
        table: connection.introspection.get_constraints(connection.cursor(), table)
        for table in ITEM_WRITE_TABLES
    }
    covered = []
    for table, found in constraints.items():
        indexes = {
            name: [column for column in entry["columns"]]
            for name, entry in found.items()
            if entry["index"] and not entry["unique"] and not entry["primary_key"]
        }
        every = [entry["columns"] for entry in found.values() if entry["index"]]
        for name, columns in indexes.items():
            if any(
                len(other) > len(columns) and other[: len(columns)] == columns for other in every
            ):
                covered.append(f"{table}.{name} {columns}")

    assert covered == []

"""Migrations: complete for the models, and applicable from zero on this database."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from profiles.import_export.workspace import workspace_export, workspace_import
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

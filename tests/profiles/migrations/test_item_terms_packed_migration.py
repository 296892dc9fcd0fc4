"""Migration 0029 packs the items' stored terms and drops their JSON column (issue 35 item 2).

Rows stored before (JSON) are packed without tokenizing, whatever their analyser; a row whose
JSON cannot be read gets an empty value, which the engine finds damaged (it tokenizes that
item); the way back writes the JSON again. A small batch size makes the backfill take several
batches here.
"""

import importlib
import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from profiles.import_export.imports import workspace_import
from profiles.models import Item, ItemTerms
from profiles.workspace import cache
from profiles.workspace.mappers import map_rows_to_document
from profiles.workspace.selectors import workspace_rows_get
from resolver import compile_workspace
from resolver.analysis import ANALYSER_VERSION, item_terms, pack_terms
from tests.profiles.conftest import small_workspace

BEFORE = ("profiles", "0028_workspace_version_held_token")
PACKED = ("profiles", "0029_item_terms_packed")
MODULE = importlib.import_module("profiles.migrations.0029_item_terms_packed")

pytestmark = pytest.mark.django_db(transaction=True)


def historical_apps(target):
    return MigrationExecutor(connection).loader.project_state(target).apps


@pytest.fixture
def before_packing(monkeypatch):
    """A workspace's terms stored as JSON (the rows as 0028 left them); migrated fully after."""
    workspace_import(document=small_workspace(layers=2, items=7))
    call_command("migrate", *BEFORE, verbosity=0)
    monkeypatch.setattr(MODULE, "BATCH", 3)
    yield historical_apps(BEFORE)
    call_command("migrate", "profiles", verbosity=0)


def test_upgrade__json_terms__packed_in_batches_damaged_ones_empty(before_packing):
    Terms = before_packing.get_model("profiles", "ItemTerms")
    rows = list(Terms.objects.order_by("pk").values_list("pk", "terms"))
    assert len(rows) == 14 and all(json.loads(text) for _, text in rows)
    damaged, other = rows[0][0], rows[1][0]
    Terms.objects.filter(pk=damaged).update(terms="{not json")
    Terms.objects.filter(pk=other).update(analyser=ANALYSER_VERSION + 1)

    call_command("migrate", *PACKED, verbosity=0)

    packed = dict(ItemTerms.objects.values_list("pk", "packed"))
    assert bytes(packed.pop(damaged)) == b""
    assert ItemTerms.objects.get(pk=other).analyser == ANALYSER_VERSION + 1  # stamp kept
    expected = {pk: pack_terms(json.loads(text)) for pk, text in rows if pk != damaged}
    assert {pk: bytes(value) for pk, value in packed.items()} == expected
    # The JSON counts were the item's: the packed form is what a write stores now.
    for terms in ItemTerms.objects.exclude(pk=damaged):
        item = Item.objects.get(pk=terms.item_id)
        assert bytes(terms.packed) == pack_terms(item_terms(item.title, item.body))
    # The damaged row's item is tokenized: the answers are the stored document's.
    cache.workspace_cache_clear()
    request = {
        "profile": "profile-0",
        "input": {"message": "refund cards", "customer_id": "C-1"},
        "now": "2026-11-20T00:00:00Z",  # one instant for both resolutions
    }
    expected_answer = compile_workspace(map_rows_to_document(workspace_rows_get())).resolve(request)
    assert cache.workspace_get().compiled.resolve(request) == expected_answer


def test_downgrade__packed_terms__json_again(before_packing):
    Terms = before_packing.get_model("profiles", "ItemTerms")
    rows = dict(Terms.objects.values_list("pk", "terms"))
    call_command("migrate", *PACKED, verbosity=0)

    call_command("migrate", *BEFORE, verbosity=0)

    back = dict(
        historical_apps(BEFORE)
        .get_model("profiles", "ItemTerms")
        .objects.values_list("pk", "terms")
    )
    assert {pk: json.loads(text) for pk, text in back.items()} == {
        pk: json.loads(text) for pk, text in rows.items()
    }

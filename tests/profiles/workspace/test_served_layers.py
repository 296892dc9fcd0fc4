"""Served layers on the database (issue 20): a filtered layer's items fetched per request.

The answer through the database equals ``resolve(document, request)`` for the stored
document, byte for byte (random workspaces and requests, and the conformance cases); a
request costs its customer's items, not the layer's; writes keep the derived rows (terms,
keys, counts) exact through every write service.
"""

import copy
import json

import pytest
import yaml
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from profiles.import_export.imports import workspace_import
from profiles.material.bulk_ingest import bulk_ingest_parse, items_bulk_ingest
from profiles.material.items import item_create, item_delete, item_update
from profiles.material.layers import layer_update
from profiles.models import Consumer, Item, ItemKey, ItemTerms, Layer, Profile
from profiles.resolution.services import profile_resolve, ref_expand
from profiles.workspace import cache, derived, served
from profiles.workspace.mappers import map_rows_to_document
from profiles.workspace.selectors import workspace_rows_get
from resolver import ResolverError, compile_workspace
from resolver.analysis import ANALYSER_VERSION, item_terms, pack_terms
from tests.resolver.strategies import requests, workspaces
from tests.resolver.test_conformance import CASE_FILES, run_case

pytestmark = pytest.mark.django_db


def stored_document() -> dict:
    return map_rows_to_document(workspace_rows_get())


def answers(compiled, request):
    """Every form of one request's answer (or its error)."""
    try:
        return (
            compiled.resolve(request),
            compiled.resolve_json(request).data,
            compiled.resolve_json({**request, "detail": "summary"}).data,
        )
    except ResolverError as exc:
        return ("error", type(exc).__name__, str(exc))


def assert_derived_rows_exact() -> None:
    """The derived rows are what the items give: one terms row per item, of this analyser,
    stamped with the item's stored ``updated_at`` (else a fetch ignores them), the keys of
    the layer's filter fields, the layer's count."""
    for layer in Layer.objects.all():
        items = list(
            Item.objects.filter(layer=layer).values_list(
                "id", "path", "title", "body", "metadata", "updated_at"
            )
        )
        assert layer.items_counted == len(items), layer.key
        fields = derived.filter_fields(layer.item_filter)
        assert layer.keyed_fields == fields, layer.key
        stored_terms = ItemTerms.objects.filter(layer=layer).values_list(
            "path", "item_id", "item_updated_at", "analyser", "packed"
        )
        terms = {
            path: (item_id, updated_at, analyser, bytes(packed))
            for path, item_id, updated_at, analyser, packed in stored_terms
        }
        # Stored packed, exactly (``resolver.analysis.pack_terms``; its round trip is tested
        # in tests/resolver/test_packed.py).
        assert terms == {
            path: (item_id, updated_at, ANALYSER_VERSION, pack_terms(item_terms(title, body)))
            for item_id, path, title, body, _, updated_at in items
        }, layer.key
        keys = sorted(ItemKey.objects.filter(layer=layer).values_list("item_id", "field", "value"))
        assert keys == sorted(
            (item_id, field, value)
            for item_id, _, _, _, metadata, _ in items
            for field, value in derived.item_keys(metadata, fields)
        ), layer.key


DB_SETTINGS = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)


@DB_SETTINGS
@given(data=st.data())
def test_served_answers__random_workspaces_and_requests__equal_resolving_the_stored_document(
    data,
):
    document, _ = data.draw(workspaces())
    empty_workspace()
    workspace_import(document=document)
    cache.workspace_cache_clear()
    stored = stored_document()
    whole = compile_workspace(stored)
    worker = cache.workspace_get().compiled
    assert set(worker.served) == {
        layer["key"] for layer in stored["layers"] if layer.get("itemFilter")
    }
    for _ in range(4):
        request, _ = data.draw(requests(document))
        assert answers(worker, request) == answers(whole, request)
    assert_derived_rows_exact()


CONFORMANCE = [yaml.safe_load(path.read_text(encoding="utf-8")) for path in CASE_FILES]


def empty_workspace() -> None:
    """Delete every profile, layer and consumer (each example starts from nothing)."""
    for model in (Profile, Layer, Consumer):
        model.objects.all().delete()


def database_resolve(workspace, request):
    empty_workspace()
    workspace_import(document=copy.deepcopy(workspace))
    cache.workspace_cache_clear()
    worker = cache.workspace_get().compiled
    answer = worker.resolve(request)
    assert answer == compile_workspace(stored_document()).resolve(request)
    return answer


@pytest.mark.parametrize("case", CONFORMANCE, ids=[path.stem for path in CASE_FILES])
def test_conformance_cases__through_the_database__match_their_expectations(case):
    code = (case["expect"].get("error") or {}).get("code")
    if code == "INVALID_WORKSPACE":
        pytest.skip("a workspace the import refuses (its validation is tested there)")
    assert run_case(case, resolve=database_resolve) is None


# --- what a request and a write cost ------------------------------------------------------------


def desk(customers: int, per_customer: int) -> dict:
    """A small support desk: tickets filtered by customer, an unscoped kb."""
    return {
        "version": 1,
        "consumers": [{"key": "assistant"}],
        "layers": [
            {
                "key": "tickets",
                "itemFilter": {"customer_id": "customer_id"},
                "items": [
                    {
                        "path": f"c{c}/t{t}",
                        "title": f"Ticket {t} of customer {c}",
                        "body": f"Refund card number {t}. The card arrived {c} days late.",
                        "metadata": {
                            "customer_id": f"C{c}",
                            "updated": f"2026-11-0{1 + t % 9}",
                        },
                    }
                    for c in range(customers)
                    for t in range(per_customer)
                ],
            },
            {
                "key": "kb",
                "items": [
                    {
                        "path": f"kb/{n}",
                        "title": f"Refund article {n}",
                        "body": "Cards and refunds.",
                    }
                    for n in range(20)
                ],
            },
        ],
        "profiles": [
            {
                "key": "support",
                "consumer": "assistant",
                "objective": "answer",
                "budget": 2000,
                "rules": {
                    "tickets": {
                        "mode": "retrieve",
                        "maxItems": 5,
                        "currentness": {"maxAgeDays": 30, "onStale": "warn"},
                    },
                    "kb": {"mode": "retrieve", "maxItems": 3},
                },
            }
        ],
    }


REQUEST = {
    "profile": "support",
    "input": {"customer_id": "C3", "message": "refund card late"},
    "now": "2026-11-20T00:00:00Z",
}


@pytest.mark.parametrize("customers", [10, 200])
def test_a_request__any_layer_size__fetches_its_customer_s_items_in_one_query(
    customers, django_assert_num_queries
):
    workspace_import(document=desk(customers, 5))
    cache.workspace_cache_clear()
    cache.workspace_get()
    before = (served.fetches, served.fetched_items)

    # One statement: the held token, the layer's count, the customer's stamp and items
    with django_assert_num_queries(1):
        answer = profile_resolve(profile="support", request=REQUEST)

    assert (served.fetches - before[0], served.fetched_items - before[1]) == (1, 5)
    tickets = next(layer for layer in answer["layers"] if layer["layer"] == "tickets")
    assert tickets["available"]["items"] == customers * 5
    assert answer == compile_workspace(stored_document()).resolve({**REQUEST, "profile": "support"})
    # The worker holds the kb's items, none of the tickets
    compiled = cache.workspace_get().compiled
    # Every fetched ticket comes with its stored terms (nothing is tokenized per request),
    # and every held item's terms were read at the start (each counted for the item as read)
    fetched = compiled.source(compiled.needs({**REQUEST, "input": {"customer_id": "C4"}}))
    assert fetched["tickets"].entries
    assert set(fetched["tickets"].terms) == {e["path"] for e in fetched["tickets"].entries}
    layer_ids = set(Layer.objects.values_list("id", flat=True))
    copies = cache.workspace_get().layers
    rows = cache._item_rows(whole=layer_ids, paths={})
    analysed = cache._analysed(rows, copies, cache._stored_terms(layer_ids))
    assert {key: set(terms) for key, terms in analysed.items()} == {
        copies[layer_id].key: {row.path for row in layer_rows}
        for layer_id, layer_rows in rows.items()
    }
    assert compiled.served == {"tickets": customers * 5}
    held = {index.layer.key: len(index.items) for index in compiled.indexes}
    assert held == {"tickets": 0, "kb": 20}


def test_a_new_ticket__other_workers_read_no_item_and_see_it_on_the_next_request():
    workspace_import(document=desk(20, 5))
    first = cache.workspace_get()

    item_create(
        layer="tickets",
        document={
            "path": "c3/new",
            "title": "Refund card late again",
            "metadata": {"customer_id": "C3", "updated": "2026-11-19"},
        },
    )
    # The held token did not move: no worker catches up, the compilation stays.
    assert cache.workspace_get() is first
    answer = profile_resolve(profile="support", request=REQUEST)
    tickets = next(layer for layer in answer["layers"] if layer["layer"] == "tickets")
    assert tickets["available"]["items"] == 101
    assert "c3/new" in [entry["item"] for entry in tickets["materialized"]["items"]]
    assert answer == compile_workspace(stored_document()).resolve(REQUEST)


def test_workspace_import__fresh_then_merged__derived_rows_exact_without_reading_texts_back():
    def item_text_reads(write) -> int:
        with CaptureQueriesContext(connection) as captured:
            write()
        return sum(
            query["sql"].startswith("SELECT") and '"profiles_item"."body"' in query["sql"]
            for query in captured.captured_queries
        )

    # A fresh import reads the items' texts once (the stored workspace, before writing):
    # their terms and a new filter's keys come from the values it wrote.
    assert item_text_reads(lambda: workspace_import(document=desk(4, 3))) == 1
    assert_derived_rows_exact()

    # A merge that changes, adds and keeps items, and changes the filter, likewise.
    document = desk(5, 3)
    tickets = document["layers"][0]
    tickets["items"][0]["body"] = "Wallet refund, card replaced."
    tickets["items"][1]["metadata"]["customer_id"] = ["C0", "C7"]
    tickets["itemFilter"] = {"customer_id": "customer_id", "updated": "day"}
    assert item_text_reads(lambda: workspace_import(document=document)) == 1
    assert_derived_rows_exact()


def test_every_write_service__keeps_terms_keys_and_counts_exact():
    workspace_import(document=desk(4, 3))
    assert_derived_rows_exact()
    item_update(
        layer="tickets",
        path="c1/t1",
        changes={"body": "Wallet refund", "metadata": {"customer_id": ["C1", "C2"]}},
    )
    item_update(layer="tickets", path="c1/t2", changes={"path": "c1/moved"})
    item_delete(layer="tickets", path="c0/t0")
    item_create(layer="tickets", document={"path": "c9/t0", "metadata": {"customer_id": 9.0}})
    assert_derived_rows_exact()
    batch = [
        {"path": "c2/t0", "body": "Card replaced", "metadata": {"customer_id": "C2"}},
        {"op": "upsert", "item": {"path": "c5/t0", "metadata": {"customer_id": "C5"}}},
        {"op": "delete", "path": "c3/t1"},
    ]
    text = "\n".join(json.dumps(line) for line in batch)
    items_bulk_ingest(layer="tickets", operations=bulk_ingest_parse(text=text, ndjson=True))
    assert_derived_rows_exact()
    # A changed filter writes the layer's keys again; a removed one drops them
    layer_update(
        key="tickets", changes={"itemFilter": {"customer_id": "customer_id", "updated": "day"}}
    )
    assert_derived_rows_exact()
    layer_update(key="kb", changes={"itemFilter": {"topic": "topic"}})
    assert_derived_rows_exact()
    layer_update(key="kb", changes={"itemFilter": None})
    assert_derived_rows_exact()
    # A replacing import rewrites layers wholesale
    workspace_import(document=desk(3, 2), mode="replace")
    assert_derived_rows_exact()
    cache.workspace_cache_clear()
    for customer in ("C0", "C1", "C2", "9", "C5"):
        request = {**REQUEST, "input": {"customer_id": customer, "message": "refund card"}}
        assert cache.workspace_get().compiled.resolve(request) == compile_workspace(
            stored_document()
        ).resolve(request)


def _moved(path: str, to: str) -> list[str]:
    """Move one ticket; return the SQL statements the write ran."""
    with CaptureQueriesContext(connection) as captured:
        item_update(layer="tickets", path=path, changes={"path": to})
    return [query["sql"] for query in captured.captured_queries]


def test_a_moved_ticket__derives_its_two_paths_only_and_workers_read_no_ticket():
    workspace_import(document=desk(2, 5))
    small = _moved("c1/t2", "c1/moved")
    workspace_import(document=desk(60, 5), mode="replace")
    first = cache.workspace_get()
    terms_before = dict(ItemTerms.objects.values_list("path", "id"))

    large = _moved("c1/t2", "c1/moved")

    # No statement compares the layer's derived rows with its items (the O(layer) refresh
    # of a layer rewritten wholesale): as many statements at 10 tickets as at 300.
    assert not [sql for sql in large if "EXISTS" in sql]
    assert len(large) == len(small)
    terms_after = dict(ItemTerms.objects.values_list("path", "id"))
    assert set(terms_before) - set(terms_after) == {"c1/t2"}
    assert set(terms_after) - set(terms_before) == {"c1/moved"}
    unchanged = set(terms_before) - {"c1/t2"}
    assert {path: terms_after[path] for path in unchanged} == {
        path: terms_before[path] for path in unchanged
    }
    assert_derived_rows_exact()
    # Only a served layer's items moved: no worker catches up.
    assert cache.workspace_get() is first
    request = {**REQUEST, "input": {"customer_id": "C1", "message": "refund card"}}
    answer = cache.workspace_get().compiled.resolve(request)
    assert answer == compile_workspace(stored_document()).resolve(request)
    assert "c1/moved" in json.dumps(answer)


def test_terms_of_another_analyser__ignored_then_recomputed_in_the_background():
    workspace_import(document=desk(5, 4))
    ItemTerms.objects.filter(layer__key="tickets").update(analyser=ANALYSER_VERSION + 1, packed=b"")
    ItemTerms.objects.filter(layer__key="kb").update(analyser=ANALYSER_VERSION + 1, packed=b"")
    cache.workspace_cache_clear()

    # Stale terms are not used: the answers are exact meanwhile
    assert derived.stale_terms_count() == 40
    assert cache.workspace_get().compiled.resolve(REQUEST) == compile_workspace(
        stored_document()
    ).resolve(REQUEST)
    # The task recomputes them
    assert derived.item_terms_recompute.call() == 40
    assert derived.stale_terms_count() == 0
    assert_derived_rows_exact()


def test_damaged_stored_terms__their_items_tokenized__answers_exact_never_a_crash():
    workspace_import(document=desk(5, 4))
    rows = list(ItemTerms.objects.order_by("pk").values_list("pk", "packed"))
    damages = [b"", b"\xff" * 9, lambda packed: bytes(packed)[:-1], lambda p: bytes(p) + b"x"]
    for n, (pk, packed) in enumerate(rows):  # served tickets and held kb articles alike
        damage = damages[n % len(damages)]
        ItemTerms.objects.filter(pk=pk).update(
            packed=damage(packed) if callable(damage) else damage
        )
    cache.workspace_cache_clear()
    served.candidates.clear()

    whole = compile_workspace(stored_document())
    for customer in ("C1", "C3"):
        request = {**REQUEST, "input": {**REQUEST["input"], "customer_id": customer}}
        assert answers(cache.workspace_get().compiled, request) == answers(whole, request)
    # Not stale (this analyser's): no recompute is queued for them; a write stores them anew.
    assert derived.stale_terms_count() == 0


def test_expand__an_offered_ticket_of_a_served_layer__is_read_by_its_path():
    workspace_import(document=desk(5, 4))
    expanded = ref_expand(request=REQUEST, ref="tickets/c3/t1")
    assert expanded["title"] == "Ticket 1 of customer 3"
    assert expanded["metadata"]["customer_id"] == "C3"


def test_a_warming_server__stale_terms__queues_their_recompute_once(settings):
    workspace_import(document=desk(2, 3))
    assert derived.terms_recompute_enqueue() is False  # nothing stale
    ItemTerms.objects.update(analyser=ANALYSER_VERSION + 1)
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

    assert derived.terms_recompute_enqueue() is True
    assert derived.terms_recompute_enqueue() is False  # one is waiting already
    assert derived.stale_terms_count() == 26  # 6 tickets, 20 articles


def test_serving_switched_off__every_worker_holds_the_filtered_layer__same_answers(settings):
    workspace_import(document=desk(6, 4))
    cache.workspace_cache_clear()
    served_answer = profile_resolve(profile="support", request=REQUEST)

    # Switched off while a worker runs: its next catch-up reads the layer and holds it
    settings.SERVE_FILTERED_LAYERS = False
    item_update(layer="kb", path="kb/0", changes={"title": "Refund article zero"})
    compiled = cache.workspace_get().compiled
    assert compiled.served == {}
    assert {index.layer.key: len(index.items) for index in compiled.indexes} == {
        "tickets": 24,
        "kb": 20,
    }
    assert cache.layers_read == 1  # the tickets, read once
    assert profile_resolve(profile="support", request=REQUEST) == compile_workspace(
        stored_document()
    ).resolve(REQUEST)
    held_answer = profile_resolve(profile="support", request=REQUEST)

    def tickets(answer):
        return next(layer for layer in answer["layers"] if layer["layer"] == "tickets")

    assert tickets(held_answer) == tickets(served_answer)  # only a kb title changed

    # Switched on again while a worker runs: its next catch-up serves the layer again
    settings.SERVE_FILTERED_LAYERS = True
    item_create(layer="kb", document={"path": "kb/new", "title": "Refund card news"})
    compiled = cache.workspace_get().compiled
    assert compiled.served == {"tickets": 24}
    assert profile_resolve(profile="support", request=REQUEST) == compile_workspace(
        stored_document()
    ).resolve(REQUEST)

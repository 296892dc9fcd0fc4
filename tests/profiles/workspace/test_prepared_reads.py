"""The resolve path's reads prepared on PostgreSQL (issue 35): the served statement is planned
once per connection (its planning cost the server more than running it), answers are the
engine's, and nothing is prepared behind PgBouncer's transaction pooling or when turned off."""

import pytest
from django.db import connection
from django.test import override_settings

from profiles.import_export.imports import workspace_import
from profiles.models import Layer
from profiles.workspace import cache
from profiles.workspace.selectors import rows_read, statements_prepared
from profiles.workspace.served import Wanted, served_statement
from resolver.served import Need
from tests.profiles.workspace.test_served_layers import desk
from tests.profiles.workspace.test_served_round_trips import engine_answer, request_for, resolved

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's (SQLite's module caches its own)")


def prepared_here() -> list[str]:
    """The statements this connection has prepared (the session's, PostgreSQL's view)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def served_prepared() -> list[str]:
    return [text for text in prepared_here() if text.startswith("WITH h AS")]


def test_the_served_statement__prepared_once_on_the_connection__answers_the_engines():
    workspace_import(document=desk(6, 3))
    cache.workspace_get()

    answers = [resolved(request_for(customer))[0] for customer in (1, 2, 1, 3)]

    # Every customer's first read has the same text (one wanted value, no stamp held), the
    # repeated customer's another (a stamp held): two statements prepared, not four.
    assert len(served_prepared()) == 2
    assert all("$1" in text for text in served_prepared())  # bound on the server
    for customer, answer in zip((1, 2, 1, 3), answers, strict=True):
        assert answer == engine_answer(request_for(customer))


@pytest.mark.parametrize(
    "setting", [{"DB_POOLER": "pgbouncer"}, {"DB_PREPARED_READS": False}], ids=str
)
def test_behind_pgbouncer_or_turned_off__nothing_prepared__same_answers(setting):
    workspace_import(document=desk(6, 3))
    cache.workspace_get()
    with override_settings(**setting):
        assert not statements_prepared(connection)
        answer, sql = resolved(request_for(2))

    assert served_prepared() == []
    assert len(sql) == 1
    assert answer == engine_answer(request_for(2))


@pytest.mark.django_db(transaction=True)
def test_a_prepared_read_on_a_connection_the_server_dropped__opened_again_once():
    rows_read("SELECT %s::int + 1", [1], prepared=True)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        before = cursor.fetchone()[0]
    connection.connection.close()  # as a server restart leaves it

    assert rows_read("SELECT %s::int + 1", [2], prepared=True) == [(3,)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != before


def test_the_served_read__key_rows_read_from_the_covering_index_alone():
    # The customer's item ids and its stamp (count, highest id) come from the lookup index:
    # no heap page per key row (a customer's keys lie on as many pages as it has tickets).
    workspace_import(document=desk(6, 3))
    tickets = Layer.objects.get(key="tickets")
    need = Need("tickets", (("customer_id", "C2"),))
    sql, params = served_statement(
        [tickets.id], [Wanted(need, tickets.id, "customer_id", "C2", None)]
    )
    with connection.cursor() as cursor:
        # A six-customer table is read whole by choice; a desk's is not: plan as for one.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())

    key_scans = [line for line in plan.splitlines() if "profiles_itemkey" in line]
    assert len(key_scans) == 2, plan  # the stamp's and the rows'
    assert all("Index Only Scan using item_key_lookup_cover" in line for line in key_scans), plan

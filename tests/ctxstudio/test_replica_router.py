"""The read replica's router and its cost without a replica (no database needed)."""

from django.core.signals import request_started

from ctxstudio.db_router import ReplicaRouter
from profiles.models import Item, Layer, Scenario
from profiles.workspace import replica, throttling
from profiles.workspace.served import Wanted, served_statement
from resolver.served import Need


def test_without_a_replica__nothing_of_it_runs():
    assert replica.ENABLED is False  # the suite sets no DATABASE_REPLICA_URL
    assert throttling.along_keys == []  # the throttle's round trip reads nothing more
    assert replica.available() is False
    # No receiver of its own on every request (disconnect says whether one was connected).
    assert request_started.disconnect(dispatch_uid="replica_request_started") is False
    sql, _ = served_statement([1], [Wanted(Need("tickets", ()), 1, "customer_id", "C-1", None)])
    assert "pg_" not in sql and "counter" not in sql


def test_router__material_reads_on_the_replica_only_inside_replica_reads():
    router = ReplicaRouter()
    assert router.db_for_read(Item) == "default"
    token = replica._route.set(True)
    try:
        assert router.db_for_read(Item) == "replica"
        assert router.db_for_read(Layer) == "replica"
        assert router.db_for_read(Scenario) == "default"  # not counted by the write counter
        assert router.db_for_write(Item) == "default"
    finally:
        replica._route.reset(token)
    assert router.allow_migrate("replica", "profiles") is False
    assert router.allow_migrate("default", "profiles") is True

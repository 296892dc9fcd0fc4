"""The read replica's router, its cost without a replica, and the record of the last write
in Redis (no database needed)."""

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


def test_record_of_the_last_write__a_maximum__read_along_with_the_throttle(
    redis_cache, monkeypatch
):
    monkeypatch.setattr(throttling, "along_keys", [replica.KEY])
    monkeypatch.setattr(replica, "_mark", 0)
    replica.recorded(41)
    replica.recorded(40)  # a slower writer's record does not lower it
    monkeypatch.setattr(replica, "_mark", 0)  # what this process knows aside
    assert redis_cache.get(replica.KEY) == 41
    token = throttling.fetched_along.set(None)
    try:
        assert throttling.RateCounter("along", "100/minute").admit()
        # Gone from Redis after the throttle's round trip: what follows reads no cache.
        redis_cache.delete(replica.KEY)
        assert replica.wanted() == 41
        throttling.fetched_along.set(None)  # a request without a throttle reads the cache
        assert replica.wanted() == 0
    finally:
        throttling.fetched_along.reset(token)

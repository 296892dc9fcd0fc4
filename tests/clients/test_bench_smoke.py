"""Smoke test of the client bench (``tests/perf/client_bench.py``): a tiny run against a real
gunicorn reports every row, and through the outage the ``max_stale`` and local callers never
raise while the plain one raises the typed error (counts, never timings, are asserted)."""

from tests.perf import client_bench


def test_client_bench__tiny_run__every_row_and_the_outage_counts():
    figures = client_bench.run(["--items", "30", "--rounds", "3", "--outage-seconds", "2"])

    for name in ("engine", "local", "bare", "remote", "not_modified"):
        assert figures[name]["median_ms"] > 0
    outage = figures["outage"]
    assert (outage["max_stale"]["exceptions"], outage["local"]["exceptions"]) == (0, 0)
    assert set(outage["max_stale"]["after_stop"]) == {"stale"}
    assert set(outage["local"]["after_stop"]) == {"local"}
    assert outage["plain"]["exceptions"] > 0
    assert set(outage["plain"]["errors"]) == {"ServerUnavailable"}

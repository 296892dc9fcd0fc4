"""Smoke tests of the lean door bench (one quick round reports every row and its queries, and
the served breakdown) and of the served bench (a small desk)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bench_lines(module: str, *args: str) -> list[str]:
    """Run a bench module in a process of its own (its own in-memory database); return its
    output's lines, once it exited cleanly."""
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-m", module, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines()


def test_lean_bench__one_round__reports_each_door_and_the_ratios():
    lines = bench_lines("tests.perf.lean_bench", "--rounds", "1", "--repeat", "1")

    for door in ("lean door", "lean+metrics", "full stack", "before"):
        assert any(line.strip().startswith(door) and "queries/request" in line for line in lines)
    assert any(line.strip().startswith("engine") for line in lines)
    assert any("before ÷ lean door" in line for line in lines)
    assert any("metric calls of a resolve timed alone" in line for line in lines)
    for row in ("first meeting", "cached", "held", "first meeting's fetch alone"):
        assert any(line.strip().startswith(row) and "× held" in line for line in lines), row


def test_served_bench__a_small_desk__reports_first_meeting_cached_held_and_the_compile():
    lines = bench_lines(
        "tests.perf.served_bench", "--tickets", "400", "--requests", "10", "--rounds", "1"
    )

    assert "terms stored packed" in lines[0]
    for row in ("first meeting", "cached", "held"):
        assert any(line.strip().startswith(row) and "× held" in line for line in lines), row
    assert any("held compile" in line for line in lines)

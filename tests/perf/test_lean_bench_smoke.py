"""Smoke test of the lean door bench: one quick round reports every row and its queries."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_lean_bench__one_round__reports_each_door_and_the_ratios():
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    done = subprocess.run(
        [
            sys.executable,
            "-W",
            "ignore",
            "-m",
            "tests.perf.lean_bench",
            "--rounds",
            "1",
            "--repeat",
            "1",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    for door in ("lean door", "lean+metrics", "full stack", "before"):
        assert any(line.strip().startswith(door) and "queries/request" in line for line in lines)
    assert any(line.strip().startswith("engine") for line in lines)
    assert any("before ÷ lean door" in line for line in lines)
    assert any("metric calls of a resolve timed alone" in line for line in lines)

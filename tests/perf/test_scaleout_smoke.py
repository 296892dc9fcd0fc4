"""Smoke test of the scale-out benchmark's pieces that need no server: haproxy's generated
configuration is valid to haproxy itself (``haproxy -c``), and the report formats."""

import subprocess

import pytest

from tests.perf.scaleout import haproxy_config, program
from tests.perf.scaleout_bench import format_report


@pytest.mark.skipif(program("haproxy") is None, reason="needs haproxy (Debian package)")
def test_haproxy_config__two_servers__haproxy_accepts_it(tmp_path):
    config = tmp_path / "haproxy.cfg"
    config.write_text(haproxy_config(18080, [18081, 18082]))

    checked = subprocess.run(
        [program("haproxy"), "-c", "-f", str(config)], capture_output=True, text=True, timeout=30
    )

    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "server app1 127.0.0.1:18082 check" in config.read_text()
    assert "retry-on conn-failure empty-response junk-response" in config.read_text()


def test_format_report__figures__one_row_per_run_and_the_trials():
    run = {"per_s": 10.0, "p50_ms": 5.0, "p95_ms": 9.0, "requests": 100, "errors": 0}
    figures = {
        "tickets": 1000,
        "customers": 10,
        "cores": 2,
        "load_start": "1.0/1.0/1.0",
        "load_end": "2.0/2.0/2.0",
        "throughput": {"1x1": run, "2x1": {**run, "per_s": 19.0}},
        "kill_SIGKILL": {
            **run,
            "answers_before_kill": {"app0": 5, "app1": 5},
            "answers_from_1s_after": {"app1": 9},
        },
        "save_a_seen_b": {"trials": 4, "seen_on_b": 4, "next_resolve_on_b_ms": 7.0},
    }

    report = format_report(figures)

    assert (
        "| 2 app server(s) × 1 worker(s), through haproxy | 19.0 | 5.0 | 9.0 | 100 / 0 |" in report
    )
    assert "2 × 1, one server SIGKILL a third of the way in" in report
    assert "the next resolve on B has it: 4 of 4" in report

"""The Python client against a real server: ``python -m tests.perf.client_bench`` (in
``make bench``; docs/client.md, "Figures").

Starts gunicorn (one sync worker, production settings) on a fresh SQLite database holding a
generated workspace: a held knowledge base (``--items`` articles) read by the profile
``kb-answer``, and a served tickets layer (``itemFilter``) read by ``ticket-answer``. Then,
interleaved so machine noise hits all alike:

1. **local vs engine** — ``client.resolve(local="only")`` of ``kb-answer`` (a snapshot-only
   profile) against the engine alone in this process (``resolve_json`` on the snapshot's
   compiled workspace): target ≤ 1.5×;
2. **remote vs bare HTTP** — ``client.resolve`` (cache off: every call a full answer)
   against the same request bytes sent with ``http.client``: target ≤ 1.2×; and the same
   request through the client's cache (``If-None-Match`` → 304), for information;
3. **server stopped mid-run** — three callers loop over their requests: ``max_stale``,
   ``local="only"`` and plain; the server is stopped halfway. The first two must keep
   answering (0 exceptions; after the stop every answer ``stale`` or ``local``), the plain
   one must raise ``ServerUnavailable`` within its timeout.

Prints medians and 90th percentiles in milliseconds, the ratios, the outage counts and a
JSON line. Wall-clock figures are reported, never asserted in the test suite.
"""

import argparse
import http.client
import json
import os
import random
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "clients" / "python"))

from ctxstudio_client import Client, ClientError, Origin, ServerUnavailable  # noqa: E402

from tests.processes import free_port, manage, migrated_database, process_env, stop  # noqa: E402
from tests.resolver.strategies import WORDS  # noqa: E402

NOW = "2026-11-29T12:00:00Z"
KB_REQUEST = {"profile": "kb-answer", "input": {"message": "refund card dispute"}, "now": NOW}
TICKET_REQUEST = {
    "profile": "ticket-answer",
    "input": {"message": "refund", "customer_id": "C-3"},
    "now": NOW,
}


def workspace(items: int, seed: int = 7) -> dict:
    rng = random.Random(seed)

    def text(n):
        return " ".join(rng.choice(WORDS) for _ in range(n))

    return {
        "version": 1,
        "consumers": [{"key": "assistant", "render": {"format": "markdown"}}],
        "layers": [
            {
                "key": "kb",
                "items": [
                    {"path": f"kb/{n:05d}", "title": text(4), "body": text(80)}
                    for n in range(items)
                ],
            },
            {
                "key": "tickets",
                "itemFilter": {"customer_id": "customer_id"},
                "appliesTo": {"objectives": ["answer-ticket"]},
                "items": [
                    {
                        "path": f"T-{n}",
                        "title": text(4),
                        "body": text(40),
                        "metadata": {"customer_id": f"C-{n % 20}"},
                    }
                    for n in range(items)
                ],
            },
        ],
        "profiles": [
            {
                "key": "kb-answer",
                "consumer": "assistant",
                "objective": "answer-question",
                "budget": 1500,
                "rules": {"kb": {"mode": "retrieve", "maxItems": 5}},
            },
            {
                "key": "ticket-answer",
                "consumer": "assistant",
                "objective": "answer-ticket",
                "budget": 1500,
                "rules": {
                    "kb": {"mode": "retrieve", "maxItems": 3},
                    "tickets": {"mode": "inline", "maxItems": 5},
                },
            },
        ],
    }


class Server:
    """gunicorn on a SQLite file holding the bench's workspace, and a key of its user."""

    def __init__(self, directory: Path, items: int):
        database = migrated_database(directory)
        self.port = free_port()
        self.env = process_env(
            database,
            DEBUG="false",
            SECRET_KEY=secrets.token_urlsafe(50),
            HTTPS="false",
            ALLOWED_HOSTS="127.0.0.1",
            GUNICORN_BIND=f"127.0.0.1:{self.port}",
            GUNICORN_WORKERS="1",
            GUNICORN_ACCESSLOG="",
            API_THROTTLE_RESOLVE="1000000/minute",
            API_THROTTLE_SNAPSHOT="1000000/minute",
        )
        path = directory / "workspace.json"
        path.write_text(json.dumps(workspace(items)), encoding="utf-8")
        manage(self.env, "import_workspace", str(path))
        manage(
            self.env,
            "shell",
            "-c",
            "from django.contrib.auth.models import User; "
            "User.objects.create_user('bench', password='bench-password-1')",
        )
        made = manage(self.env, "create_api_key", "bench", "--name", "bench", "--scope", "resolve")
        self.key = made.stdout.strip().splitlines()[-1]
        self.process = None

    def start(self) -> None:
        gunicorn = str(Path(sys.executable).parent / "gunicorn")
        self.process = subprocess.Popen(
            [gunicorn, "-c", "scripts/gunicorn.conf.py", "ctxstudio.wsgi"],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if bare_post(self.port, "/healthz", None, "GET")[0] == 200:
                    return
            except OSError:
                time.sleep(0.2)
        raise SystemExit("the server did not start")

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)


def bare_post(port, path, body: bytes | None, method="POST", key=""):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {"Authorization": f"Token {key}", "Content-Type": "application/json"}
        connection.request(method, path, body, headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def row(name, seconds) -> dict:
    ms = [s * 1000 for s in seconds]
    median, p90 = statistics.median(ms), percentile(ms, 0.9)
    print(f"{name:<44} median {median:8.3f} ms   p90 {p90:8.3f} ms")
    return {"median_ms": round(median, 4), "p90_ms": round(p90, 4)}


def side_by_side(rounds: int, server: Server, directory: Path) -> dict:
    base = f"http://127.0.0.1:{server.port}"
    local = Client(base, key=server.key, snapshot_dir=directory / "snap", snapshot_interval=None)
    remote = Client(base, key=server.key, cache_entries=0, timeout=30)
    cached = Client(base, key=server.key, timeout=30)
    assert local.resolve(request=KB_REQUEST, local="only").origin is Origin.LOCAL
    compiled = local.snapshot.current.compiled  # the engine alone, on the same material
    body = json.dumps(KB_REQUEST).encode()
    status, expected = bare_post(server.port, "/api/v1/resolve", body, key=server.key)
    assert status == 200 and remote.resolve(request=KB_REQUEST).data == expected
    assert compiled.resolve_json(KB_REQUEST).data == expected
    runs = {name: [] for name in ("engine", "local", "bare", "remote", "not_modified")}
    cached.resolve(request=KB_REQUEST)
    calls = {
        "engine": lambda: compiled.resolve_json(KB_REQUEST),
        "local": lambda: local.resolve(request=KB_REQUEST, local="only"),
        "bare": lambda: bare_post(server.port, "/api/v1/resolve", body, key=server.key),
        "remote": lambda: remote.resolve(request=KB_REQUEST),
        "not_modified": lambda: cached.resolve(request=KB_REQUEST),
    }
    order = list(calls)
    shuffler = random.Random(1)
    for _ in range(rounds):
        shuffler.shuffle(order)  # no row always first (warm caches) or last
        for name in order:
            runs[name].append(timed(calls[name]))
    figures = {
        "engine": row("engine alone, in process (kb-answer)", runs["engine"]),
        "local": row("client, local from the snapshot", runs["local"]),
        "bare": row("bare http.client POST /resolve", runs["bare"]),
        "remote": row("client, remote (cache off)", runs["remote"]),
        "not_modified": row("client, remote with If-None-Match (304)", runs["not_modified"]),
    }
    ratio_local = figures["local"]["median_ms"] / figures["engine"]["median_ms"]
    ratio_remote = figures["remote"]["median_ms"] / figures["bare"]["median_ms"]
    print(f"local / engine  {ratio_local:5.2f}x (target <= 1.5x)")
    print(f"remote / bare   {ratio_remote:5.2f}x (target <= 1.2x)")
    for client in (local, remote, cached):
        client.close()
    return {
        **figures,
        "local_over_engine": round(ratio_local, 3),
        "remote_over_bare": round(ratio_remote, 3),
    }


def outage(server: Server, directory: Path, seconds: float, timeout: float) -> dict:
    """Three callers loop; the server stops halfway. Count answers, origins, exceptions."""
    base = f"http://127.0.0.1:{server.port}"
    callers = {
        "max_stale": (
            Client(base, key=server.key, timeout=timeout),
            {"max_stale": 3600},
            TICKET_REQUEST,
        ),
        "local": (
            Client(
                base,
                key=server.key,
                timeout=timeout,
                snapshot_dir=directory / "o",
                snapshot_interval=0.5,
            ),
            {"local": "only"},
            KB_REQUEST,
        ),
        "plain": (Client(base, key=server.key, timeout=timeout), {}, TICKET_REQUEST),
    }
    for client, options, request in callers.values():
        client.resolve(request=request, **options)  # warm: cached, or snapshot held
    results = {
        name: {"answers": 0, "exceptions": 0, "after_stop": {}, "slowest_error_s": 0.0}
        for name in callers
    }
    stopped = threading.Event()
    end = time.monotonic() + seconds

    def loop(name):
        client, options, request = callers[name]
        out = results[name]
        while time.monotonic() < end:
            after = stopped.is_set()
            started = time.monotonic()
            try:
                answer = client.resolve(request=request, **options)
                out["answers"] += 1
                if after:
                    origin = str(answer.origin)
                    out["after_stop"][origin] = out["after_stop"].get(origin, 0) + 1
            except ClientError as exc:
                out["exceptions"] += 1
                took = time.monotonic() - started
                out["slowest_error_s"] = round(max(out["slowest_error_s"], took), 3)
                kind = "ServerUnavailable" if isinstance(exc, ServerUnavailable) else exc.code
                out.setdefault("errors", {})[kind] = out.setdefault("errors", {}).get(kind, 0) + 1
            time.sleep(0.005)

    threads = [threading.Thread(target=loop, args=(name,)) for name in callers]
    for thread in threads:
        thread.start()
    time.sleep(seconds / 2)
    server.stop()
    stopped.set()
    for thread in threads:
        thread.join()
    for client, _, _ in callers.values():
        client.close()
    for name, out in results.items():
        print(
            f"outage {name:<10} answers {out['answers']:5d}  exceptions {out['exceptions']:4d}"
            f"  after stop {out['after_stop']}  errors {out.get('errors', {})}"
            f"  slowest error {out['slowest_error_s']} s (timeout {timeout} s)"
        )
    return results


def run(argv=None) -> dict:
    """Run the bench; return its figures (also printed)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000, help="articles (and tickets)")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--outage-seconds", type=float, default=6.0)
    parser.add_argument("--timeout", type=float, default=1.0, help="the callers' timeout")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ctxstudio-client-bench-") as name:
        directory = Path(name)
        os.chmod(directory, 0o700)
        server = Server(directory, args.items)
        server.start()
        try:
            print(f"== Python client ({args.items} articles, {args.rounds} rounds)")
            figures = side_by_side(args.rounds, server, directory)
            figures["outage"] = outage(server, directory, args.outage_seconds, args.timeout)
        finally:
            server.stop()
    print(json.dumps({"client_bench": figures}))
    return figures


def main(argv=None) -> int:
    run(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())

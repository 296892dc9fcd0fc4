"""Scale benchmark: a generated support desk at a real desk's size, on PostgreSQL behind gunicorn.

``python -m tests.perf.scale_bench --tickets 100000`` (``make bench-scale``). It generates the
desk of issue 20 (``generate_desk``: N tickets over N/100 customers, N/10 knowledge-base
articles, 40 policies, two profiles), then, against a database of its own (``ctxscale``,
dropped and created again) and a real gunicorn (production settings, 2 sync workers):

1. **load** — ``manage.py migrate``, ``import_workspace`` of the skeleton (consumers, layers
   without items, profiles), then every item through ``POST /api/v1/layers/<key>/bulk``
   (NDJSON batches of at most 10,000 lines, ``--ingest-streams`` of them in flight at once):
   the wall time and the server's peak memory; then ``VACUUM (ANALYZE)`` and ``CHECKPOINT``,
   as after any bulk load, so that neither autovacuum's pass nor the checkpoint of the load's
   writes runs beside the measurements;
2. **fresh worker → first answer** — gunicorn started again, the time of the first summary
   resolve (and the other worker's first answer, met during the warm-up);
3. **worker memory** — each worker's RSS after the warm-up (steady) and its peak (VmHWM);
4. **resolve summary under load** — ``--clients`` threads on the loopback, ``--requests``
   requests (random customers, random messages) or ``--load-seconds``, whichever ends first:
   p50, p95, throughput and errors;
5. **exactness** — ``--exact`` random requests: the API's bytes equal
   ``json_text(resolve(document, request))`` on the generated document, compiled here
   (``now`` pinned in every request);
6. **one new ticket** — a single-item POST (the writer's time), then the next resolves until
   each worker has answered once with the ticket in its output: each worker's first answer.

Every loop is bounded in count and time, only loopback addresses are used, and the server is
stopped in any case. ``--own-postgres`` runs all of it against a PostgreSQL cluster of its own
configured with ``tests/perf/postgresql-desk.conf`` (``tests.perf.own_postgres``) rather than
the machine's server; the report names the server's version and sizing either way. The desk
comes from ``tests.perf.desk``; ``--write DIR`` only writes it (``workspace.json`` and the
NDJSON batches) and exits. See docs/benchmarks.md ("Scale").
"""

import argparse
import contextlib
import json
import math
import os
import random
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from resolver import compile_workspace
from tests.perf import workloads
from tests.perf.desk import (
    BODY_WORDS,
    POLICIES,
    PROFILES,
    SEED,
    SUPPORT_PROFILE,
    TICKETS_PER_CUSTOMER,
    TODAY,
    Desk,
    desk_requests,
    generate_desk,
    write_desk,
)
from tests.perf.own_postgres import own_postgres
from tests.perf.web_bench import (
    DEFAULT_SERVER,
    PY,
    ROOT,
    Reply,
    database_drop,
    database_recreate,
    free_port,
    http_call,
    load_average,
    server_reachable,
)
from tests.perf.worker_profile import WorkerProfile

DATABASE = "ctxscale"


# --- processes -------------------------------------------------------------------------------


def proc_status(pid: int) -> dict[str, float]:
    """Return a process's VmRSS and VmHWM (MB) from /proc (Linux)."""
    figures = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                figures[name] = int(value.split()[0]) / 1024
    return figures


def cpu_ns(pid: int) -> int:
    """Return the CPU time a process's threads have run so far, in ns (schedstat)."""
    total = 0
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                total += int((task / "schedstat").read_text().split()[0])
    return total


def postgres_cpu_ns() -> int:
    """Return the CPU time every PostgreSQL process on the machine has run so far, in ns
    (the server and its backends: the scale benchmark is the database's only client)."""
    total = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "comm").read_text().startswith("postgres"):
                    total += cpu_ns(int(entry.name))
    return total


def machine_busy_share(before: list[int], after: list[int]) -> float:
    """Return the share of the machine's CPU time that was busy between two /proc/stat
    readings (``machine_cpu``): everything but idle and I/O wait."""
    spent = [b - a for a, b in zip(before, after, strict=True)]
    return 1 - (spent[3] + spent[4]) / max(1, sum(spent))


def machine_cpu() -> list[int]:
    """Return the machine's CPU time counters (the first line of /proc/stat)."""
    return [int(value) for value in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]


def child_pids(pid: int) -> list[int]:
    """Return a process's children (gunicorn's workers), [] once it is gone (Linux)."""
    with contextlib.suppress(OSError):
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return sorted(int(child) for child in children)
    return []


@dataclass
class Server:
    """A fresh database and a gunicorn serving it (production settings, loopback only)."""

    server_url: str
    database: str
    workers: int = 2
    hold_filtered: bool = False
    env: dict = field(default_factory=dict)
    port: int = 0
    token: str = ""
    process: subprocess.Popen | None = None

    def create(self) -> None:
        database_recreate(self.server_url, self.database)
        self.port = free_port()
        self.env = {
            **os.environ,
            "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "HTTPS": "false",
            "ALLOWED_HOSTS": "127.0.0.1",
            "DATABASE_URL": f"{self.server_url}/{self.database}",
            "API_THROTTLE_RESOLVE": "10000000/minute",
            "API_THROTTLE_USER": "10000000/minute",
            "API_THROTTLE_BULK": "100000/minute",
            "GUNICORN_BIND": f"127.0.0.1:{self.port}",
            "GUNICORN_WORKERS": str(self.workers),
            # Long requests at 300k tickets and more (the warm-up itself reports to the arbiter
            # while it lasts: docs/operations.md, "Warm workers").
            "GUNICORN_TIMEOUT": "1200",
            "GUNICORN_ACCESSLOG": "",
            "MAX_BODY_BYTES": str(64 * 1024 * 1024),
            "LOG_LEVEL": "CRITICAL",
            # Served filtered layers (the default) or, for comparison, held by every worker.
            "SERVE_FILTERED_LAYERS": "0" if self.hold_filtered else "1",
        }
        self.env.pop("CACHE_URL", None)

    def drop(self) -> None:
        database_drop(self.server_url, self.database)

    def manage(self, *argv: str, stdin: str | None = None) -> str:
        result = subprocess.run(
            [PY, "manage.py", *argv],
            cwd=ROOT,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if result.returncode:
            raise SystemExit(f"manage.py {' '.join(argv[:2])} failed:\n{result.stderr[-3000:]}")
        return result.stdout

    def sign_in(self, username: str = "scale") -> None:
        """Create a superuser and its API token (``create_api_key --user-token``)."""
        env = {**self.env, "DJANGO_SUPERUSER_PASSWORD": secrets.token_urlsafe(24)}
        email = f"{username}@example.com"
        result = subprocess.run(
            [
                PY,
                "manage.py",
                "createsuperuser",
                "--noinput",
                "--username",
                username,
                "--email",
                email,
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if result.returncode:
            raise SystemExit(f"createsuperuser failed:\n{result.stderr[-3000:]}")
        self.token = self.manage("create_api_key", username, "--user-token").strip()

    def start(self) -> float:
        """Start gunicorn; return the seconds until ``/healthz`` answered 200."""
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [str(Path(PY).parent / "gunicorn"), "-c", "scripts/gunicorn.conf.py", "ctxstudio.wsgi"],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                if self.call("GET", "/healthz", timeout=10).status == 200:
                    break
            if self.process.poll() is not None:
                raise SystemExit("gunicorn exited before it became healthy")
            time.sleep(0.1)
        else:
            raise SystemExit("gunicorn did not become healthy within 120 s")
        deadline = time.monotonic() + 30
        while len(self.worker_pids()) < self.workers and time.monotonic() < deadline:
            time.sleep(0.1)
        return time.perf_counter() - started

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)
        self.process = None

    def worker_pids(self) -> list[int]:
        return child_pids(self.process.pid)

    def close(self, *, keep_database: bool = False) -> None:
        """Stop gunicorn and drop the database (unless kept), whatever failed before."""
        self.stop()
        if not keep_database:
            with contextlib.suppress(Exception):
                self.drop()

    def call(self, method, path, body=None, *, headers=None, timeout=1200) -> Reply:
        return http_call(
            self.port, method, path, body, token=self.token, headers=headers, timeout=timeout
        )

    def resolve(self, request: dict, timeout=1200) -> Reply:
        return self.call("POST", "/api/v1/resolve", request, timeout=timeout)


class MemorySampler:
    """Sample the summed RSS of gunicorn's master and workers every ``interval`` seconds."""

    def __init__(self, server: Server, interval: float = 0.2):
        self.server, self.interval = server, interval
        self.peak_total_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            pids = [self.server.process.pid, *self.server.worker_pids()]
            total = sum(proc_status(pid).get("VmRSS", 0.0) for pid in pids)
            self.peak_total_mb = max(self.peak_total_mb, total)
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=5)


# --- the figures -------------------------------------------------------------------------------


class Figures(dict):
    """Figures of one run, each logged as soon as it is measured."""

    def __init__(self, log, **initial):
        super().__init__(**initial)
        self.log = log

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        self.log(f"      {key} = {value}")


def _connect(server_url: str, database: str):
    import psycopg

    parts = urllib.parse.urlsplit(server_url)
    return psycopg.connect(
        host=parts.hostname,
        port=parts.port or 5432,
        user=parts.username or "postgres",
        dbname=database,
        autocommit=True,
    )


def postgres_settings(server_url: str) -> str:
    """Return the server's version and the settings that size it, as the report shows them."""
    names = ("shared_buffers", "max_wal_size", "checkpoint_timeout", "synchronous_commit")
    with _connect(server_url, "postgres") as conn:
        version = conn.execute("SHOW server_version").fetchone()[0].split()[0]
        shown = [f"{name} {conn.execute(f'SHOW {name}').fetchone()[0]}" for name in names]
    return f"{version}: " + ", ".join(shown)


def vacuum_analyze(server_url: str, database: str) -> None:
    """``VACUUM (ANALYZE)`` the database, as an operator does after a bulk load (autovacuum
    would do it in the background anyway), then ``CHECKPOINT``: the measurements after it
    then share the machine neither with autovacuum's pass over a million new rows nor with
    the checkpointer writing out the load's GBs of dirty buffers."""
    with _connect(server_url, database) as conn:
        conn.execute("VACUUM (ANALYZE)")
        conn.execute("CHECKPOINT")


def database_transactions(server_url: str, database: str) -> int:
    """Return how many transactions the database has run so far (``pg_stat_database``; a
    statement outside a transaction is one), read from another database after waiting for
    the backends to report (they flush their counts when idle, at most every 10 s)."""
    time.sleep(STATS_FLUSH_S)
    with _connect(server_url, "postgres") as conn:
        row = conn.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
            [database],
        ).fetchone()
    return int(row[0]) if row else 0


# How long a backend may keep its statistics before reporting them (PostgreSQL's idle
# interval is 10 s).
STATS_FLUSH_S = 11


def ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


def percentile(values: list[float], share: float) -> float:
    """Return the ``share`` quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def workers_cpu_ns(server: Server) -> int:
    return sum(cpu_ns(pid) for pid in server.worker_pids())


def worker_memory(server: Server) -> tuple[list[float], list[float]]:
    statuses = [proc_status(pid) for pid in server.worker_pids()]
    return (
        [round(s.get("VmRSS", 0.0), 1) for s in statuses],
        [round(s.get("VmHWM", 0.0), 1) for s in statuses],
    )


def ingest(server: Server, desk: Desk, figures: Figures, log, *, streams: int = 1) -> None:
    """Send every item through the bulk endpoint, ``streams`` batches at a time (a sync with
    that many connections; each layer's batches in order, taken by whichever stream is free),
    time it and sample the server's memory. Answers do not depend on the order in which a
    layer's items arrive: every order of SPEC §4.5 ends by path."""
    work = [
        (layer["key"], body)
        for layer in desk.skeleton["layers"]
        for body in desk.batches(layer["key"])
    ]
    lock = threading.Lock()
    seconds: list[float] = []
    failures: list[str] = []

    def stream():
        while True:
            with lock:
                if not work or failures:
                    return
                key, body = work.pop(0)
            try:
                reply = server.call(
                    "POST",
                    f"/api/v1/layers/{key}/bulk",
                    body,
                    headers={"Content-Type": "application/x-ndjson"},
                    timeout=600,
                ).expect(200)
            except BaseException as exc:  # reported below, after every stream stopped
                with lock:
                    failures.append(f"{key}: {exc}")
                return
            with lock:
                seconds.append(reply.seconds)
                log(f"    {key}: batch {len(seconds)} ({reply.seconds:.2f} s) {reply.data[:120]!r}")

    started = time.perf_counter()
    with MemorySampler(server) as sampler:
        threads = [threading.Thread(target=stream) for _ in range(streams)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    if failures:
        raise SystemExit("bulk ingest failed: " + "; ".join(failures))
    figures["ingest_streams"] = streams
    figures["ingest_s"] = round(time.perf_counter() - started, 2)
    figures["ingest_batches"] = len(seconds)
    figures["ingest_slowest_batch_s"] = round(max(seconds), 2)
    figures["ingest_items_per_s"] = round(desk.item_count() / figures["ingest_s"])
    _, peaks = worker_memory(server)
    figures["ingest_worker_peak_mb"] = max(peaks)
    figures["ingest_server_peak_total_mb"] = round(sampler.peak_total_mb, 1)


def first_answers(server: Server, desk: Desk, figures: Figures, log) -> None:
    """Time the first summary resolve of a fresh gunicorn, then warm every worker."""
    warm = desk_requests(desk, 64, seed=desk.seed + 100)
    server.stop()
    log("    gunicorn started again (fresh workers)…")
    figures["start_to_healthy_s"] = round(server.start(), 2)
    cpu = workers_cpu_ns(server)
    reply = server.resolve(warm[0]).expect(200)
    figures["first_answer_s"] = round(reply.seconds, 2)
    figures["first_answer_cpu_s"] = round((workers_cpu_ns(server) - cpu) / 1e9, 2)
    # Two clients at once until every worker has answered: a sync worker that is busy does
    # not accept, so the cold one gets a request (the slowest answer is its first one).
    latencies, deadline = [], time.monotonic() + 900
    pending = iter(warm[1:])
    lock = threading.Lock()

    def client():
        while time.monotonic() < deadline:
            with lock:
                request = next(pending, None)
            if request is None:
                return
            latencies.append(server.resolve(request).expect(200).seconds)

    threads = [threading.Thread(target=client) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    figures["other_worker_first_answer_s"] = round(max(latencies), 2)
    rss, _ = worker_memory(server)
    figures["worker_rss_steady_mb"] = rss


def one_client(server: Server, desk: Desk, figures: Figures, *, count) -> None:
    """Resolve ``count`` summaries one after another: the time of one request unqueued."""
    latencies, deadline = [], time.monotonic() + 120
    for request in desk_requests(desk, count, seed=desk.seed + 150):
        if time.monotonic() > deadline:
            break
        latencies.append(server.resolve(request).expect(200).seconds)
    figures["one_client_p50_ms"] = ms(percentile(latencies, 0.5))
    figures["one_client_p95_ms"] = ms(percentile(latencies, 0.95))


def load(
    server: Server, desk: Desk, figures: Figures, *, clients, count, seconds, log, seed=None
) -> None:
    """Resolve summaries from ``clients`` threads: ``count`` requests or ``seconds``."""
    requests = desk_requests(desk, count, seed=desk.seed + 200 if seed is None else seed)
    pending = iter(requests)
    lock = threading.Lock()
    latencies, errors = [], []
    deadline = time.monotonic() + seconds

    def client():
        while time.monotonic() < deadline:
            with lock:
                request = next(pending, None)
            if request is None:
                return
            try:
                reply = server.resolve(request, timeout=120)
            except OSError as exc:
                errors.append(repr(exc))
                continue
            if reply.status == 200:
                latencies.append(reply.seconds)
            else:
                errors.append(reply.status)

    transactions = database_transactions(server.server_url, server.database)
    started, cpu = time.perf_counter(), workers_cpu_ns(server)
    # Everything else on the machine a request costs: PostgreSQL, and the load's own threads
    # (this process runs nothing else meanwhile).
    database_cpu, client_cpu, machine = postgres_cpu_ns(), time.process_time(), machine_cpu()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    cpu = workers_cpu_ns(server) - cpu
    database_cpu = postgres_cpu_ns() - database_cpu
    client_cpu = time.process_time() - client_cpu
    busy = machine_busy_share(machine, machine_cpu())
    figures["load_requests"] = len(latencies) + len(errors)
    figures["load_errors"] = len(errors)
    if errors:
        log(f"    errors: {errors[:10]}")
    figures["resolve_p50_ms"] = ms(percentile(latencies, 0.5))
    figures["resolve_p95_ms"] = ms(percentile(latencies, 0.95))
    figures["resolve_per_s"] = round(len(latencies) / elapsed, 1)
    served = max(1, len(latencies))
    figures["worker_cpu_per_request_ms"] = round(cpu / 1e6 / served, 2)
    figures["postgres_cpu_per_request_ms"] = round(database_cpu / 1e6 / served, 2)
    figures["client_cpu_per_request_ms"] = round(client_cpu * 1e3 / served, 2)
    figures["load_machine_busy_percent"] = round(busy * 100)
    transactions = database_transactions(server.server_url, server.database) - transactions
    figures["transactions_per_request"] = round(transactions / served, 2)


def exactness(server: Server, desk: Desk, figures: Figures, *, count, log) -> None:
    """Compare the API's answers with the engine's on the generated document."""
    started = time.perf_counter()
    compiled = compile_workspace(desk.document())
    figures["engine_compile_s"] = round(time.perf_counter() - started, 2)
    requests = desk_requests(desk, count, seed=desk.seed + 300, profiles=PROFILES)
    # The support profile retrieves from both large layers: its first resolution builds their
    # postings (the ticket history alone would not).
    first = desk_requests(desk, 1, seed=desk.seed + 301)[0]
    started = time.perf_counter()
    compiled.resolve_json(first)
    figures["engine_first_resolve_s"] = round(time.perf_counter() - started, 2)
    equal, compared, deadline = 0, 0, time.monotonic() + 600
    for request in requests:
        if time.monotonic() > deadline:
            break
        reply = server.resolve(request).expect(200)
        if reply.data == compiled.resolve_json(request).data:
            equal += 1
        elif "exact_first_difference" not in figures:
            figures["exact_first_difference"] = json.dumps(request)
        compared += 1
    figures["exact_equal"] = equal
    figures["exact_requests"] = compared
    engine_cpu(compiled, desk, figures, count=min(count_of_load(figures), ENGINE_REQUESTS))


# The load's requests the engine resolves in this process for its CPU time per request.
ENGINE_REQUESTS = 1_000


def count_of_load(figures: Figures) -> int:
    return max(1, figures.get("load_requests") or 1)


def engine_cpu(compiled, desk: Desk, figures: Figures, *, count: int) -> None:
    """The engine's CPU time per request on the load's own requests, in this process (the
    whole desk held, nothing fetched), after one pass that builds what their first use
    builds; and the workers' CPU time per request over it."""
    requests = desk_requests(desk, count, seed=desk.seed + 200)
    for request in requests:
        compiled.resolve_json(request)
    timed(compiled, requests, figures, "engine_cpu_per_request_ms", "worker_to_engine_cpu")
    engine_served_cpu(desk, figures, requests, held=compiled)


def timed(compiled, requests: list, figures: Figures, engine_key: str, ratio_key: str) -> None:
    """Time one pass of ``requests`` (process CPU per request) into ``engine_key``, and the
    workers' CPU time per request over it into ``ratio_key``."""
    started = time.process_time()
    for request in requests:
        compiled.resolve_json(request)
    engine = (time.process_time() - started) * 1e3 / len(requests)
    figures[engine_key] = round(engine, 3)
    worker = figures.get("worker_cpu_per_request_ms")
    if worker:
        figures[ratio_key] = round(worker / engine, 1)


def engine_served_cpu(desk: Desk, figures: Figures, requests: list, *, held=None) -> None:
    """The engine's CPU time per request on the workers' own path, in this process: the
    filtered layers served as the workers serve them, each request's customer met for the
    first time (its rows given as the database gives them: entries and packed stored terms,
    read beforehand), the other layers held. What a worker's engine does for a load request
    when its customer is not cached (nearly every request of a 1M desk's load); the whole
    desk held (``engine_cpu``) costs O(layer) for a filtered layer instead, so at 1M that
    figure is not the workers' engine. And the workers' CPU time per request over it. Each
    of ``requests`` (the load's, as ``engine_cpu`` resolved them) is first checked against
    the whole desk held's answer (``held``)."""
    from resolver import analysis
    from resolver.served import Fetched

    served = [layer["key"] for layer in desk.skeleton["layers"] if layer.get("itemFilter")]
    wanted = {request["input"]["customer_id"] for request in requests}
    rows: dict[tuple[str, str], list[dict]] = {}
    for key in served:
        for item in desk.items[key]:
            customer = item["metadata"].get("customer_id")
            if customer in wanted:
                rows.setdefault((key, customer), []).append(item)
    terms = {
        item["path"]: analysis.pack_terms(analysis.item_terms(item.get("title"), item.get("body")))
        for items in rows.values()
        for item in items
    }

    def source(needs):
        # A new Fetched each time: the customer met for the first time.
        out = {}
        for need in needs:
            entries = rows.get((need.layer, dict(need.filters).get("customer_id")), [])
            out[need.layer] = Fetched(
                entries=list(entries), terms={e["path"]: terms[e["path"]] for e in entries}
            )
        return out

    document = desk.document()
    skeleton = {
        **document,
        "layers": [
            {**layer, "items": []} if layer["key"] in served else layer
            for layer in document["layers"]
        ],
    }
    totals = {key: len(desk.items[key]) for key in served}
    compiled = compile_workspace(skeleton, served=totals, source=source)
    for request in requests:
        answer = compiled.resolve_json(request)
        if held is not None and answer.data != held.resolve_json(request).data:
            raise AssertionError(f"the served engine's answer differs: {json.dumps(request)}")
    timed(
        compiled,
        requests,
        figures,
        "engine_served_cpu_per_request_ms",
        "worker_to_engine_served_cpu",
    )


# A worker that ran less than this during a round served no request in it (an idle sync
# worker only wakes to touch its heartbeat file).
SERVED_CPU_NS = 500_000


def resolve_round(server: Server, request: dict, count: int) -> tuple[list[Reply], dict]:
    """Send ``count`` resolves at once; return the replies and each worker's CPU time (ns)."""
    pids = server.worker_pids()
    before = {pid: cpu_ns(pid) for pid in pids}
    replies = [None] * count

    def send(index):
        replies[index] = server.resolve(request, timeout=600).expect(200)

    threads = [threading.Thread(target=send, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return replies, {pid: cpu_ns(pid) - before[pid] for pid in pids}


def new_ticket(server: Server, desk: Desk, figures: Figures, *, reps, log) -> None:
    """Post one new ticket, then resolve until every worker has answered with it.

    The first resolve after the write is sent alone (its time is what the next caller
    waits); then rounds of one request per worker at once, so that a busy worker leaves the
    next request to another, until every worker has served one. What each worker paid to
    see the ticket is the CPU time of its first request after the write (schedstat: a sync
    worker serves one request at a time), against a warm request's CPU time.
    """
    rng = random.Random(desk.seed + 400)
    text = workloads.TextGenerator(desk.seed + 400)
    workers = len(server.worker_pids())
    writes, next_resolve, first_cpu, missed, invisible = [], [], [], 0, 0
    for rep in range(reps):
        customer = rng.choice(desk.customers)
        message = text.query(6)
        path = f"T-new-{rep:03d}"
        item = {
            "path": path,
            "title": message.capitalize(),
            "body": f"{message}. {message}. {text.body(BODY_WORDS)}",
            "metadata": {"customer_id": customer, "status": "open", "updated": TODAY.isoformat()},
        }
        request = {**workloads.request(SUPPORT_PROFILE, message, customer_id=customer)}
        request["detail"] = "summary"
        writes.append(server.call("POST", "/api/v1/layers/tickets/items/", item).expect(201))
        seen = {}
        for round_number in range(6):
            replies, spent = resolve_round(server, request, 1 if round_number == 0 else workers)
            if round_number == 0:
                next_resolve.append(replies[0].seconds)
            invisible += sum(f'"{path}"'.encode() not in reply.data for reply in replies)
            for pid, cpu in spent.items():
                if pid not in seen and cpu > SERVED_CPU_NS:
                    seen[pid] = cpu
            if len(seen) == workers:
                break
        missed += workers - len(seen)
        first_cpu.extend(seen.values())
    warm = []
    for _ in range(10):
        _, spent = resolve_round(server, request, 1)
        warm.append(sum(spent.values()))
    figures["new_ticket_post_ms"] = ms(statistics.median(reply.seconds for reply in writes))
    figures["new_ticket_next_resolve_ms"] = ms(statistics.median(next_resolve))
    figures["new_ticket_first_request_cpu_ms"] = round(statistics.median(first_cpu) / 1e6, 2)
    figures["warm_request_cpu_ms"] = round(statistics.median(warm) / 1e6, 2)
    figures["new_ticket_workers_not_reached"] = missed
    figures["new_ticket_invisible_answers"] = invisible


def run(args, log) -> dict:
    started = time.perf_counter()
    desk = generate_desk(
        args.tickets,
        tickets_per_customer=args.tickets_per_customer,
        kb=args.kb,
        policies=args.policies,
        seed=args.seed,
    )
    figures = Figures(
        log,
        tickets=len(desk.items["tickets"]),
        customers=len(desk.customers),
        kb=len(desk.items["kb"]),
        policies=len(desk.items["policies"]),
        workers=args.workers,
        cores=os.cpu_count(),
        load_start=load_average(),
    )
    figures["generate_s"] = round(time.perf_counter() - started, 2)
    figures["postgres"] = postgres_settings(args.server)
    server = Server(
        server_url=args.server,
        database=args.database,
        workers=args.workers,
        hold_filtered=args.hold_filtered,
    )
    try:
        log(f"  database {args.database}: migrate, import the skeleton…")
        server.create()
        started = time.perf_counter()
        server.manage("migrate", "--noinput", "-v", "0")
        figures["migrate_s"] = round(time.perf_counter() - started, 2)
        server.manage("import_workspace", "-", stdin=json.dumps(desk.skeleton))
        server.sign_in()
        server.start()
        log(f"  bulk ingest of {desk.item_count():,} items…")
        ingest(server, desk, figures, log, streams=args.ingest_streams)
        log("  VACUUM (ANALYZE) and CHECKPOINT after the load…")
        started = time.perf_counter()
        vacuum_analyze(args.server, args.database)
        figures["vacuum_s"] = round(time.perf_counter() - started, 2)
        log("  fresh worker → first answer…")
        first_answers(server, desk, figures, log)
        log("  one client, 100 requests…")
        one_client(server, desk, figures, count=100)
        log(f"  load: {args.clients} clients, {args.requests} requests…")
        load(
            server,
            desk,
            figures,
            clients=args.clients,
            count=args.requests,
            seconds=args.load_seconds,
            log=log,
        )
        if args.worker_profile:
            log("  profiled load: py-spy on each worker, pg_stat_statements…")
            profiled_load(
                server,
                desk,
                figures,
                clients=args.clients,
                count=args.requests,
                log=log,
                keep=args.profile_folder,
            )
        log(f"  exactness: {args.exact} requests…")
        exactness(server, desk, figures, count=args.exact, log=log)
        _, peaks = worker_memory(server)
        figures["worker_rss_peak_mb"] = peaks
        log("  one new ticket…")
        new_ticket(server, desk, figures, reps=args.new_tickets, log=log)
    finally:
        server.close(keep_database=args.keep_database)
    figures["load_end"] = load_average()
    return dict(figures)


# The statements reported of the profiled round: the most costly by planning + execution.
STATEMENTS_SHOWN = 6


def profiled_load(
    server: Server, desk: Desk, figures: Figures, *, clients, count, log, keep=None
) -> None:
    """Run the load again (other requests of the same kind) while py-spy samples each worker
    (``tests.perf.worker_profile``): where a worker's time goes, by step; and, when the
    server has ``pg_stat_statements`` (``--worker-profile`` with ``--own-postgres`` loads it),
    PostgreSQL's planning and execution time per request by statement. A round of its own,
    after the measured one: the sampling and the statistics do not touch the figures above.
    ``keep``: a folder to leave py-spy's raw (collapsed) stacks in, one file per worker."""
    with _connect(server.server_url, server.database) as conn:
        statements = conn.execute(
            "SELECT 1 FROM pg_available_extensions WHERE name = 'pg_stat_statements'"
            " AND current_setting('shared_preload_libraries') LIKE '%pg_stat_statements%'"
        ).fetchone()
        if statements:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            conn.execute("SELECT pg_stat_statements_reset()")
    folder = Path(keep or tempfile.mkdtemp(prefix="ctxscale-pyspy-"))
    profile = WorkerProfile(server.worker_pids(), folder)
    round_figures = Figures(lambda message: None)
    load(
        server,
        desk,
        round_figures,
        clients=clients,
        count=count,
        seconds=120,
        log=log,
        seed=desk.seed + 250,
    )
    samples, shares = profile.stop()
    if not keep:
        shutil.rmtree(folder, ignore_errors=True)
    served = max(1, round_figures.get("load_requests") or 1)
    figures["profiled_resolve_per_s"] = round_figures.get("resolve_per_s")
    figures["worker_profile_samples"] = samples
    figures["worker_profile"] = shares
    if not statements:
        return
    with _connect(server.server_url, server.database) as conn:
        rows = conn.execute(
            "SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), 90), calls,"
            " total_plan_time, total_exec_time FROM pg_stat_statements"
            " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " ORDER BY total_plan_time + total_exec_time DESC"
        ).fetchall()
    figures["postgres_plan_ms_per_request"] = round(sum(r[2] for r in rows) / served, 3)
    figures["postgres_exec_ms_per_request"] = round(sum(r[3] for r in rows) / served, 3)
    figures["postgres_statements"] = [
        {
            "statement": text,
            "calls_per_request": round(calls / served, 2),
            "plan_ms": round(plan / calls, 3) if calls else 0,
            "exec_ms": round(execute / calls, 3) if calls else 0,
        }
        for text, calls, plan, execute in rows[:STATEMENTS_SHOWN]
    ]


# --- the report --------------------------------------------------------------------------------

ROWS = (
    ("PostgreSQL", "postgres", ""),
    ("generate the desk (this process)", "generate_s", "s"),
    ("bulk ingest, all items (NDJSON, ≤ 10k a batch)", "ingest_s", "s"),
    ("  batches in flight at once (--ingest-streams)", "ingest_streams", ""),
    ("  items per second", "ingest_items_per_s", ""),
    ("  slowest batch", "ingest_slowest_batch_s", "s"),
    ("  server memory during ingest: worker peak (VmHWM)", "ingest_worker_peak_mb", "MB"),
    ("  server memory during ingest: all processes (RSS)", "ingest_server_peak_total_mb", "MB"),
    ("VACUUM (ANALYZE) and CHECKPOINT after the load", "vacuum_s", "s"),
    ("gunicorn start → /healthz", "start_to_healthy_s", "s"),
    ("fresh worker → first answer (summary resolve)", "first_answer_s", "s"),
    ("  the worker's CPU time for it", "first_answer_cpu_s", "s"),
    (
        "the other worker's first answer (slowest warm-up answer)",
        "other_worker_first_answer_s",
        "s",
    ),
    ("worker RSS, steady (after warm-up)", "worker_rss_steady_mb", "MB"),
    ("worker RSS, peak (VmHWM)", "worker_rss_peak_mb", "MB"),
    ("resolve summary p50, one client", "one_client_p50_ms", "ms"),
    ("resolve summary p95, one client", "one_client_p95_ms", "ms"),
    ("resolve summary p50, loopback load (--clients threads)", "resolve_p50_ms", "ms"),
    ("resolve summary p95", "resolve_p95_ms", "ms"),
    ("  throughput", "resolve_per_s", "req/s"),
    ("  workers' CPU time per request", "worker_cpu_per_request_ms", "ms"),
    ("  PostgreSQL's CPU time per request", "postgres_cpu_per_request_ms", "ms"),
    (
        "  the load's own CPU time per request (its client threads)",
        "client_cpu_per_request_ms",
        "ms",
    ),
    ("  the machine busy during the load", "load_machine_busy_percent", "%"),
    (
        "  database transactions per request (a statement outside one counts one)",
        "transactions_per_request",
        "",
    ),
    ("  requests / errors", ("load_requests", "load_errors"), ""),
    ("one new ticket: POST (the writer)", "new_ticket_post_ms", "ms"),
    ("  the next resolve (with the ticket)", "new_ticket_next_resolve_ms", "ms"),
    ("  each worker's first request after it: CPU time", "new_ticket_first_request_cpu_ms", "ms"),
    ("  a warm request: CPU time", "warm_request_cpu_ms", "ms"),
    (
        "  answers without the new ticket / workers not reached",
        ("new_ticket_invisible_answers", "new_ticket_workers_not_reached"),
        "",
    ),
    ("answers equal to resolve(document, request)", ("exact_equal", "exact_requests"), ""),
    ("engine in this process: compile_workspace", "engine_compile_s", "s"),
    ("engine in this process: first resolve (support-answer)", "engine_first_resolve_s", "s"),
    ("engine in this process: CPU time per load request", "engine_cpu_per_request_ms", "ms"),
    ("workers' CPU time per request ÷ the engine's", "worker_to_engine_cpu", "×"),
    (
        "engine on the workers' path (customer met first): CPU per load request",
        "engine_served_cpu_per_request_ms",
        "ms",
    ),
    ("workers' CPU time per request ÷ that engine's", "worker_to_engine_served_cpu", "×"),
)


def cell(figures: dict, key, unit: str) -> str:
    if isinstance(key, tuple):
        values = [figures.get(part) for part in key]
        return "—" if None in values else " / ".join(f"{value:,}" for value in values)
    value = figures.get(key)
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " / ".join(f"{part:,.0f}" for part in value) + f" {unit}"
    return f"{value:,} {unit}".strip()


def scalar(value):
    return max(value) if isinstance(value, list) else value


def growth_exponent(small: dict, large: dict, key) -> str:
    """Return log(large/small) / log(size ratio): 1 is linear in the tickets."""
    if isinstance(key, tuple):
        return ""
    a, b = scalar(small.get(key)), scalar(large.get(key))
    numbers = isinstance(a, int | float) and isinstance(b, int | float)
    if not numbers or not a or not b or large["tickets"] == small["tickets"]:
        return ""
    return f"{math.log(b / a) / math.log(large['tickets'] / small['tickets']):.2f}"


def format_report(results: list[dict]) -> str:
    header = [f"{r['tickets']:,} tickets / {r['kb']:,} kb" for r in results]
    exponent = len(results) > 1
    lines = [
        "| figure | " + " | ".join(header) + (" | growth exponent |" if exponent else " |"),
        "|---" * (len(header) + 1 + exponent) + "|",
    ]
    for label, key, unit in ROWS:
        row = f"| {label} | " + " | ".join(cell(r, key, unit) for r in results) + " |"
        if exponent:
            row += f" {growth_exponent(results[0], results[-1], key)} |"
        lines.append(row)
    loads = " | ".join(f"{r['load_start']}, {r['load_end']}" for r in results)
    lines.append(f"| load average (start, end) | {loads} |" + (" |" if exponent else ""))
    return "\n".join(lines)


PG_STAT_STATEMENTS = (
    "shared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.track_planning = on\n"
)


def format_profile(figures: dict) -> str:
    """The profiled round's section of the report (empty without ``--worker-profile``)."""
    shares = figures.get("worker_profile")
    if not shares:
        return ""
    lines = [
        "",
        f"Where a worker's time goes under load (py-spy, {figures['worker_profile_samples']:,}"
        f" samples of the workers while running; {figures['profiled_resolve_per_s']} req/s"
        " in the profiled round)",
        "",
        "| step | share | most sampled innermost frames (share of all samples) |",
        "|---|---|---|",
    ]
    lines += [
        f"| {step} | {share} % | {'; '.join(frames)} |" for step, (share, frames) in shares.items()
    ]
    if figures.get("postgres_statements"):
        lines += [
            "",
            f"PostgreSQL per request: planning {figures['postgres_plan_ms_per_request']} ms,"
            f" execution {figures['postgres_exec_ms_per_request']} ms (pg_stat_statements)",
            "",
            "| statement | calls per request | plan ms | exec ms |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| `{row['statement']}` | {row['calls_per_request']} | {row['plan_ms']} |"
            f" {row['exec_ms']} |"
            for row in figures["postgres_statements"]
        ]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tickets", type=int, default=10_000, help="tickets (default 10000)")
    parser.add_argument("--tickets-per-customer", type=int, default=TICKETS_PER_CUSTOMER)
    parser.add_argument("--kb", type=int, default=None, help="articles (default tickets / 10)")
    parser.add_argument("--policies", type=int, default=POLICIES)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (default 2)")
    parser.add_argument(
        "--hold-filtered",
        action="store_true",
        help="every worker holds the tickets (SERVE_FILTERED_LAYERS=0), as before issue 20",
    )
    parser.add_argument(
        "--ingest-streams",
        type=int,
        default=1,
        help="bulk ingest requests in flight at once (default 1)",
    )
    parser.add_argument("--clients", type=int, default=8, help="load threads (default 8)")
    parser.add_argument("--requests", type=int, default=2000, help="load requests (2000)")
    parser.add_argument("--load-seconds", type=float, default=120, help="load time cap (120)")
    parser.add_argument("--exact", type=int, default=200, help="exactness requests (200)")
    parser.add_argument("--new-tickets", type=int, default=5, help="new-ticket repetitions")
    parser.add_argument(
        "--server",
        default=os.environ.get("BENCH_POSTGRES", DEFAULT_SERVER),
        help="PostgreSQL server URL without a database name (BENCH_POSTGRES)",
    )
    parser.add_argument(
        "--own-postgres",
        action="store_true",
        help="run a PostgreSQL of its own with tests/perf/postgresql-desk.conf (needs initdb)",
    )
    parser.add_argument("--database", default=DATABASE, help="dropped and created (ctxscale)")
    parser.add_argument("--keep-database", action="store_true", help="do not drop it at the end")
    parser.add_argument(
        "--worker-profile",
        action="store_true",
        help="after the load, a profiled round: py-spy per worker, pg_stat_statements",
    )
    parser.add_argument(
        "--profile-folder",
        metavar="DIR",
        help="with --worker-profile: keep py-spy's raw stacks (one file per worker) in DIR",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    parser.add_argument(
        "--compare", metavar="FILE", help="a previous --json at another size: growth exponents"
    )
    parser.add_argument(
        "--write", metavar="DIR", help="only write the desk (workspace.json, NDJSON batches)"
    )
    args = parser.parse_args(argv)

    def log(message):
        print(message, file=sys.stderr, flush=True)

    if args.write:
        desk = generate_desk(
            args.tickets,
            tickets_per_customer=args.tickets_per_customer,
            kb=args.kb,
            policies=args.policies,
            seed=args.seed,
        )
        for path in write_desk(desk, Path(args.write)):
            log(f"wrote {path}")
        return 0
    with contextlib.ExitStack() as stack:
        if args.own_postgres:
            extra = PG_STAT_STATEMENTS if args.worker_profile else ""
            args.server = stack.enter_context(own_postgres(log, extra=extra))
        if not server_reachable(args.server):
            log(f"scale benchmark skipped: no PostgreSQL server at {args.server}")
            return 0
        log(f"scale benchmark: {args.tickets:,} tickets")
        figures = run(args, log)
    results = [figures]
    if args.compare:
        results = sorted(
            [json.loads(Path(args.compare).read_text()), figures], key=lambda r: r["tickets"]
        )
    print(
        f"Scale benchmark — PostgreSQL, gunicorn {args.workers} sync workers, "
        f"{os.cpu_count()} cores"
    )
    print(format_report(results))
    print(format_profile(figures))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

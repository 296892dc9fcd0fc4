"""Read replica benchmark: ``python -m tests.perf.replica_bench [--tickets 20000]``.

A primary cluster of its own (``initdb``, ``wal_level = replica``) and a streaming replica
of it (``pg_basebackup -R``), both on loopback ports (``tests.pg_clusters``), a Redis of its
own (the shared cache: throttle counters and the record of the last write), the generated
desk of ``tests.perf.desk`` (``--tickets``, default 20,000) loaded through the bulk API, and
two gunicorns (2 sync workers each, production settings) on the same database: one with
``DATABASE_REPLICA_URL`` (reads on the replica), one without (primary only). Then:

1. **resolve load** — ``--clients`` threads (default 8), ``--requests`` summary resolves
   (random customers and messages) against each server in turn, ``--rounds`` times
   (alternating, so both see the same machine): p50, p95, throughput, and who answered
   (the replica server's ``ctxstudio_replica_reads_total``);
2. **writes while reading** — one writer posts new tickets of ``--customers`` customers for
   ``--write-seconds`` while the readers resolve the same customers on the replica server;
   in the middle the replica's replay is paused for ``--pause-seconds``
   (``pg_wal_replay_pause()``), a replica that stops applying. A sampler reads the replica's
   lag every 50 ms (the primary's WAL position against the replica's replay position, in
   bytes; ``now() - pg_last_xact_replay_timestamp()`` on the replica). Every answer is
   checked: its tickets layer's candidates (the customer's tickets the answer read) must
   count every ticket of that customer whose POST was answered before the resolve was sent
   (a stale answer otherwise), and no more than those whose POST had been sent.

Every loop is bounded in count and time; everything it starts is stopped in any case.
Figures: docs/benchmarks.md ("Read replica").
"""

import argparse
import concurrent.futures
import contextlib
import json
import os
import random
import re
import secrets
import shutil
import statistics
import sys
import tempfile
import threading
import time

from tests import pg_clusters
from tests.perf import workloads
from tests.perf.desk import BODY_WORDS, SUPPORT_PROFILE, TODAY, desk_requests, generate_desk
from tests.perf.scale_bench import Figures, Server, ingest, ms, percentile, vacuum_analyze
from tests.perf.web_bench import free_port, load_average

DATABASE = "ctxreplica"
METRICS_TOKEN = secrets.token_urlsafe(16)
# The bench's clusters: durable (fsync on), sized for a small desk.
CLUSTER_SETTINGS = "shared_buffers = 256MB\nmax_connections = 60\nmax_wal_size = 2GB\n"


def outcomes(server: Server) -> dict[str, float]:
    """The replica server's ``ctxstudio_replica_reads_total`` by outcome."""
    reply = server.call("GET", "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    text = reply.expect(200).data.decode()
    found = re.findall(r'^ctxstudio_replica_reads_total\{outcome="(\w+)"\} (\S+)$', text, re.M)
    return {outcome: float(value) for outcome, value in found}


def grown(before: dict, after: dict) -> dict[str, int]:
    return {key: int(after.get(key, 0) - before.get(key, 0)) for key in sorted(after)}


def metrics_folder(stack: contextlib.ExitStack) -> str:
    """A metrics folder of one server's own (removed at the end)."""
    folder = tempfile.mkdtemp(prefix="ctx-replica-bench-metrics-")
    stack.callback(shutil.rmtree, folder, ignore_errors=True)
    return folder


def twin(server: Server, stack: contextlib.ExitStack, **env: str) -> Server:
    """Another gunicorn on the same database, with ``env`` over the first one's."""
    other = Server(server_url=server.server_url, database=server.database, workers=server.workers)
    other.port = free_port()
    other.token = server.token
    other.env = {
        **server.env,
        **env,
        "GUNICORN_BIND": f"127.0.0.1:{other.port}",
        "PROMETHEUS_MULTIPROC_DIR": metrics_folder(stack),
    }
    return other


def resolve_load(server: Server, requests: list[dict], clients: int) -> dict:
    """Send ``requests`` from ``clients`` threads; return p50/p95 (ms), throughput, errors."""

    def one(request):
        try:
            return server.resolve(request, timeout=60)
        except OSError:
            return None

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        replies = list(pool.map(one, requests))
    elapsed = time.perf_counter() - started
    latencies = [r.seconds for r in replies if r is not None and r.status == 200]
    return {
        "p50_ms": ms(percentile(latencies, 0.5)),
        "p95_ms": ms(percentile(latencies, 0.95)),
        "per_s": round(len(latencies) / elapsed, 1),
        "errors": len(replies) - len(latencies),
    }


def candidates(answer: bytes) -> int | None:
    """The tickets layer's candidates in a summary answer (the customer's tickets read)."""
    layers = json.loads(answer).get("layers") or []
    for layer in layers if isinstance(layers, list) else layers.values():
        if layer.get("layer") == "tickets":
            return layer["applicable"]["candidates"]
    return None


class LagSampler:
    """Sample the replica's lag every ``interval`` seconds while in use."""

    def __init__(self, primary, replica, interval: float = 0.05):
        self.primary, self.replica, self.interval = primary, replica, interval
        self.bytes: list[int] = []
        self.seconds: list[float] = []
        self._stop = threading.Event()

    def _run(self):
        while not self._stop.wait(self.interval):
            with contextlib.suppress(Exception):
                current = self.primary.sql("SELECT pg_current_wal_lsn()")[0][0]
                row = self.replica.sql(
                    "SELECT pg_wal_lsn_diff(%s::pg_lsn, pg_last_wal_replay_lsn()), "
                    "EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())",
                    (str(current),),
                )[0]
                self.bytes.append(max(0, int(row[0])))
                self.seconds.append(max(0.0, float(row[1] or 0)))

    def __enter__(self):
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=10)


def writes_while_reading(server, primary, replica, desk, figures, args, log) -> None:
    rng = random.Random(desk.seed + 500)
    text = workloads.TextGenerator(desk.seed + 500)
    chosen = rng.sample(desk.customers, args.customers)
    lock = threading.Lock()
    # Per customer: tickets whose POST was answered (seen by any later reader), and sent.
    answered = {customer: 0 for customer in chosen}
    sent = {customer: 0 for customer in chosen}
    base = {}
    for customer in chosen:
        request = workloads.request(SUPPORT_PROFILE, "refund", customer_id=customer)
        base[customer] = candidates(server.resolve({**request, "detail": "summary"}).data)
    stop = threading.Event()
    latencies, stale, too_many, reads, posts, errors = [], [], [], 0, [], []

    def writer():
        number = 0
        while not stop.is_set() and number < args.max_writes:
            customer = chosen[number % len(chosen)]
            message = text.query(6)
            item = {
                "path": f"T-replica-{number:05d}",
                "title": message.capitalize(),
                "body": f"{message}. {text.body(BODY_WORDS)}",
                "metadata": {"customer_id": customer, "status": "open", "updated": str(TODAY)},
            }
            with lock:
                sent[customer] += 1
            reply = server.call("POST", "/api/v1/layers/tickets/items/", item, timeout=60)
            if reply.status != 201:
                errors.append(reply.status)
            else:
                posts.append(reply.seconds)
            with lock:
                answered[customer] += reply.status == 201
            number += 1
            if args.write_interval:
                time.sleep(args.write_interval)

    def reader(seed):
        nonlocal reads
        local = random.Random(seed)
        while not stop.is_set():
            customer = local.choice(chosen)
            request = workloads.request(SUPPORT_PROFILE, text.query(5), customer_id=customer)
            with lock:
                at_least = base[customer] + answered[customer]
            reply = server.resolve({**request, "detail": "summary"}, timeout=60)
            with lock:
                at_most = base[customer] + sent[customer]
            if reply.status != 200:
                errors.append(reply.status)
                continue
            found = candidates(reply.data)
            reads += 1
            latencies.append(reply.seconds)
            if found is None or found < at_least:
                stale.append((customer, found, at_least))
            elif found > at_most:
                too_many.append((customer, found, at_most))

    before = outcomes(server)
    threads = [threading.Thread(target=writer)]
    threads += [threading.Thread(target=reader, args=(n,)) for n in range(args.clients)]
    with LagSampler(primary, replica) as sampler:
        for thread in threads:
            thread.start()
        third = args.write_seconds / 3
        time.sleep(third)
        log(f"    replay paused for {args.pause_seconds} s…")
        pause_before = outcomes(server)
        replica.sql("SELECT pg_wal_replay_pause()")
        paused_from = len(sampler.bytes)
        time.sleep(args.pause_seconds)
        replica.sql("SELECT pg_wal_replay_resume()")
        paused_to = len(sampler.bytes)
        pause_after = outcomes(server)
        time.sleep(max(0.0, args.write_seconds - third - args.pause_seconds))
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
    after = outcomes(server)
    running = sampler.bytes[:paused_from] + sampler.bytes[paused_to:]
    running_s = sampler.seconds[:paused_from] + sampler.seconds[paused_to:]
    figures["write_phase_writes"] = len(posts)
    figures["write_phase_post_p50_ms"] = ms(statistics.median(posts)) if posts else None
    figures["write_phase_reads"] = reads
    figures["write_phase_read_p50_ms"] = ms(percentile(latencies, 0.5))
    figures["write_phase_read_p95_ms"] = ms(percentile(latencies, 0.95))
    figures["write_phase_outcomes"] = grown(before, after)
    figures["paused_outcomes"] = grown(pause_before, pause_after)
    figures["write_phase_stale_answers"] = len(stale)
    figures["write_phase_answers_beyond_sent"] = len(too_many)
    figures["write_phase_errors"] = len(errors)
    figures["lag_samples"] = len(sampler.bytes)
    figures["lag_bytes_p50_p95_max_streaming"] = [
        int(percentile(running, share)) for share in (0.5, 0.95, 1.0)
    ]
    figures["lag_replay_age_s_p50_p95_max_streaming"] = [
        round(percentile(running_s, share), 3) for share in (0.5, 0.95, 1.0)
    ]
    paused = sampler.bytes[paused_from:paused_to] or [0]
    figures["lag_bytes_max_paused"] = max(paused)
    figures["lag_replay_age_s_max_paused"] = round(
        max(sampler.seconds[paused_from:paused_to] or [0]), 3
    )
    if stale:
        log(f"    STALE answers: {stale[:10]}")


def run(args, log) -> dict:
    desk = generate_desk(args.tickets)
    figures = Figures(
        log,
        tickets=len(desk.items["tickets"]),
        clients=args.clients,
        workers=args.workers,
        cores=os.cpu_count(),
        load_start=load_average(),
    )
    with contextlib.ExitStack() as stack:
        primary = stack.enter_context(
            pg_clusters.primary_cluster(CLUSTER_SETTINGS, prefix="ctx-replica-bench-primary-")
        )
        replica = stack.enter_context(
            pg_clusters.replica_cluster(primary, prefix="ctx-replica-bench-standby-")
        )
        cache_url = stack.enter_context(pg_clusters.redis_server())
        if cache_url is None:
            raise SystemExit("the replica benchmark needs redis-server (the shared cache)")
        figures["postgres"] = primary.sql("SHOW server_version")[0][0].split()[0]
        log(f"  primary :{primary.port}, replica :{replica.port}, Redis {cache_url}")
        plain = Server(server_url=primary.url("").rstrip("/"), database=DATABASE)
        plain.workers = args.workers
        plain.create()
        plain.env.update(
            {
                "CACHE_URL": cache_url,
                "METRICS_TOKEN": METRICS_TOKEN,
                "GUNICORN_WORKERS": str(args.workers),
                "PROMETHEUS_MULTIPROC_DIR": metrics_folder(stack),
            }
        )
        plain.manage("migrate", "--noinput", "-v", "0")
        plain.manage("import_workspace", "-", stdin=json.dumps(desk.skeleton))
        plain.sign_in()
        plain.start()
        stack.callback(plain.stop)
        log(f"  bulk ingest of {desk.item_count():,} items…")
        ingest(plain, desk, figures, log)
        vacuum_analyze(plain.server_url, DATABASE)
        figures["replica_catch_up_after_load_s"] = round(
            pg_clusters.replayed(primary, replica, 120), 2
        )
        served = twin(plain, stack, DATABASE_REPLICA_URL=replica.url(DATABASE))
        served.start()
        stack.callback(served.stop)
        for server in (plain, served):  # warm both: every worker compiles, customers cached
            resolve_load(server, desk_requests(desk, 64, seed=desk.seed + 100), args.clients)
        results = {"primary": [], "replica": []}
        before = outcomes(served)
        for round_number in range(args.rounds):
            requests = desk_requests(desk, args.requests, seed=desk.seed + 200 + round_number)
            for name, server in (("replica", served), ("primary", plain)):
                results[name].append(resolve_load(server, requests, args.clients))
                log(f"    round {round_number + 1} {name}: {results[name][-1]}")
        figures["read_outcomes"] = grown(before, outcomes(served))
        for name, rounds in results.items():
            figures[f"{name}_p50_ms"] = round(statistics.median(r["p50_ms"] for r in rounds), 2)
            figures[f"{name}_p95_ms"] = round(statistics.median(r["p95_ms"] for r in rounds), 2)
            figures[f"{name}_per_s"] = round(statistics.median(r["per_s"] for r in rounds), 1)
            figures[f"{name}_errors"] = sum(r["errors"] for r in rounds)
        log(f"  writes while reading ({args.write_seconds} s, {args.clients} readers)…")
        writes_while_reading(served, primary, replica, desk, figures, args, log)
    figures["load_end"] = load_average()
    return dict(figures)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=800, help="per server and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--customers", type=int, default=8)
    parser.add_argument("--write-seconds", type=float, default=12.0)
    parser.add_argument("--pause-seconds", type=float, default=3.0)
    parser.add_argument("--write-interval", type=float, default=0.0)
    parser.add_argument("--max-writes", type=int, default=5_000)
    parser.add_argument("--json", help="write the figures to this file too")
    args = parser.parse_args(argv)
    if pg_clusters.server_programs() is None:
        raise SystemExit("needs PostgreSQL's initdb, pg_ctl and pg_basebackup")

    def log(message):
        print(message, flush=True)

    figures = run(args, log)
    print(json.dumps(figures, indent=2))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(figures, handle, indent=2)
    return 1 if figures.get("write_phase_stale_answers") else 0


if __name__ == "__main__":
    sys.exit(main())

"""Scale-out benchmark: two app servers behind haproxy, one Redis, PgBouncer, prepared
statements, and hash partitioning of the largest tables, on the loopback.

``python -m tests.perf.scaleout_bench`` (``--tickets``, 5,000 by default). It generates the
support desk of ``tests.perf.desk``, loads it into a database of its own (``ctxscaleout``,
created again, dropped at the end) through ``tests.perf.scale_bench.Server`` (migrate, the
skeleton, bulk ingest, VACUUM ANALYZE), starts a Redis of its own, and then, with app servers
from ``tests.perf.scaleout`` (gunicorn with its own workers and texts folder, a task worker
beside it) behind haproxy (health checks on ``/readyz``, retries and redispatch), measures:

1. **throughput** — summary resolves from ``--clients`` threads through haproxy for
   ``--seconds``: 1 server × 1 worker, 1 server × 2 workers, 2 servers × 1 worker (the same
   workers as 1 × 2: on a 2-core machine more workers only queue on the cores);
2. **PgBouncer vs direct** — 2 servers × 1 worker, the database reached through PgBouncer
   (transaction pooling, ``DB_POOLER=pgbouncer``) or directly: p50/p95 and throughput;
3. **prepared statements** — one server, ``DB_PREPARE_THRESHOLD=1`` or not: one client's
   p50/p95 (no queueing) and the load's;
4. **save on A, resolve on B** — ``--trials`` times: a new ticket posted to server A, the
   very next resolve sent to server B: does it hold the ticket;
5. **a server killed under load** — SIGKILL (the machine dies) and SIGTERM (a restart): the
   requests that failed (haproxy retries a request whose server dropped it), and where the
   answers came from before and after;
6. ``--partition`` — the served statement (``profiles.workspace.served.served_statement``)
   and a batch's insert on plain copies of ``profiles_itemkey``/``profiles_item``/
   ``profiles_itemterms`` against hash-partitioned copies (``--partitions``).

Every loop is bounded, only loopback addresses are used, and every process is stopped in any
case. Figures are noisy on a shared machine: compare the rows of one run (the load average is
printed). See docs/benchmarks.md ("Scale-out") and docs/operations.md ("Scaling out").
"""

import argparse
import contextlib
import http.client
import json
import os
import random
import signal
import statistics
import sys
import threading
import time
from collections import Counter

from tests.perf import workloads
from tests.perf.desk import BODY_WORDS, SEED, SUPPORT_PROFILE, TODAY, desk_requests, generate_desk
from tests.perf.scale_bench import Figures, Server, ingest, percentile, vacuum_analyze
from tests.perf.scaleout import app_server, haproxy, pgbouncer, redis_server
from tests.perf.web_bench import DEFAULT_SERVER, http_call, load_average, server_reachable

DATABASE = "ctxscaleout"


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def served_by(headers: dict) -> str:
    """The app server haproxy sent the request to (its ``X-Served-By`` response header)."""
    return next((v for k, v in headers.items() if k.lower() == "x-served-by"), "")


class Load:
    """Resolves from ``clients`` threads to ``port`` for ``seconds`` (at most ``count``)."""

    def __init__(self, port, token, requests, *, clients, seconds):
        self.port, self.token, self.requests = port, token, requests
        self.clients, self.seconds = clients, seconds
        self.latencies, self.errors, self.served_by = [], [], []
        # Answers whose server died while sending them (not counted in ``errors``).
        self.cut_short = []
        self.stop = threading.Event()
        self.elapsed = 0.0

    def _client(self, offset: int):
        index = offset
        deadline = time.monotonic() + self.seconds
        while not self.stop.is_set() and time.monotonic() < deadline:
            request = self.requests[index % len(self.requests)]
            index += self.clients
            try:
                reply = http_call(
                    self.port, "POST", "/api/v1/resolve", request, token=self.token, timeout=60
                )
            except http.client.IncompleteRead as exc:
                # An answer cut short: its server died while sending it, after haproxy had
                # passed its headers on (too late to send the request elsewhere).
                self.cut_short.append((time.monotonic(), repr(exc)))
                continue
            except (OSError, http.client.HTTPException) as exc:
                self.errors.append((time.monotonic(), repr(exc)))
                continue
            if reply.status == 200:
                self.latencies.append(reply.seconds)
                self.served_by.append((time.monotonic(), served_by(reply.headers)))
            else:
                self.errors.append((time.monotonic(), reply.status))

    def run(self, during=None) -> "Load":
        threads = [
            threading.Thread(target=self._client, args=(n,), daemon=True)
            for n in range(self.clients)
        ]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        if during is not None:
            during()
        for thread in threads:
            thread.join()
        self.elapsed = time.perf_counter() - started
        return self

    def figures(self) -> dict:
        if not self.latencies:
            return {"requests": 0, "errors": len(self.errors)}
        return {
            "per_s": round(len(self.latencies) / self.elapsed, 1),
            "p50_ms": ms(percentile(self.latencies, 0.5)),
            "p95_ms": ms(percentile(self.latencies, 0.95)),
            "requests": len(self.latencies) + len(self.errors) + len(self.cut_short),
            "errors": len(self.errors),
            "cut_short": len(self.cut_short),
            "error_kinds": dict(Counter(str(error)[:60] for _, error in self.errors)),
        }


@contextlib.contextmanager
def cluster(url, *, servers, workers, redis, **env):
    """``servers`` app servers of ``workers`` workers each behind haproxy; yield (haproxy's
    port, the servers)."""
    with contextlib.ExitStack() as stack:
        apps = [
            stack.enter_context(
                app_server(url, workers=workers, wait=False, CACHE_URL=redis, **env)
            )
            for _ in range(servers)
        ]
        for app in apps:
            app.wait_ready()
        port = stack.enter_context(haproxy([app.port for app in apps], inter_ms=1000))
        yield port, apps


def warm(port, token, requests, rounds=2):
    for request in requests[: 8 * rounds]:
        http_call(port, "POST", "/api/v1/resolve", request, token=token, timeout=120)


def throughput(url, token, requests, args, redis, log, **env) -> dict:
    found = {}
    for servers, workers in ((1, 1), (1, 2), (2, 1)):
        with cluster(url, servers=servers, workers=workers, redis=redis, **env) as (port, _):
            warm(port, token, requests)
            load = Load(port, token, requests, clients=args.clients, seconds=args.seconds).run()
            found[f"{servers}x{workers}"] = load.figures()
            log(f"    {servers} server(s) × {workers} worker(s): {found[f'{servers}x{workers}']}")
    return found


def pooler(url, bouncer_url, token, requests, args, redis, log) -> dict:
    found = {}
    for name, target, env in (
        ("direct", url, {}),
        ("pgbouncer", bouncer_url, {"DB_POOLER": "pgbouncer"}),
    ):
        with cluster(target, servers=2, workers=1, redis=redis, **env) as (port, _):
            warm(port, token, requests)
            load = Load(port, token, requests, clients=args.clients, seconds=args.seconds).run()
            found[name] = load.figures()
            one = Load(port, token, requests, clients=1, seconds=args.seconds / 2).run()
            found[name]["one_client_p50_ms"] = one.figures()["p50_ms"]
            found[name]["one_client_p95_ms"] = one.figures()["p95_ms"]
            log(f"    {name}: {found[name]}")
    return found


def prepared(url, token, requests, args, redis, log) -> dict:
    found = {}
    for name, env in (
        ("off", {}),
        ("threshold 1", {"DB_PREPARE_THRESHOLD": "1"}),
        ("threshold 5", {"DB_PREPARE_THRESHOLD": "5"}),
    ):
        with cluster(url, servers=1, workers=1, redis=redis, **env) as (port, _):
            warm(port, token, requests, rounds=4)
            one = Load(port, token, requests, clients=1, seconds=args.seconds).run()
            load = Load(port, token, requests, clients=args.clients, seconds=args.seconds).run()
            found[name] = {
                "one_client_p50_ms": one.figures()["p50_ms"],
                "one_client_p95_ms": one.figures()["p95_ms"],
                **load.figures(),
            }
            log(f"    prepared statements {name}: {found[name]}")
    return found


def save_on_a_seen_on_b(url, token, desk, args, redis, log) -> dict:
    rng = random.Random(desk.seed + 900)
    text = workloads.TextGenerator(desk.seed + 900)
    seen, trials, next_ms = 0, 0, []
    with cluster(url, servers=2, workers=1, redis=redis) as (_, (a, b)):
        for trial in range(args.trials):
            customer = rng.choice(desk.customers)
            message = text.query(6)
            request = workloads.request(SUPPORT_PROFILE, message, customer_id=customer)
            request["detail"] = "summary"
            # Server B holds the customer's candidates first (its cache must notice the write).
            http_call(b.port, "POST", "/api/v1/resolve", request, token=token).expect(200)
            path = f"T-ab-{trial:04d}"
            item = {
                "path": path,
                "title": message.capitalize(),
                "body": f"{message}. {message}. {text.body(BODY_WORDS)}",
                "metadata": {
                    "customer_id": customer,
                    "status": "open",
                    "updated": TODAY.isoformat(),
                },
            }
            http_call(a.port, "POST", "/api/v1/layers/tickets/items/", item, token=token).expect(
                201
            )
            reply = http_call(b.port, "POST", "/api/v1/resolve", request, token=token).expect(200)
            next_ms.append(reply.seconds)
            seen += f'"{path}"'.encode() in reply.data
            trials += 1
    found = {
        "trials": trials,
        "seen_on_b": seen,
        "next_resolve_on_b_ms": ms(statistics.median(next_ms)),
    }
    log(f"    save on A, resolve on B: {found}")
    return found


def killed(url, token, requests, args, redis, log, sig) -> dict:
    """Load through haproxy, one server killed with ``sig`` a third of the way in."""
    with cluster(url, servers=2, workers=1, redis=redis) as (port, (a, _)):
        warm(port, token, requests)
        load = Load(port, token, requests, clients=args.clients, seconds=args.kill_seconds)
        moment = []

        def kill():
            time.sleep(args.kill_seconds / 3)
            moment.append(time.monotonic())
            a.kill(sig)

        load.run(during=kill)
    at = moment[0]
    before = Counter(server for when, server in load.served_by if when < at)
    after = Counter(server for when, server in load.served_by if when > at + 1)
    found = {
        **load.figures(),
        "failed": [str(error) for _, error in load.errors][:5],
        "answers_before_kill": dict(before),
        "answers_from_1s_after": dict(after),
    }
    log(f"    {signal.Signals(sig).name}: {found}")
    return found


# --- partitioning -------------------------------------------------------------------------------

SERVED_SQL = """
import json, random
from django.db import connection
from profiles.models import Layer
from profiles.workspace.served import Wanted, served_statement
layer = Layer.objects.get(key="tickets")
with connection.cursor() as cursor:
    cursor.execute("SELECT DISTINCT value FROM profiles_itemkey WHERE layer_id = %s", [layer.id])
    values = sorted(cursor.fetchall())
rng = random.Random(7)
out = []
for value, in rng.sample(values, min(COUNT, len(values))):
    sql, params = served_statement([layer.id], [Wanted(None, layer.id, "customer_id", value, None)])
    with connection.cursor() as cursor:
        out.append(cursor.cursor.mogrify(sql, params))
print(json.dumps(out))
"""

TABLES = ("profiles_itemkey", "profiles_item", "profiles_itemterms")
# What each copy is partitioned by: the key rows by the filter's value (a customer's rows in
# one partition), the items and their terms by the item (the key rows' join column).
PARTITION_KEYS = {
    "profiles_itemkey": "value",
    "profiles_item": "id",
    "profiles_itemterms": "item_id",
}
INDEXES = {
    "profiles_itemkey": ["(layer_id, field, value)", "(layer_id, path)"],
    "profiles_item": ["(id)", "(layer_id, path)"],
    "profiles_itemterms": ["(item_id)"],
}


def copies(conn, partitions: int) -> None:
    for table in TABLES:
        for kind in ("plain", "part"):
            name = f"{kind}_{table}"
            conn.execute(f"DROP TABLE IF EXISTS {name}")
            if kind == "plain":
                conn.execute(f"CREATE TABLE {name} (LIKE {table} INCLUDING DEFAULTS)")
            else:
                key = PARTITION_KEYS[table]
                conn.execute(
                    f"CREATE TABLE {name} (LIKE {table} INCLUDING DEFAULTS) "
                    f"PARTITION BY HASH ({key})"
                )
                for n in range(partitions):
                    conn.execute(
                        f"CREATE TABLE {name}_{n} PARTITION OF {name} "
                        f"FOR VALUES WITH (MODULUS {partitions}, REMAINDER {n})"
                    )
            conn.execute(f"INSERT INTO {name} SELECT * FROM {table}")
            for n, columns in enumerate(INDEXES[table]):
                conn.execute(f"CREATE INDEX {name}_i{n} ON {name} {columns}")
            conn.execute(f"ANALYZE {name}")


def timed_statements(conn, statements: list[str], kind: str, reps: int) -> list[float]:
    times = []
    for sql in statements:
        for table in TABLES:
            sql = sql.replace(f'"{table}"', f"{kind}_{table}")
        conn.execute(sql).fetchall()  # once untimed: the pages in the cache
        for _ in range(reps):
            started = time.perf_counter()
            conn.execute(sql).fetchall()
            times.append(time.perf_counter() - started)
    return times


def ingest_batch(conn, kind: str, rows: int) -> float:
    """Insert a batch of ``rows`` new items with their terms and key rows into the copies (the
    first items' rows again under new ids), in a transaction rolled back; return its time."""
    shift = 10**12
    started = time.perf_counter()
    with conn.transaction(force_rollback=True):
        for table, column in (
            ("profiles_item", "id"),
            ("profiles_itemterms", "item_id"),
            ("profiles_itemkey", "item_id"),
        ):
            names = [
                row[0]
                for row in conn.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                    "ORDER BY ordinal_position",
                    [table],
                ).fetchall()
            ]
            select = ", ".join(f"{c} + {shift}" if c in ("id", "item_id") else c for c in names)
            conn.execute(
                f"INSERT INTO {kind}_{table} ({', '.join(names)}) SELECT {select} FROM {table} "
                f"WHERE {column} IN (SELECT id FROM profiles_item ORDER BY id LIMIT {rows})"
            )
    return time.perf_counter() - started


def partition(server: Server, args, log) -> dict:
    import psycopg

    statements = json.loads(
        server.manage("shell", "-c", SERVED_SQL.replace("COUNT", str(args.partition_customers)))
        .strip()
        .splitlines()[-1]
    )
    found = {"partitions": args.partitions, "customers": len(statements)}
    with psycopg.connect(f"{args.server}/{args.database}", autocommit=True) as conn:
        started = time.perf_counter()
        copies(conn, args.partitions)
        found["copies_s"] = round(time.perf_counter() - started, 1)
        for kind in ("plain", "part", "plain", "part"):  # twice each, interleaved
            times = timed_statements(conn, statements, kind, reps=5)
            found.setdefault(f"{kind}_fetch_p50_ms", []).append(ms(percentile(times, 0.5)))
            found.setdefault(f"{kind}_fetch_p95_ms", []).append(ms(percentile(times, 0.95)))
            found.setdefault(f"{kind}_ingest_{args.batch}_s", []).append(
                round(ingest_batch(conn, kind, args.batch), 2)
            )
        plan = conn.execute(
            "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) "
            + statements[0]
            .replace('"profiles_itemkey"', "part_profiles_itemkey")
            .replace('"profiles_item"', "part_profiles_item")
            .replace('"profiles_itemterms"', "part_profiles_itemterms")
        ).fetchall()
        found["part_plan_partitions_scanned"] = sum("_profiles_itemkey_" in r[0] for r in plan)
        for table in TABLES:
            for kind in ("plain", "part"):
                conn.execute(f"DROP TABLE IF EXISTS {kind}_{table}")
    log(f"    partitioning: {found}")
    return found


# --- the run --------------------------------------------------------------------------------------


def run(args, log) -> dict:
    desk = generate_desk(args.tickets, seed=args.seed)
    figures = {
        "tickets": len(desk.items["tickets"]),
        "customers": len(desk.customers),
        "cores": os.cpu_count(),
        "load_start": load_average(),
    }
    server = Server(server_url=args.server, database=args.database, workers=2)
    try:
        log(f"  database {args.database}: migrate, skeleton, bulk ingest of {desk.item_count():,}…")
        server.create()
        server.manage("migrate", "--noinput", "-v", "0")
        server.manage("import_workspace", "-", stdin=json.dumps(desk.skeleton))
        server.sign_in()
        server.start()
        ingest(server, desk, Figures(lambda _: None), lambda _: None)
        server.stop()
        vacuum_analyze(args.server, args.database)
        url = f"{args.server}/{args.database}"
        requests = desk_requests(desk, 2000, seed=desk.seed + 200)
        token = server.token
        with contextlib.ExitStack() as stack:
            redis = stack.enter_context(redis_server())
            host_port = args.server.rsplit("@", 1)[-1]
            host, _, port = host_port.partition(":")
            bouncer = stack.enter_context(pgbouncer(host=host, port=int(port or 5432)))
            bouncer_url = f"{args.server.rsplit('@', 1)[0]}@127.0.0.1:{bouncer}/{args.database}"
            phases = set(args.phases.split(","))
            if "throughput" in phases:
                log("  throughput: 1×1, 1×2, 2×1 (servers × workers) behind haproxy…")
                figures["throughput"] = throughput(url, token, requests, args, redis, log)
            if "pgbouncer" in phases:
                log("  PgBouncer vs direct (2 servers × 1 worker)…")
                figures["pgbouncer"] = pooler(url, bouncer_url, token, requests, args, redis, log)
            if "prepared" in phases:
                log("  prepared statements (1 server × 1 worker)…")
                figures["prepared"] = prepared(url, token, requests, args, redis, log)
            if "ab" in phases:
                log(f"  save on A, resolve on B ({args.trials} trials)…")
                figures["save_a_seen_b"] = save_on_a_seen_on_b(url, token, desk, args, redis, log)
            if "kill" in phases:
                for sig in (signal.SIGKILL, signal.SIGTERM):
                    log(f"  {sig.name} one of two servers under load…")
                    figures[f"kill_{sig.name}"] = killed(
                        url, token, requests, args, redis, log, sig
                    )
        if args.partition:
            log("  partitioning: plain vs hash-partitioned copies…")
            figures["partition"] = partition(server, args, log)
    finally:
        server.close(keep_database=args.keep_database)
    figures["load_end"] = load_average()
    return figures


def format_report(figures: dict) -> str:
    """The figures as Markdown tables (docs/benchmarks.md, "Scale-out")."""
    lines = [
        f"{figures['tickets']:,} tickets, {figures['customers']:,} customers, "
        f"{figures['cores']} cores; load average {figures['load_start']} → {figures['load_end']}",
        "",
        "| run | req/s | p50 ms | p95 ms | requests / errors |",
        "|---|---|---|---|---|",
    ]

    def row(label, found):
        lines.append(
            f"| {label} | {found.get('per_s', '—')} | {found.get('p50_ms', '—')} | "
            f"{found.get('p95_ms', '—')} | {found.get('requests', 0)} / {found.get('errors', 0)} |"
        )

    for key, found in figures.get("throughput", {}).items():
        servers, workers = key.split("x")
        row(f"{servers} app server(s) × {workers} worker(s), through haproxy", found)
    for key, found in figures.get("pgbouncer", {}).items():
        row(f"2 × 1 behind haproxy, database {key}", found)
        lines.append(
            f"| … one client, database {key} | | {found['one_client_p50_ms']} | "
            f"{found['one_client_p95_ms']} | |"
        )
    for key, found in figures.get("prepared", {}).items():
        row(f"1 × 1, prepared statements {key}", found)
        lines.append(
            f"| … one client, prepared statements {key} | | {found['one_client_p50_ms']} | "
            f"{found['one_client_p95_ms']} | |"
        )
    for sig in ("SIGKILL", "SIGTERM"):
        found = figures.get(f"kill_{sig}")
        if found:
            row(f"2 × 1, one server {sig} a third of the way in", found)
            lines.append(
                f"| … answers by server before / from 1 s after | "
                f"{found['answers_before_kill']} / {found['answers_from_1s_after']} | | | |"
            )
    ab = figures.get("save_a_seen_b")
    if ab:
        lines += [
            "",
            f"Save on A, the next resolve on B has it: {ab['seen_on_b']} of {ab['trials']} "
            f"(that resolve: {ab['next_resolve_on_b_ms']} ms median).",
        ]
    part = figures.get("partition")
    if part:
        lines += [
            "",
            f"Partitioning ({part['partitions']} hash partitions, {part['customers']} customers' "
            "served statements × 5, two interleaved rounds each):",
            "",
            "| tables | fetch p50 ms | fetch p95 ms | batch insert s |",
            "|---|---|---|---|",
        ]
        for kind in ("plain", "part"):
            ingest = next(v for k, v in part.items() if k.startswith(f"{kind}_ingest"))
            lines.append(
                f"| {kind} | {part[f'{kind}_fetch_p50_ms']} | {part[f'{kind}_fetch_p95_ms']} | "
                f"{ingest} |"
            )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tickets", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--clients", type=int, default=8, help="load threads (8)")
    parser.add_argument("--seconds", type=float, default=15, help="each load's length (15)")
    parser.add_argument("--kill-seconds", type=float, default=12, help="kill runs' length (12)")
    parser.add_argument("--trials", type=int, default=20, help="save-on-A trials (20)")
    parser.add_argument(
        "--phases",
        default="throughput,pgbouncer,prepared,ab,kill",
        help="comma-separated: throughput,pgbouncer,prepared,ab,kill",
    )
    parser.add_argument("--partition", action="store_true", help="also the partitioning phase")
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--partition-customers", type=int, default=50)
    parser.add_argument("--batch", type=int, default=10_000, help="ingest batch rows (10000)")
    parser.add_argument(
        "--server",
        default=os.environ.get("BENCH_POSTGRES", DEFAULT_SERVER),
        help="PostgreSQL server URL without a database name (BENCH_POSTGRES)",
    )
    parser.add_argument("--database", default=DATABASE)
    parser.add_argument("--keep-database", action="store_true")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args(argv)

    def log(message):
        print(message, file=sys.stderr, flush=True)

    if not server_reachable(args.server):
        log(f"scale-out benchmark skipped: no PostgreSQL server at {args.server}")
        return 0
    log(f"scale-out benchmark: {args.tickets:,} tickets, {os.cpu_count()} cores")
    figures = run(args, log)
    print(format_report(figures))
    if args.json:
        with open(args.json, "w") as out:
            out.write(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

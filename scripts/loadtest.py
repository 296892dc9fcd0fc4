"""Load and fault test of a real deployment on this machine (loopback only, bounded in time).

Starts Context Studio under gunicorn against a dedicated PostgreSQL database (and Redis when
one answers), then:

1. resolve load — concurrent clients POST /api/v1/resolve with the demo scenarios for a
   bounded time; prints throughput, p50/p95/p99 latency and the error count;
2. lost updates — concurrent editors read a profile (ETag) and PATCH its budget with If-Match;
   every save must either apply (200) or be refused (412), the final budget must equal the
   initial one plus the applied saves, and the history must hold one entry per applied save;
3. faults — a layer marked unavailable is reported as LAYER_UNAVAILABLE (not an error); with
   ``--stop-postgres`` the PostgreSQL server is stopped mid-run: requests must fail with 503
   and a clear error, a write attempted meanwhile must leave nothing behind, and the service
   must recover once the server is back. (Stopping the server affects everything using it on
   this machine: run that phase alone.)

Usage: python scripts/loadtest.py [--duration 20] [--clients 8] [--workers 2] [--stop-postgres]
"""

import argparse
import http.client
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import dj_database_url
import psycopg
import yaml

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/ctxstudio_loadtest"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def redis_url() -> str | None:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            if sock.recv(16).startswith(b"+PONG"):
                return "redis://127.0.0.1:6379/15"
    except OSError:
        pass
    return None


def recreate_database(url: str) -> None:
    cfg = dj_database_url.parse(url)
    with psycopg.connect(
        host=cfg["HOST"],
        port=cfg["PORT"] or 5432,
        user=cfg["USER"],
        dbname="postgres",
        autocommit=True,
    ) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{cfg["NAME"]}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{cfg["NAME"]}"')


class Client:
    def __init__(self, port: int, token: str):
        self.port = port
        self.token = token

    def call(self, method: str, path: str, body=None, headers=None, timeout=15):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        sent = {"Authorization": f"Token {self.token}", "Content-Type": "application/json"}
        sent.update(headers or {})
        try:
            conn.request(method, path, None if body is None else json.dumps(body), sent)
            response = conn.getresponse()
            data = response.read()
            return response.status, dict(response.getheaders()), data
        finally:
            conn.close()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def phase_resolve(client: Client, requests: list[dict], *, clients: int, duration: float):
    latencies: list[float] = []
    errors: dict[int, int] = {}
    lock = threading.Lock()
    deadline = time.monotonic() + duration

    def worker(offset: int):
        n = offset
        while time.monotonic() < deadline:
            body = requests[n % len(requests)]
            n += clients
            started = time.perf_counter()
            try:
                status, _, _ = client.call("POST", "/api/v1/resolve", body)
            except OSError:
                status = 0
            elapsed = time.perf_counter() - started
            with lock:
                if status == 200:
                    latencies.append(elapsed)
                else:
                    errors[status] = errors.get(status, 0) + 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - began
    ms = [x * 1000 for x in latencies]
    return {
        "clients": clients,
        "seconds": round(wall, 1),
        "requests": len(ms) + sum(errors.values()),
        "rps": round(len(ms) / wall, 1),
        "p50_ms": round(statistics.median(ms), 1) if ms else None,
        "p95_ms": round(percentile(ms, 95), 1) if ms else None,
        "p99_ms": round(percentile(ms, 99), 1) if ms else None,
        "errors": sum(errors.values()),
        "errors_by_status": errors,
    }


def phase_lost_updates(client: Client, manage, *, editors: int, saves: int, profile: str):
    def budget() -> int:
        status, headers, data = client.call("GET", f"/api/v1/profiles/{profile}")
        assert status == 200, (status, data)
        return json.loads(data)["budget"], headers.get("ETag")

    def history_count() -> int:
        out = manage(
            "shell",
            "-c",
            "from profiles.models import Profile; "
            f"print(Profile.history.filter(key='{profile}').count())",
        )
        return int(out.strip().splitlines()[-1])

    initial, _ = budget()
    history_before = history_count()
    outcome = {"applied": 0, "refused": 0, "other": 0}
    lock = threading.Lock()

    def editor():
        for _ in range(saves):
            value, etag = budget()
            status, _, _ = client.call(
                "PATCH", f"/api/v1/profiles/{profile}", {"budget": value + 1}, {"If-Match": etag}
            )
            key = "applied" if status == 200 else "refused" if status == 412 else "other"
            with lock:
                outcome[key] += 1

    threads = [threading.Thread(target=editor) for _ in range(editors)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    final, _ = budget()
    history_added = history_count() - history_before
    outcome.update(
        editors=editors,
        attempts=editors * saves,
        initial_budget=initial,
        final_budget=final,
        lost_updates=initial + outcome["applied"] - final,
        history_entries_added=history_added,
        ok=final == initial + outcome["applied"]
        and history_added == outcome["applied"]
        and outcome["other"] == 0,
    )
    return outcome


def phase_layer_unavailable(client: Client, request: dict, layer: str):
    status, headers, data = client.call("GET", f"/api/v1/layers/{layer}")
    etag = headers.get("ETag")
    client.call(
        "PATCH", f"/api/v1/layers/{layer}", {"availability": "unavailable"}, {"If-Match": etag}
    )
    status, _, data = client.call("POST", "/api/v1/resolve", request)
    resolution = json.loads(data)
    record = next(r for r in resolution["layers"] if r["layer"] == layer)
    _, headers, _ = client.call("GET", f"/api/v1/layers/{layer}")
    client.call(
        "PATCH", f"/api/v1/layers/{layer}", {"availability": "auto"}, {"If-Match": headers["ETag"]}
    )
    return {
        "status_code": status,
        "decision": record["decision"]["reason"],
        "ok": status == 200 and record["decision"]["reason"] == "LAYER_UNAVAILABLE",
    }


def postgres_cluster(action: str) -> None:
    version = sorted(os.listdir("/etc/postgresql"))[0]
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", action],
        check=True,
        capture_output=True,
    )


def phase_postgres_outage(client: Client, request: dict, profile: str):
    _, headers, data = client.call("GET", f"/api/v1/profiles/{profile}")
    budget_before = json.loads(data)["budget"]
    postgres_cluster("stop")
    try:
        statuses = {}
        bodies = []
        for _ in range(20):
            status, _, data = client.call("POST", "/api/v1/resolve", request)
            statuses[status] = statuses.get(status, 0) + 1
            bodies.append(data)
        write_status, _, _ = client.call(
            "PATCH",
            f"/api/v1/profiles/{profile}",
            {"budget": budget_before + 500},
            {"If-Match": headers.get("ETag", "*")},
        )
        health, _, _ = client.call("GET", "/healthz")
    finally:
        postgres_cluster("start")
    recovered_after = None
    began = time.monotonic()
    while time.monotonic() - began < 60:
        status, _, _ = client.call("POST", "/api/v1/resolve", request)
        if status == 200:
            recovered_after = round(time.monotonic() - began, 1)
            break
        time.sleep(0.5)
    _, _, data = client.call("GET", f"/api/v1/profiles/{profile}")
    budget_after = json.loads(data)["budget"]
    sample = json.loads(bodies[-1]) if bodies and bodies[-1].startswith(b"{") else None
    return {
        "statuses_during_outage": statuses,
        "error_during_outage": sample,
        "write_during_outage": write_status,
        "healthz_during_outage": health,
        "recovered_after_s": recovered_after,
        "write_left_nothing": budget_after == budget_before,
        "ok": set(statuses) == {503}
        and write_status == 503
        and health == 503
        and recovered_after is not None
        and budget_after == budget_before,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=20.0, help="seconds of resolve load")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--editors", type=int, default=6)
    parser.add_argument("--saves", type=int, default=15, help="saves per editor")
    parser.add_argument(
        "--database-url", default=os.environ.get("LOADTEST_DATABASE_URL", DEFAULT_DB)
    )
    parser.add_argument("--stop-postgres", action="store_true", help="also run the outage phase")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()

    recreate_database(args.database_url)
    port = free_port()
    env = {
        **os.environ,
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "HTTPS": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": args.database_url,
        "API_THROTTLE_RESOLVE": "1000000/minute",
        "API_THROTTLE_PREVIEW": "1000000/minute",
        "API_THROTTLE_EXPAND": "1000000/minute",
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": str(args.workers),
        "GUNICORN_ACCESSLOG": "",
        "LOG_LEVEL": "CRITICAL",
    }
    cache = redis_url()
    if cache:
        env["CACHE_URL"] = cache

    def manage(*argv) -> str:
        result = subprocess.run(
            [PY, "manage.py", *argv], cwd=ROOT, env=env, capture_output=True, text=True
        )
        if result.returncode:
            raise SystemExit(f"manage.py {' '.join(argv)} failed:\n{result.stderr}")
        return result.stdout

    print(f"preparing {args.database_url.rsplit('/', 1)[-1]} (migrate, demo workspace)…")
    manage("migrate", "--noinput", "-v", "0")
    manage("load_demo", "--no-user")
    token = (
        manage(
            "shell",
            "-c",
            "from django.contrib.auth import get_user_model; "
            "from rest_framework.authtoken.models import Token; "
            "u, _ = get_user_model().objects.get_or_create(username='loadtest', "
            "defaults={'is_staff': True}); "
            "print(Token.objects.get_or_create(user=u)[0].key)",
        )
        .strip()
        .splitlines()[-1]
    )
    manage("collectstatic", "--noinput", "-v", "0")

    server = subprocess.Popen(
        [str(Path(PY).parent / "gunicorn"), "-c", "scripts/gunicorn.conf.py", "ctxstudio.wsgi"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = Client(port, token)
    try:
        last = None
        for _ in range(150):
            try:
                last = client.call("GET", "/healthz")
                if last[0] == 200:
                    break
            except OSError as exc:
                last = exc
            time.sleep(0.2)
        else:
            raise SystemExit(f"the server did not become healthy: {last}")
        scenarios = yaml.safe_load((ROOT / "profiles/demo/scenarios.yaml").read_text())
        requests = [{"scenario": s["name"]} for s in scenarios]
        for body in requests:  # warm every worker's compiled workspace
            client.call("POST", "/api/v1/resolve", body)
        report = {
            "machine": f"{os.cpu_count()} cores, gunicorn {args.workers} sync workers, "
            f"PostgreSQL, cache {'Redis' if cache else 'local memory'}",
        }
        print(f"phase 1: {args.clients} clients resolving for {args.duration:.0f} s…")
        report["resolve"] = phase_resolve(
            client, requests, clients=args.clients, duration=args.duration
        )
        print(json.dumps(report["resolve"]))
        print(f"phase 2: {args.editors} editors × {args.saves} saves with If-Match…")
        report["lost_updates"] = phase_lost_updates(
            client, manage, editors=args.editors, saves=args.saves, profile="draft-reply"
        )
        print(json.dumps(report["lost_updates"]))
        print("phase 3: faults…")
        report["layer_unavailable"] = phase_layer_unavailable(client, requests[0], "kb")
        print(json.dumps(report["layer_unavailable"]))
        if args.stop_postgres:
            if shutil.which("pg_ctlcluster") is None:
                raise SystemExit("--stop-postgres needs pg_ctlcluster on this machine")
            report["postgres_outage"] = phase_postgres_outage(client, requests[0], "draft-reply")
            print(json.dumps(report["postgres_outage"]))
    finally:
        server.terminate()
        server.wait(timeout=20)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
    checks = [
        report["resolve"]["errors"] == 0,
        report["lost_updates"]["ok"],
        report["layer_unavailable"]["ok"],
        report.get("postgres_outage", {"ok": True})["ok"],
    ]
    print("PASS" if all(checks) else "FAIL")
    return 0 if all(checks) else 1


if __name__ == "__main__":
    sys.exit(main())

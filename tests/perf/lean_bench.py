"""CPU per resolve through the lean door, through the full stack, and of the engine alone, on
the same requests, in one process: ``python -m tests.perf.lean_bench`` (issue 35).

Loads the demo (``load_demo``) into a throw-away database (SQLite in memory unless
``DATABASE_URL`` says otherwise) and sends the 17 demo scenarios' requests as an application
sends them (profile, input, ``now``, format, availability; ``"detail": "summary"``), signed
with a user's token, straight to Django's WSGI handler (no HTTP server, no client library):

* **lean door** — ``POST /api/v1/resolve`` as it is served (``ctxstudio.lean_door``);
* **full stack** — the same requests with the lean door turned away (``lean.takes`` answers
  no): every middleware and DRF's dispatch (its authentication reads the held keys too);
* **before** — the full stack with the held keys forgotten before each request (the key and
  its owner's role read from the database each time): the path as it was before issue 35;
* **lean + metrics** — the lean door with the metrics on (``METRICS_TOKEN`` set: the request
  counted by door and status, its latency observed, the resolution by status and blockers,
  the served layer's counters); the **lean door** row has them off (no token, and the hall's
  counters replaced by no-ops), so the difference is what the metrics cost a resolve (issue
  37; with ``PROMETHEUS_MULTIPROC_DIR`` set, in prometheus-client's multiprocess mode);
* **engine** — ``CompiledWorkspace.resolve_json`` of each request on the workspace its served
  layers' items were fetched into beforehand (``for_request``): the engine's own cost.

Then the **served breakdown** (issue 35 item 2), on the requests that read a served layer,
the fetch and the engine in process (no door): **first meeting** — the worker's candidates
cache emptied before each request, so its statement returns the customer's rows, which become
the engine's items and postings (``for_request``) before the resolve; **cached** — the same
with the customer's candidates held (the statement returns its stamp only, the index built
before is reused); **held** — the same requests on a workspace compiled with
``SERVE_FILTERED_LAYERS`` off (every item held, postings built once); and the first meeting's
fetch alone (statement, rows, index; no resolve). ``--profile-first`` prints where a first
meeting's time goes (cProfile, own time).

Rounds are interleaved so machine noise hits all alike; the figure is process CPU time
(``time.process_time``: the decision log's writer thread included) per request, median over
rounds, and the SQL queries per request of each door; then one profiled pass of the lean
door says where its time goes (shares of the whole request, each step's time including its
inner steps). The resolve rate is a million a minute: counted, never reached. Reported, never
asserted.
"""

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ctxstudio.settings")
os.environ.setdefault("DATABASE_URL", "sqlite:///:memory:")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.handlers.wsgi import WSGIHandler  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.core.signals import request_finished, request_started  # noqa: E402
from django.db import close_old_connections, connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from profiles.api import lean  # noqa: E402
from profiles.api import resolution as api_resolution  # noqa: E402
from profiles.models import Scenario  # noqa: E402
from profiles.resolution.decision_log import decision_log_flush  # noqa: E402
from profiles.workspace import cache, key_cache, metrics, served  # noqa: E402
from profiles.workspace.keys import token_replace  # noqa: E402
from resolver.clock import system_clock  # noqa: E402
from resolver.request import parse_request  # noqa: E402


def environ(body: bytes, authorization: str) -> dict:
    return {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/api/v1/resolve",
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_AUTHORIZATION": authorization,
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.url_scheme": "http",
        "wsgi.version": (1, 0),
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }


def serve(handler, body: bytes, authorization: str) -> int:
    statuses = []
    response = handler(
        environ(body, authorization), lambda status, headers: statuses.append(status)
    )
    b"".join(response)
    response.close()
    return int(statuses[0].split()[0])


def requests_of_scenarios() -> list[dict]:
    requests = []
    for scenario in Scenario.objects.order_by("name"):
        request = scenario.as_request()
        requests.append({**request, "detail": "summary"})
    return requests


class Uncounted:
    """A metric that counts nothing (the metrics off)."""

    def inc(self, amount=1):
        pass

    def observe(self, amount):
        pass


def metrics_off(run):
    """``run`` with the hall's metric calls replaced by no-ops."""
    silent = Uncounted()
    swapped = [
        (api_resolution, "resolution_counted", lambda head, degraded=False: None),
        (served, "_hit", silent),
        (served, "_miss", silent),
        (metrics, "served_statements", silent),
        (metrics, "served_items", silent),
    ]

    def silenced(body):
        kept = [getattr(module, name) for module, name, _ in swapped]
        for module, name, replacement in swapped:
            setattr(module, name, replacement)
        try:
            run(body)
        finally:
            for (module, name, _), value in zip(swapped, kept, strict=True):
                setattr(module, name, value)

    return silenced


def metric_calls_cost(calls: int = 20_000) -> float:
    """Process CPU (ms) of the metric calls a served resolve makes, timed alone (best of 5):
    the request counted and observed, the resolution and a blocker, the served statement, a
    candidates' hit and the items fetched. The rows' difference is within the machine's noise;
    this is the cost itself."""
    head = {"status": "BLOCKED", "blockers": [{"code": "MISSING_REQUIRED_CONTEXT"}]}
    rounds = []
    for _ in range(5):
        started = time.process_time()
        for _ in range(calls):
            metrics.request_counted("resolve", "POST", "", 200, 0.002)
            metrics.resolution_counted(head)
            metrics.served_statements.inc()
            served._hit.inc()
            metrics.served_items.inc(3)
        rounds.append((time.process_time() - started) / calls * 1000)
    return min(rounds)


def cpu_per_request(run, requests, repeat: int) -> float:
    started = time.process_time()
    for _ in range(repeat):
        for request in requests:
            run(request)
    return (time.process_time() - started) / (repeat * len(requests))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=5, help="passes over the requests a round")
    parser.add_argument(
        "--profile-first", action="store_true", help="profile the first meetings (own time)"
    )
    args = parser.parse_args(argv)

    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "resolve": "1000000/minute",  # counted as in production, never reached
        },
    }
    settings.DEBUG = False
    # The handler would close the in-memory database's connection between requests.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        with open(os.devnull, "w") as quiet:
            call_command("load_demo", "--no-user", verbosity=0, stdout=quiet)
        user = get_user_model().objects.create_user("bench")
        authorization = f"Token {token_replace(user=user)[1]}"
        requests = requests_of_scenarios()
        bodies = [json.dumps(request).encode() for request in requests]
        settings.METRICS_TOKEN, settings.METRICS_ALLOWED_IPS = "", []
        handler = WSGIHandler()  # its first middleware built with the metrics off
        settings.METRICS_TOKEN = "bench"
        metered = WSGIHandler()
        settings.METRICS_TOKEN = ""
        takes = lean.takes

        @metrics_off
        def lean_door(body):
            serve(handler, body, authorization)

        def lean_metrics(body):
            serve(metered, body, authorization)

        def full_stack(body):
            lean.takes = lambda request: False
            try:
                serve(handler, body, authorization)
            finally:
                lean.takes = takes

        def before(body):
            key_cache._held.forget()  # the key and its owner's role read per request again
            full_stack(body)

        compiled = cache.workspace_get().compiled
        materials = {}
        for body, request in zip(bodies, requests, strict=True):
            parsed = parse_request(request, layer_keys=compiled.layer_keys, clock=system_clock)
            materials[body] = (compiled.for_request(parsed), request)

        def engine(body):
            material, request = materials[body]
            material.resolve_json(request)

        doors = {
            "lean door": lean_door,
            "lean+metrics": lean_metrics,
            "full stack": full_stack,
            "before": before,
            "engine": engine,
        }
        for run in doors.values():  # warm: compiled, keys held, indexes built
            for body in bodies:
                run(body)
        statuses = {serve(handler, body, authorization) for body in bodies}
        assert statuses == {200}, statuses
        queries = {}
        for name in ("lean door", "lean+metrics", "full stack", "before"):
            with CaptureQueriesContext(connection) as captured:
                for body in bodies:
                    doors[name](body)
            queries[name] = len(captured) / len(bodies)

        figures = {name: [] for name in doors}
        for _ in range(args.rounds):
            for name, run in doors.items():
                figures[name].append(cpu_per_request(run, bodies, args.repeat))
        shares = where_the_time_goes(lambda: [lean_door(body) for body in bodies])
        breakdown = served_breakdown(requests, args.rounds, args.repeat, args.profile_first)
        decision_log_flush()
    finally:
        if connection.vendor == "postgresql":  # the decision log writer's idle connection
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
        connection.creation.destroy_test_db(old_name, verbosity=0)

    medians = {name: statistics.median(values) * 1000 for name, values in figures.items()}
    print(
        f"lean door bench: {len(bodies)} summary resolves of the demo scenarios, "
        f"{args.rounds} rounds × {args.repeat} passes, process CPU per request (median)"
    )
    for name, value in medians.items():
        extra = f"   {queries[name]:.1f} queries/request" if name in queries else ""
        print(f"  {name:<12} {value:7.3f} ms{extra}")
    engine_ms = medians["engine"]
    print(
        f"  ratios: full stack ÷ engine {medians['full stack'] / engine_ms:.1f}×, "
        f"lean door ÷ engine {medians['lean door'] / engine_ms:.1f}×, "
        f"before ÷ engine {medians['before'] / engine_ms:.1f}×, "
        f"before ÷ lean door {medians['before'] / medians['lean door']:.2f}×"
    )
    cost = medians["lean+metrics"] - medians["lean door"]
    calls = metric_calls_cost()
    mode = "multiprocess" if os.environ.get("PROMETHEUS_MULTIPROC_DIR") else "one process"
    print(
        f"  metrics on the lean door ({mode}): rows differ by {cost * 1000:+.1f} µs; the "
        f"metric calls of a resolve timed alone {calls * 1000:.1f} µs, "
        f"{calls / medians['lean door']:.1%} of its CPU"
    )
    print(
        "  where the lean door's time goes (cProfile, one pass; each step includes those below it):"
    )
    for name, share in shares.items():
        print(f"    {name:<46} {share:6.1%}")
    if breakdown is not None:
        reading, rows, profile = breakdown
        print(
            f"  served breakdown: {reading} requests reading a served layer, fetch and engine "
            "in process, CPU per request (median)"
        )
        for name, value in rows.items():
            print(f"    {name:<34} {value:7.3f} ms   {value / rows['held']:.2f} × held")
        if profile:
            print("  a first meeting's own time by function (cProfile, top 12):")
            print(profile)
    return 0


def served_breakdown(requests, rounds: int, repeat: int, profile: bool):
    """Return the number of requests reading a served layer and their CPU per request (ms,
    median over interleaved rounds) met for the first time, cached and held, with the first
    meeting's fetch alone (and its profile when asked); None when no request reads one."""
    compiled = cache.workspace_get().compiled
    reading = [request for request in requests if compiled.needs(request)]
    if not reading:
        return None
    serving = getattr(settings, "SERVE_FILTERED_LAYERS", True)
    settings.SERVE_FILTERED_LAYERS = False
    cache.workspace_cache_clear()
    try:
        held = cache.workspace_get().compiled
    finally:
        settings.SERVE_FILTERED_LAYERS = serving
        cache.workspace_cache_clear()
    compiled = cache.workspace_get().compiled
    assert not held.served and compiled.served
    parsed = {
        id(request): parse_request(request, layer_keys=compiled.layer_keys, clock=system_clock)
        for request in reading
    }

    def first(request):
        served.candidates.clear()
        compiled.for_request(parsed[id(request)]).resolve_json(request)

    def cached(request):
        compiled.for_request(parsed[id(request)]).resolve_json(request)

    def on_held(request):
        held.resolve_json(request)

    def fetch_first(request):
        served.candidates.clear()
        compiled.for_request(parsed[id(request)])

    runs = {
        "first meeting": first,
        "cached": cached,
        "held": on_held,
        "first meeting's fetch alone": fetch_first,
    }
    for run in runs.values():
        for request in reading:
            run(request)
    for request in reading:
        assert first(request) is None and (
            compiled.for_request(parsed[id(request)]).resolve_json(request).data
            == held.resolve_json(request).data
        )
    figures = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            figures[name].append(cpu_per_request(run, reading, repeat))
    medians = {name: statistics.median(values) * 1000 for name, values in figures.items()}
    text = ""
    if profile:
        profiler = cProfile.Profile()
        profiler.runcall(lambda: [first(request) for request in reading * repeat])
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(12)
        text = out.getvalue()
    return len(reading), medians, text


# (label, module path suffix, function name): the steps of a lean resolve, outermost first.
STEPS = [
    ("request: WSGI, kept middleware, all below", "django/core/handlers/wsgi.py", "__call__"),
    ("  lean answer: all below", "profiles/api/lean.py", "_answer"),
    ("    key (held in memory)", "profiles/workspace/keys.py", "key_authenticate"),
    (
        "    throttle (counted in the cache)",
        "profiles/workspace/throttling.py",
        "user_throttle_wait",
    ),
    ("    body (JSON parser)", "profiles/api/lean.py", "_body"),
    ("    resolve_answer: all below", "profiles/api/resolution.py", "resolve_answer"),
    ("      workspace version (one query)", "profiles/workspace/cache.py", "workspace_get"),
    ("      served layers' fetch (for_request)", "resolver/compiled.py", "for_request"),
    ("      engine: stages", "resolver/engine.py", "run_stages"),
    ("      engine: encoding the answer", "resolver/report.py", "encoded_resolution"),
    ("      ETag", "profiles/api/conditional.py", "resolution_etag"),
    ("      decision log row", "profiles/resolution/decision_log.py", "decision_log_record"),
    ("  rendering", "profiles/api/lean.py", "_finalized"),
]


def where_the_time_goes(run) -> dict[str, float]:
    """Profile ``run`` once; return each step's cumulative share of the requests' time."""
    profiler = cProfile.Profile()
    profiler.runcall(run)
    stats = pstats.Stats(profiler).stats
    cumulative = {}
    for (path, _, function), (_, _, _, cum, _) in stats.items():
        for label, suffix, name in STEPS:
            if function == name and path.endswith(suffix):
                cumulative[label] = cumulative.get(label, 0.0) + cum
    total = cumulative.get(STEPS[0][0]) or 1.0
    return {label: cumulative.get(label, 0.0) / total for label, _, _ in STEPS}


if __name__ == "__main__":
    raise SystemExit(main())

"""Web benchmark: what a person or an API client waits for, on PostgreSQL behind gunicorn.

``python -m tests.perf.web_bench`` (``make bench-web``; ``make bench`` runs it after the engine
benchmark). For each size (``tests.perf.workloads.mixed_workspace(N)``, 1k/10k/50k items by
default) it creates a database of its own (``ctx_bench_<pid>``, dropped at the end), imports
the workspace with ``manage.py import_workspace`` (timed), starts gunicorn with **one** sync
worker (so "the next resolve" lands in the worker that saw the edit), and measures:

* item PATCH (one body edit through the API), then the first resolve after it, then a warm
  resolve of the same request (the ratio of the two is a target);
* rule PATCH (the API) and studio save (the editor form, action=save);
* editor GET and studio preview (time and bytes);
* workspace export (API, YAML; time and bytes) and the import through the API (time from the
  request to the job's result when the import runs as a background job);
* the worker's resident memory before and after ``--edits`` item edits, each followed by a
  resolve (the edit makes the worker recompile).

Each figure is the median of ``--reps`` timed repetitions (wall time of one HTTP request on
the loopback, connection included). The machine may be shared: read the ratios, and the load
average printed beside the figures. See docs/benchmarks.md ("Web").
"""

import argparse
import contextlib
import html
import http.client
import json
import os
import re
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import yaml

from tests.perf import workloads

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
DEFAULT_SERVER = "postgres://postgres@127.0.0.1:5432"
PROFILE = "support-answer"
EDITED_LAYER = "kb"
SIZES = (1_000, 10_000, 50_000)


# --- the database and the server -----------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def admin_execute(server_url: str, *statements: str) -> None:
    import psycopg

    parts = urllib.parse.urlsplit(server_url)
    with psycopg.connect(
        host=parts.hostname,
        port=parts.port or 5432,
        user=parts.username or "postgres",
        password=parts.password,
        dbname="postgres",
        autocommit=True,
    ) as conn:
        for statement in statements:
            conn.execute(statement)


def database_drop(server_url: str, database: str) -> None:
    admin_execute(server_url, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def database_recreate(server_url: str, database: str) -> None:
    """Drop ``database`` if it exists (closing its connections) and create it empty."""
    database_drop(server_url, database)
    admin_execute(server_url, f'CREATE DATABASE "{database}"')


def http_call(port, method, path, body=None, *, token="", headers=None, timeout=900) -> "Reply":
    """Send one request to the server on the loopback at ``port`` (a dict or list body as JSON,
    ``token`` as the API key); return its status, headers, body and duration."""
    sent = dict(headers or {})
    if token:
        sent.setdefault("Authorization", f"Token {token}")
    if isinstance(body, dict | list):
        body = json.dumps(body)
        sent.setdefault("Content-Type", "application/json")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        started = time.perf_counter()
        conn.request(method, path, body, sent)
        response = conn.getresponse()
        data = response.read()
        elapsed = time.perf_counter() - started
    finally:
        conn.close()
    return Reply(response.status, dict(response.getheaders()), data, elapsed)


def server_reachable(server_url: str) -> bool:
    try:
        admin_execute(server_url, "SELECT 1")
    except Exception:
        return False
    return True


@dataclass
class Site:
    """A fresh database with one workspace, and a gunicorn serving it."""

    server_url: str
    database: str
    env: dict = field(default_factory=dict)
    port: int = 0
    token: str = ""
    session: str = ""
    process: subprocess.Popen | None = None
    worker: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"{self.server_url}/{self.database}"

    def create(self) -> None:
        database_recreate(self.server_url, self.database)
        self.port = free_port()
        self.env = {
            **os.environ,
            "DEBUG": "false",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "HTTPS": "false",
            "ALLOWED_HOSTS": "127.0.0.1",
            "DATABASE_URL": self.url,
            "API_THROTTLE_RESOLVE": "1000000/minute",
            "API_THROTTLE_PREVIEW": "1000000/minute",
            "API_THROTTLE_EXPAND": "1000000/minute",
            "API_THROTTLE_USER": "1000000/minute",
            "GUNICORN_BIND": f"127.0.0.1:{self.port}",
            "GUNICORN_WORKERS": "1",
            # The baseline export of 50k items took longer than the production 30 s.
            "GUNICORN_TIMEOUT": "600",
            "GUNICORN_ACCESSLOG": "",
            # The 50k-item file is ~37 MB; the default limits are 10 MiB a body and 30 MiB
            # of one user's queued imports (the API import row uploads it).
            "MAX_BODY_BYTES": str(200 * 1024 * 1024),
            "IMPORT_MAX_QUEUED_BYTES_PER_USER": str(200 * 1024 * 1024),
            "LOG_LEVEL": "CRITICAL",
        }
        self.env.pop("CACHE_URL", None)
        self.manage("migrate", "--noinput", "-v", "0")

    def drop(self) -> None:
        database_drop(self.server_url, self.database)

    def manage(self, *argv: str) -> str:
        result = subprocess.run(
            [PY, "manage.py", *argv], cwd=ROOT, env=self.env, capture_output=True, text=True
        )
        if result.returncode:
            raise SystemExit(f"manage.py {' '.join(argv[:2])} failed:\n{result.stderr[-3000:]}")
        return result.stdout

    def python(self, code: str) -> str:
        """Run ``code`` in a configured Django process; return the last line it printed."""
        return self.manage("shell", "-c", code).strip().splitlines()[-1]

    def import_file(self, path: Path) -> tuple[float, float]:
        """Import with the management command in one process; return its own duration and
        the CPU time it used (s; the database server's CPU is not counted)."""
        code = (
            "import time\n"
            "from django.core.management import call_command\n"
            "started, cpu = time.perf_counter(), time.process_time()\n"
            f"call_command('import_workspace', {str(path)!r}, stdout=open(os.devnull, 'w'))\n"
            "print(time.perf_counter() - started, time.process_time() - cpu)\n"
        )
        elapsed, cpu = self.python("import os\n" + code).split()
        return float(elapsed), float(cpu)

    def sign_in(self) -> None:
        """Create a superuser with an API token and a studio session (no login form)."""
        self.token, self.session = self.python(
            "from django.contrib.auth import get_user_model\n"
            "from django.test import Client\n"
            "from profiles.workspace.keys import token_replace\n"
            "user, _ = get_user_model().objects.get_or_create(username='bench', defaults="
            "{'is_staff': True, 'is_superuser': True})\n"
            "client = Client()\n"
            "client.force_login(user)\n"
            "print(token_replace(user=user)[1], "
            "client.cookies['sessionid'].value)\n"
        ).split()

    def start(self) -> None:
        # The task worker runs the imports the API accepts (202), as under make serve.
        self.worker = subprocess.Popen(
            [PY, "manage.py", "db_worker", "-v", "0", "--interval", "0.1"],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.process = subprocess.Popen(
            [str(Path(PY).parent / "gunicorn"), "-c", "scripts/gunicorn.conf.py", "ctxstudio.wsgi"],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                if self.call("GET", "/healthz").status == 200:
                    return
            time.sleep(0.2)
        raise SystemExit("gunicorn did not become healthy within 60 s")

    def stop(self) -> None:
        if self.worker is not None:
            self.worker.terminate()
            self.worker.wait(timeout=60)
            self.worker = None
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.process = None

    def worker_pid(self) -> int:
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        return int(children.read_text().split()[0])

    def cpu_seconds(self, *, tasks: bool = False) -> float:
        """Return the CPU time used so far by the gunicorn worker (and the task worker)."""
        pids = [self.worker_pid(), self.worker.pid] if tasks else [self.worker_pid()]
        return sum(process_cpu_seconds(pid) for pid in pids)

    def worker_rss_mb(self) -> float:
        for line in Path(f"/proc/{self.worker_pid()}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    def call(self, method, path, body=None, *, headers=None, api=True, timeout=900):
        token = self.token if api else ""
        return http_call(
            self.port, method, path, body, token=token, headers=headers, timeout=timeout
        )


def process_cpu_seconds(pid: int) -> float:
    """Return a process's user + system CPU time so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Reply:
    status: int
    headers: dict
    data: bytes
    seconds: float

    def expect(self, *statuses: int) -> "Reply":
        if self.status not in statuses:
            raise SystemExit(f"expected HTTP {statuses}, got {self.status}: {self.data[:500]!r}")
        return self


# --- the studio's editor form ----------------------------------------------------------------


class EditorForm(HTMLParser):
    """Collect the fields of ``<form id="editor-form">`` (and fields bound to it by ``form=``)."""

    def __init__(self):
        super().__init__()
        self.fields: list[tuple[str, str]] = []
        self.action = ""
        self.inside = False
        self.select: str | None = None
        self.select_value: str | None = None
        self.select_first: str | None = None
        self.textarea: str | None = None
        self.text: list[str] = []

    def _ours(self, attrs: dict) -> bool:
        return self.inside or attrs.get("form") == "editor-form"

    def handle_starttag(self, tag, attrs):
        attrs = {name: value or "" for name, value in attrs}
        if tag == "form":
            self.inside = attrs.get("id") == "editor-form"
            if self.inside:
                self.action = attrs.get("action", "")
            return
        if not self._ours(attrs) and tag not in ("option",):
            return
        name = attrs.get("name")
        if tag == "input" and name:
            kind = attrs.get("type", "text")
            if kind in ("submit", "button", "image", "file", "reset"):
                return
            if kind in ("checkbox", "radio") and "checked" not in attrs:
                return
            self.fields.append((name, attrs.get("value", "on" if kind == "checkbox" else "")))
        elif tag == "select" and name:
            self.select, self.select_value, self.select_first = name, None, None
        elif tag == "option" and self.select is not None:
            value = attrs.get("value", "")
            if self.select_first is None:
                self.select_first = value
            if "selected" in attrs:
                self.select_value = value
        elif tag == "textarea" and name:
            self.textarea, self.text = name, []

    def handle_data(self, data):
        if self.textarea is not None:
            self.text.append(data)

    def handle_endtag(self, tag):
        if tag == "form":
            self.inside = False
        elif tag == "select" and self.select is not None:
            value = self.select_value if self.select_value is not None else self.select_first
            self.fields.append((self.select, value or ""))
            self.select = None
        elif tag == "textarea" and self.textarea is not None:
            self.fields.append((self.textarea, "".join(self.text).lstrip("\n")))
            self.textarea = None


def editor_form(page: bytes) -> tuple[str, list[tuple[str, str]]]:
    """Return the editor form's action (where saving posts) and its fields."""
    parser = EditorForm()
    parser.feed(page.decode("utf-8"))
    if not parser.fields:
        raise SystemExit("the editor page has no editor-form fields")
    return html.unescape(parser.action), parser.fields


def csrf_token(page: bytes) -> str:
    match = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    if match is None:
        raise SystemExit("no CSRF token on the editor page")
    return match.group(1).decode()


# --- measurements ----------------------------------------------------------------------------


def median_ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 1)


def load_average() -> str:
    try:
        return "/".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def measure_size(site: Site, size: int, *, reps: int, edits: int, log) -> dict:
    document, request = workloads.mixed_workspace(size)
    kb = next(layer for layer in document["layers"] if layer["key"] == EDITED_LAYER)
    item_path = kb["items"][0]["path"]
    original_body = kb["items"][0]["body"]
    figures = Figures(log, items=size, load_start=load_average())

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "workspace.yaml"
        path.write_text(
            yaml.dump(
                document, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True, width=100
            ),
            encoding="utf-8",
        )
        figures["file_mb"] = round(path.stat().st_size / 1e6, 2)
        log(f"  {size:,} items: import_workspace ({figures['file_mb']} MB YAML)…")
        elapsed, cpu = site.import_file(path)
        figures["import_workspace_s"] = round(elapsed, 2)
        figures["import_workspace_cpu_s"] = round(cpu, 2)
        site.sign_in()
        site.start()
        try:
            measure_requests(site, figures, request, item_path, original_body, path, reps, log)
            log(f"  {size:,} items: worker memory over {edits} edits…")
            measure_memory(site, figures, request, item_path, original_body, edits)
        finally:
            site.stop()
    figures["load_end"] = load_average()
    return dict(figures)


class Figures(dict):
    """The figures of one size; each is logged as soon as it is measured (a long run that
    fails late keeps what it measured)."""

    def __init__(self, log, **initial):
        super().__init__(**initial)
        self.log = log

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        self.log(f"      {key} = {value}")


def measure_requests(site, figures, request, item_path, original_body, path, reps, log):
    item_url = f"/api/v1/layers/{EDITED_LAYER}/items/{urllib.parse.quote(item_path)}"
    rule_url = f"/api/v1/profiles/{PROFILE}/rules/{EDITED_LAYER}"
    editor_url = f"/profiles/{PROFILE}/"
    preview_url = f"/profiles/{PROFILE}/preview/"

    site.call("POST", "/api/v1/resolve", request).expect(200)  # compile once
    log("    item PATCH, first and warm resolve…")
    patch, first, warm = [], [], []
    for n in range(reps):
        body = {"body": f"Edited {n}. {original_body}"}
        patch.append(site.call("PATCH", item_url, body).expect(200).seconds)
        first.append(site.call("POST", "/api/v1/resolve", request).expect(200).seconds)
        warm.append(site.call("POST", "/api/v1/resolve", request).expect(200).seconds)
    figures["item_patch_ms"] = median_ms(patch)
    figures["first_resolve_ms"] = median_ms(first)
    figures["warm_resolve_ms"] = median_ms(warm)

    log("    rule PATCH…")
    rule = []
    for n in range(reps):
        body = {"maxItems": 5 + n % 2}
        rule.append(site.call("PATCH", rule_url, body).expect(200).seconds)
    figures["rule_patch_ms"] = median_ms(rule)
    site.call("POST", "/api/v1/resolve", request).expect(200)

    cookies = {"Cookie": f"sessionid={site.session}"}
    log("    editor GET…")
    page = site.call("GET", editor_url, headers=cookies, api=False).expect(200)
    token = csrf_token(page.data)
    cookie = f"sessionid={site.session}; csrftoken={page_cookie(page, 'csrftoken') or ''}"
    save_url, fields = editor_form(page.data)
    editor = []
    for _ in range(reps):
        page = site.call("GET", editor_url, headers=cookies, api=False).expect(200)
        editor.append(page.seconds)
    figures["editor_get_ms"] = median_ms(editor)
    figures["editor_kb"] = round(len(page.data) / 1024, 1)

    form_headers = {
        "Cookie": cookie,
        "X-CSRFToken": token,
        "Content-Type": "application/x-www-form-urlencoded",
    }
    log("    studio preview…")
    preview = []
    draft = [(name, value) for name, value in fields if name != "budget"] + [("budget", "5000")]
    encoded = urllib.parse.urlencode(draft)
    for _ in range(reps):
        reply = site.call(
            "POST",
            preview_url,
            encoded,
            headers={**form_headers, "HX-Request": "true"},
            api=False,
        ).expect(200)
        preview.append(reply.seconds)
    figures["preview_ms"] = median_ms(preview)
    figures["preview_kb"] = round(len(reply.data) / 1024, 1)

    log("    studio save…")
    save = []
    for n in range(reps):
        posted = [(name, value) for name, value in fields if name not in ("budget", "etag")]
        posted += [("budget", str(6000 + n % 2 + 1)), ("action", "save")]
        reply = site.call(
            "POST",
            save_url or editor_url,
            urllib.parse.urlencode(posted),
            headers=form_headers,
            api=False,
        ).expect(302, 303)
        save.append(reply.seconds)
    figures["studio_save_ms"] = median_ms(save)

    log("    export (API, YAML)…")
    export, export_cpu = [], []
    for _ in range(max(1, reps // 2)):
        cpu = site.cpu_seconds()
        reply = site.call("GET", "/api/v1/workspace?format=yaml").expect(200)
        export_cpu.append(site.cpu_seconds() - cpu)
        export.append(reply.seconds)
    figures["export_yaml_ms"] = median_ms(export)
    figures["export_yaml_cpu_ms"] = median_ms(export_cpu)
    figures["export_mb"] = round(len(reply.data) / 1e6, 2)

    log("    import (API, YAML, the file again: merge, nothing changes)…")
    text = path.read_bytes()
    cpu = site.cpu_seconds(tasks=True)
    figures["api_import_ms"] = round(api_import(site, text) * 1000, 1)
    figures["api_import_cpu_ms"] = round((site.cpu_seconds(tasks=True) - cpu) * 1000, 1)


def api_import(site: Site, text: bytes) -> float:
    """POST the file; when the API answers 202, poll the job until it finishes."""
    started = time.perf_counter()
    reply = site.call(
        "POST", "/api/v1/workspace", text, headers={"Content-Type": "application/yaml"}
    ).expect(200, 202)
    if reply.status == 202:
        job = json.loads(reply.data)
        url = urllib.parse.urlsplit(job.get("url") or reply.headers["Location"]).path
        deadline = time.monotonic() + 1800
        while time.monotonic() < deadline:
            state = json.loads(site.call("GET", url).expect(200).data)
            if state["status"] in ("succeeded", "failed"):
                if state["status"] != "succeeded":
                    raise SystemExit(f"the import job failed: {state}")
                break
            time.sleep(0.05)
        else:
            raise SystemExit("the import job did not finish within 30 minutes")
    return time.perf_counter() - started


def page_cookie(reply: Reply, name: str) -> str | None:
    for key, value in reply.headers.items():
        if key.lower() == "set-cookie" and value.startswith(f"{name}="):
            return value.split(";", 1)[0].split("=", 1)[1]
    return None


def measure_memory(site, figures, request, item_path, original_body, edits):
    item_url = f"/api/v1/layers/{EDITED_LAYER}/items/{urllib.parse.quote(item_path)}"
    site.call("POST", "/api/v1/resolve", request).expect(200)
    # Two edits first, so the figure excludes the one-time growth of the first recompiles.
    for n in range(2):
        site.call("PATCH", item_url, {"body": f"Warm {n}. {original_body}"}).expect(200)
        site.call("POST", "/api/v1/resolve", request).expect(200)
    before = site.worker_rss_mb()
    for n in range(edits):
        site.call("PATCH", item_url, {"body": f"Memory {n}. {original_body}"}).expect(200)
        site.call("POST", "/api/v1/resolve", request).expect(200)
    after = site.worker_rss_mb()
    figures["edits"] = edits
    figures["rss_before_mb"] = round(before, 1)
    figures["rss_after_mb"] = round(after, 1)


# --- the report --------------------------------------------------------------------------------

ROWS = (
    ("item PATCH (one body edit)", "item_patch_ms", None),
    ("first resolve after it (same worker)", "first_resolve_ms", None),
    ("warm resolve", "warm_resolve_ms", None),
    ("rule PATCH", "rule_patch_ms", None),
    ("studio save", "studio_save_ms", None),
    ("editor GET", "editor_get_ms", "editor_kb"),
    ("studio preview", "preview_ms", "preview_kb"),
    ("import_workspace (YAML, fresh database)", "import_workspace_s", "file_mb"),
    ("  its CPU time (the command's process)", "import_workspace_cpu_s", None),
    ("import (API, the same file again)", "api_import_ms", None),
    ("  its CPU time (gunicorn worker + task worker)", "api_import_cpu_ms", None),
    ("export YAML (API)", "export_yaml_ms", "export_mb"),
    ("  its CPU time (gunicorn worker)", "export_yaml_cpu_ms", None),
)
SIZE_RATIO_TARGET = ("item_patch_ms", "rule_patch_ms", "studio_save_ms", "editor_get_ms")


def cell(figures: dict, key: str, extra: str | None) -> str:
    value = figures.get(key)
    if value is None:
        return "—"
    text = f"{value:,.2f} s" if key.endswith("_s") else f"{value:,.1f} ms"
    if extra and figures.get(extra) is not None:
        unit = "MB" if extra.endswith("_mb") else "KB"
        text += f", {figures[extra]:,} {unit}"
    return text


def format_report(results: list[dict]) -> str:
    sizes = [f"{r['items']:,} items" for r in results]
    lines = [
        "| cost | " + " | ".join(sizes) + " | largest/smallest |",
        "|---" * (len(sizes) + 2) + "|",
    ]
    for label, key, extra in ROWS:
        cells = [cell(r, key, extra) for r in results]
        ratio = ""
        first, last = results[0].get(key), results[-1].get(key)
        if len(results) > 1 and first and last:
            ratio = f"{last / first:.1f}×"
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {ratio} |")
    lines.append(
        "| first resolve / warm resolve | "
        + " | ".join(
            f"{r['first_resolve_ms'] / r['warm_resolve_ms']:.1f}×"
            if r.get("warm_resolve_ms")
            else "—"
            for r in results
        )
        + " | |"
    )
    lines.append(
        "| worker RSS before → after edits | "
        + " | ".join(
            f"{r['rss_before_mb']:.0f} → {r['rss_after_mb']:.0f} MB ({r['edits']} edits)"
            for r in results
        )
        + " | |"
    )
    lines.append(
        "| load average (start, end) | "
        + " | ".join(f"{r['load_start']}, {r['load_end']}" for r in results)
        + " | |"
    )
    return "\n".join(lines)


def run(*, sizes, reps, edits, server_url, log) -> list[dict]:
    database = f"ctx_bench_{os.getpid()}"
    site = Site(server_url=server_url, database=database)
    results = []
    try:
        for size in sizes:
            log(f"web benchmark: {size:,} items in database {database}")
            site.create()
            if not results:
                site.manage("collectstatic", "--noinput", "-v", "0")
            results.append(measure_size(site, size, reps=reps, edits=edits, log=log))
            log(json.dumps(results[-1]))
    finally:
        site.stop()
        site.drop()
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default=",".join(str(size) for size in SIZES),
        help="comma-separated item counts (default 1000,10000,50000)",
    )
    parser.add_argument("--reps", type=int, default=7, help="timed repetitions per row")
    parser.add_argument("--edits", type=int, default=100, help="edits for the memory figure")
    parser.add_argument("--quick", action="store_true", help="300 items, 3 reps, 10 edits")
    parser.add_argument(
        "--server",
        default=os.environ.get("BENCH_POSTGRES", DEFAULT_SERVER),
        help="PostgreSQL server URL without a database name (BENCH_POSTGRES)",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    reps, edits = args.reps, args.edits
    if args.quick:
        sizes, reps, edits = [300], 3, 10

    def log(message):
        print(message, file=sys.stderr, flush=True)

    if not server_reachable(args.server):
        log(f"web benchmark skipped: no PostgreSQL server at {args.server}")
        return 0
    results = run(sizes=sizes, reps=reps, edits=edits, server_url=args.server, log=log)
    print(f"Web benchmark — PostgreSQL, gunicorn 1 sync worker, {os.cpu_count()} cores")
    print(format_report(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

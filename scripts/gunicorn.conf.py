"""gunicorn settings for ``make serve`` (override any of them with GUNICORN_* variables)."""

import os
from pathlib import Path

# Each worker writes its metrics' values to files in this folder, read and merged by a scrape
# of GET /metrics (prometheus-client's multiprocess mode: docs/operations.md "Metrics"). Set
# before any worker imports prometheus-client; a folder private to the service, emptied at
# start (on_starting) and of a dead worker's gauges (child_exit).
os.environ.setdefault(
    "PROMETHEUS_MULTIPROC_DIR", str(Path(__file__).resolve().parent.parent / "var" / "metrics")
)

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", "2"))
threads = int(os.environ.get("GUNICORN_THREADS", "1"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
graceful_timeout = 10
# "-" logs requests to stdout; an empty value turns the access log off. Off by default when
# the application writes its own access lines (LOG_ACCESS: docs/operations.md "Logs"), which
# gunicorn's would repeat, with the path and the query.
_app_access = os.environ.get("LOG_ACCESS", "").strip().lower() in {"1", "true", "yes", "on"}
accesslog = os.environ.get("GUNICORN_ACCESSLOG", "" if _app_access else "-") or None
errorlog = "-"
# Each worker compiles the workspace once and keeps it until the content version changes.
preload_app = False


def post_worker_init(worker):
    """Warm the worker before it accepts a connection (``ctxstudio.warmup``): the workspace
    compiled and the indexes its profiles read built, reporting to the arbiter meanwhile so
    that a large workspace never makes the worker time out."""
    from ctxstudio.warmup import worker_warm

    worker_warm(heartbeat=worker.notify, log=worker.log)


def on_starting(server):
    """Before the first worker: the metrics' folder created or checked, last run's files gone."""
    from ctxstudio.metrics_files import multiprocess_folder_prepare

    multiprocess_folder_prepare(os.environ["PROMETHEUS_MULTIPROC_DIR"])


def child_exit(server, worker):
    """A worker exited: its live gauges' files go (prometheus-client's ``mark_process_dead``)."""
    from ctxstudio.metrics_files import worker_exited

    worker_exited(worker.pid)

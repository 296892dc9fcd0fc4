"""gunicorn settings for ``make serve`` (override any of them with GUNICORN_* variables)."""

import os

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

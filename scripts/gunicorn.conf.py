"""gunicorn settings for ``make serve`` (override any of them with GUNICORN_* variables)."""

import os

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", "2"))
threads = int(os.environ.get("GUNICORN_THREADS", "1"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
graceful_timeout = 10
# "-" logs requests to stdout; an empty value turns the access log off.
accesslog = os.environ.get("GUNICORN_ACCESSLOG", "-") or None
errorlog = "-"
# Each worker compiles the workspace once and keeps it until the content version changes.
preload_app = False


def post_worker_init(worker):
    """Warm the worker before it accepts a connection (``ctxstudio.warmup``): the workspace
    compiled and the indexes its profiles read built, reporting to the arbiter meanwhile so
    that a large workspace never makes the worker time out."""
    from ctxstudio.warmup import worker_warm

    worker_warm(heartbeat=worker.notify, log=worker.log)

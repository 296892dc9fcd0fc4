"""A server process warms its workspace before it serves (issue 20, item 4).

gunicorn calls ``worker_warm`` from its ``post_worker_init`` hook (``scripts/gunicorn.conf.py``):
after the application is loaded and before the worker accepts a connection, it compiles the
workspace and builds the indexes its profiles read (``profiles.workspace.cache.workspace_warm``).
Requests that arrive meanwhile wait in the listening socket's queue or go to a worker that is
ready; none meets a cold compile. gunicorn's arbiter kills a worker that does not report for
``timeout`` seconds, and a large workspace takes longer than that to warm: a thread reports
for it (``heartbeat``, the worker's ``notify``) while it warms, so material size never makes a
worker time out.
"""

import ctypes
import ctypes.util
import logging
import os
import threading
import time

from django.db import connections

from profiles.workspace import metrics

logger = logging.getLogger(__name__)

#: How often the warming worker tells gunicorn it is alive (well under any sane timeout).
HEARTBEAT_SECONDS = 1.0


def worker_warm(*, heartbeat=None, log: logging.Logger | None = None) -> bool:
    """Compile and prepare this process's workspace, calling ``heartbeat()`` at once and then
    every ``HEARTBEAT_SECONDS`` until done; return whether it is warm. A failure (the
    database unreachable, stored rows that do not form a workspace) is logged and leaves the
    workspace to be compiled on first use, as without warming: the process still serves."""
    from profiles.workspace.cache import workspace_warm
    from profiles.workspace.derived import terms_recompute_enqueue

    log = log or logger
    done = threading.Event()
    beat = None
    if heartbeat is not None:
        heartbeat()

        def beating():
            while not done.wait(HEARTBEAT_SECONDS):
                heartbeat()

        beat = threading.Thread(target=beating, name="warm-heartbeat", daemon=True)
        beat.start()
    started = time.perf_counter()
    try:
        cached = workspace_warm()
        if terms_recompute_enqueue():
            log.info("stored terms of another analyser version: their recompute is queued")
    except Exception:
        metrics.warmup_seconds.labels("failed").observe(time.perf_counter() - started)
        log.exception(
            "worker %s: warming the workspace failed; it compiles on first use", os.getpid()
        )
        return False
    finally:
        done.set()
        if beat is not None:
            beat.join()
        # The warm-up's connection is not the requests' (a request opens its own).
        connections.close_all()
    release_freed_memory()
    metrics.warmup_seconds.labels("warm").observe(time.perf_counter() - started)
    compiled = cached.compiled
    log.info(
        "worker %s warm: workspace %s, %d layers, %d items held, %d served, in %.1f s",
        os.getpid(),
        cached.token or "(empty)",
        len(compiled.indexes),
        sum(index.count for index in compiled.indexes),
        sum(compiled.served.values()),
        time.perf_counter() - started,
    )
    return True


def release_freed_memory() -> bool:
    """Give the memory the warm-up allocated and freed (rows read, stored terms decoded into
    postings) back to the system: glibc's ``malloc_trim(0)``, which returns every free page
    of the heap, not only its top. A no-op (False) where the C library is not glibc."""
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        trim = None
    if trim is None:
        return False
    trim(0)
    return True

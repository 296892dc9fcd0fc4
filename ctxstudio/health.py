"""Liveness and readiness doors (no authentication), for load balancers and orchestrators.

* ``GET /healthz`` — liveness: 200 when this process answers and reaches its database, 503
  otherwise. Restart a process whose liveness fails.
* ``GET /readyz`` — readiness: 200 when the product works through this process, 503 naming
  each thing that is wrong (the details, which may name files or material, go to the log:
  the door is public): the workspace does not compile in this worker, its held texts'
  folder is refused, no task worker serving a queue has been seen within
  ``READY_TASK_WORKER_SECONDS``, or a queue's oldest due task has waited longer than
  ``READY_TASK_MAX_WAIT_SECONDS``. Send traffic only to a ready process; alert when none is.

``/readyz`` is polled often, so it stays cheap: a current workspace costs the one query of
its version token, a workspace that failed to compile is not compiled again until its
version changes, and the task checks are three indexed queries.
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from profiles.workspace import cache, held_texts, task_workers

logger = logging.getLogger(__name__)

# The content version whose compile failed in this process, and why (not retried per poll).
_compile_failed: tuple[str, str] | None = None


@never_cache
@require_GET
def healthz(request):
    """Report whether this process can reach its database."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as exc:
        return JsonResponse(
            {"status": "unavailable", "database": f"unreachable: {type(exc).__name__}"},
            status=503,
        )
    return JsonResponse({"status": "ok", "database": "ok"})


def _workspace_check() -> str:
    """Return "ok" when the committed workspace is compiled in this process (compiling or
    catching up with it as the next request would), or what keeps it from compiling."""
    global _compile_failed
    version = cache.content_version()
    if _compile_failed is not None and _compile_failed[0] == version:
        return _compile_failed[1]
    try:
        cache.workspace_get()
    except DatabaseError:
        raise
    except Exception as exc:
        # The door is public: it names the failure, the log says what it is.
        logger.exception("readiness: the workspace does not compile in this worker")
        _compile_failed = (
            version,
            f"does not compile in this worker ({type(exc).__name__}; see the log)",
        )
        return _compile_failed[1]
    _compile_failed = None
    return "ok"


def _task_checks() -> dict[str, str]:
    """Return the state of each task queue: served by a worker seen lately, and not late."""
    if not task_workers.tasks_run_by_workers():
        return {}
    within = timedelta(seconds=settings.READY_TASK_WORKER_SECONDS)
    limit = settings.READY_TASK_MAX_WAIT_SECONDS
    unserved = set(task_workers.task_queues_unserved(within=within))
    waits = task_workers.task_queue_waits()
    checks = {}
    for queue in task_workers.task_queues():
        problems = []
        if queue in unserved:
            problems.append(f"no task worker seen in the last {within.total_seconds():g} s")
        waited = waits.get(queue, 0.0)
        if waited > limit:
            problems.append(f"the oldest due task has waited {waited:.0f} s (limit {limit:g} s)")
        checks[f"queue:{queue}"] = "; ".join(problems) or "ok"
    return checks


@never_cache
@require_GET
def readyz(request):
    """Report whether the product works through this process (503 naming what is wrong)."""
    try:
        checks = {"database": "ok", "workspace": _workspace_check()}
        checks["texts"] = (
            "not mapped, held in memory: MATERIAL_TEXTS_DIR was refused (not the service's "
            "own) or its files could not be written (see the log)"
            if held_texts.texts_problem()
            else "ok"
        )
        checks |= _task_checks()
    except DatabaseError as exc:
        checks = {"database": f"unreachable: {type(exc).__name__}"}
    problems = [f"{name}: {state}" for name, state in checks.items() if state != "ok"]
    body = {"status": "unavailable" if problems else "ok", "checks": checks}
    if problems:
        body["problems"] = problems
    if held_texts.last_rebuilt:
        body["textsRebuilt"] = held_texts.last_rebuilt.split(":", 1)[0]
    return JsonResponse(body, status=503 if problems else 200)

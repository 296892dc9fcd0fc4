"""Answers while the database cannot be reached (issue 35, item 3): a resolve answers from the
compiled workspace this worker holds, with the served layers it would have fetched unavailable.

A served layer (``profiles.workspace.served``: a layer with an ``itemFilter``) holds no items
in the worker: each request fetches its customer's. Without the database there is nothing to
fetch, so the degraded answer is exactly the one a request gets with an ``availability``
override of ``unavailable`` for each served layer it would have read (SPEC §4.1 and §4.3 row
2: the layer is omitted with ``LAYER_UNAVAILABLE``; a required one blocks with
``MISSING_REQUIRED_CONTEXT``): the resolution itself says what is missing, and the request it
echoes carries the override. A served layer the request would not have fetched (its filter
input missing, its availability already ``unknown`` or ``unavailable``, no items) answers as
always: nothing of it came from the database. Every held layer answers from memory as always.

The door adds the header ``X-Context-Degraded: database-unavailable`` to such an answer.
``DEGRADED_ANSWERS`` (setting, default on) turns it off: 503 as before. No decision log row is
written for a degraded answer (the log lives in the database): they are counted
(``degraded_answers``) and logged at most once a minute.
"""

import logging
import threading
import time

from django.conf import settings
from django.db import InterfaceError, OperationalError

from profiles.workspace import cache, metrics
from profiles.workspace.concurrency import is_retryable
from resolver import EncodedResolution
from resolver.clock import system_clock
from resolver.request import parse_request

logger = logging.getLogger(__name__)

DEGRADED_HEADER = "X-Context-Degraded"
DEGRADED_VALUE = "database-unavailable"
LOG_EVERY_SECONDS = 60.0

# Degraded answers this process gave (their decision log rows were not written).
degraded_answers = 0
_logged = {"at": float("-inf"), "count": 0}
_lock = threading.Lock()


def database_unreachable(exc: BaseException) -> bool:
    """Return whether ``exc`` says the database cannot be reached (a lock conflict can)."""
    return isinstance(exc, OperationalError | InterfaceError) and not is_retryable(exc)


def degraded_enabled() -> bool:
    return getattr(settings, "DEGRADED_ANSWERS", True)


def held_workspace() -> "cache.CachedWorkspace | None":
    """Return the compiled workspace this worker holds, without asking the database (None
    when it holds none yet: a worker that never served)."""
    return cache.workspace_held()


def degraded_request(compiled, request: dict) -> dict:
    """Return ``request`` with ``unavailable`` for each served layer it would fetch from the
    database. Raises ``RequestError`` for a bad request, as resolving it would."""
    needs = compiled.needs(request)
    if not needs:
        return request
    given = request.get("availability")
    availability = dict(given) if isinstance(given, dict) else {}
    for need in needs:
        availability[need.layer] = "unavailable"
    return {**request, "availability": availability}


def degraded_resolve_versioned(held, request: dict) -> tuple[EncodedResolution, int | None]:
    """Resolve ``request`` on the held snapshot, its served layers unavailable; return the
    encoded resolution and the answering profile's version (``workspace_resolve_versioned``'s
    answer, without the database)."""
    compiled = held.compiled
    # The served layers hold nothing and keep their compiled totals: the engine asks no
    # source (it would ask the database for their totals on every resolution).
    offline = compiled.with_material({}) if compiled.served else compiled
    resolution = offline.resolve_json(degraded_request(compiled, request))
    _counted()
    version = held.profile_versions.get(resolution.head["profile"]["key"])
    return resolution, version or None


def degraded_profile_environment(held, request: dict) -> tuple[str, str | None]:
    """Return the key and environment of the profile ``request`` selects in the held snapshot
    (``request_profile_environment`` without the database)."""
    compiled = held.compiled
    parsed = parse_request(request, layer_keys=compiled.layer_keys, clock=system_clock)
    profile = compiled.select_profile(parsed)
    return profile.key, profile.environment


def _counted() -> None:
    global degraded_answers
    metrics.degraded_answers.inc()
    with _lock:
        degraded_answers += 1
        _logged["count"] += 1
        now = time.monotonic()
        if now - _logged["at"] < LOG_EVERY_SECONDS:
            return
        count, _logged["count"], _logged["at"] = _logged["count"], 0, now
    logger.warning(
        "database unavailable: %d resolve(s) answered degraded (served layers unavailable, "
        "no decision log row) since the last report",
        count,
    )

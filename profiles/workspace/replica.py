"""A streaming read replica: which reads it may answer, and read-your-writes.

With ``DATABASE_REPLICA_URL`` (the ``replica`` database alias, decided once at import:
``ENABLED``), the served layers' one statement of a request (``profiles.workspace.served``)
and the read-only API's reads of the workspace's material (``replica_reads``, through
``ctxstudio.db_router.ReplicaRouter``) run on the replica. Without it nothing here runs.

**The consistency rule.** Every workspace write bumps ``WorkspaceVersion.counter`` under the
writers' lock (``writing.workspace_changed``), so the counter orders the committed writes. A
write records its counter once it committed (``transaction.on_commit``): in this process and
in the shared cache (``CACHE_URL``: every worker and server), as a maximum (a Lua script in
Redis: a slower writer never lowers it). A compilation this process read from the primary
raises the process's own mark too. A read on the replica also returns the replica's counter
and its lag **in the same statement** (the same snapshot as the rows), and its answer is used
only when that counter is at least the highest recorded one and the lag is within
``REPLICA_MAX_LAG_SECONDS``; otherwise the same read runs on the primary. So a write
acknowledged to its client is seen by any later read on any worker, and a replica that lags
or stopped applying never answers silently: its reads go to the primary, counted in
``ctxstudio_replica_reads_total{outcome}``. A replica that cannot be reached sends reads to the
primary and is left alone by this process for ``REPLICA_RETRY_SECONDS``.

The recorded counter costs the lean resolve no round trip of its own: the throttle's Redis
round trip reads it along (``throttling.along_keys``); without a throttle (or without Redis)
one cache read is made when the replica is asked.
"""

import contextlib
import contextvars
import logging
import threading
import time

from django.conf import settings
from django.core.cache import caches
from django.core.signals import request_finished, request_started
from django.db import InterfaceError, OperationalError, connections, transaction

from profiles.models import WorkspaceVersion
from profiles.workspace import metrics, throttling
from profiles.workspace.selectors import rows_read, workspace_counter_get

ALIAS = "replica"
ENABLED = ALIAS in settings.DATABASES
KEY = "replica_written_counter"

logger = logging.getLogger(__name__)

# The highest counter this process knows committed: its own writes, and the compilations it
# read from the primary.
_mark = 0
_mark_lock = threading.Lock()
# Until when (time.monotonic) this process leaves an unreachable replica alone.
_skip_until = 0.0
# Reads of the material the router may send to the replica, inside ``replica_reads``.
_route: contextvars.ContextVar = contextvars.ContextVar("replica_route", default=False)

outcomes = {
    name: metrics.replica_reads.labels(name)
    for name in ("replica", "primary_lag", "primary_written", "primary_unreachable")
}
# What this process counted (diagnostics and tests; the metric is the operators').
counted = dict.fromkeys(outcomes, 0)

_MAX_SCRIPT = (
    "local held = tonumber(redis.call('GET', KEYS[1]) or '0') "
    "if tonumber(ARGV[1]) > held then redis.call('SET', KEYS[1], ARGV[1]) end return 0"
)


def _shared_key() -> str:
    return caches["default"].make_and_validate_key(KEY)


def _request_edge(sender, **kwargs):
    throttling.fetched_along.set(None)  # what the throttle read along is the request's own


if ENABLED:
    # The throttle's round trip (when it counts in Redis) reads the recorded counter along.
    throttling.along_keys.append(KEY)
    request_started.connect(_request_edge, dispatch_uid="replica_request_started")
    request_finished.connect(_request_edge, dispatch_uid="replica_request_finished")


def count(outcome: str) -> None:
    outcomes[outcome].inc()
    counted[outcome] += 1


def mark(counter) -> None:
    """Raise this process's mark to ``counter`` (a committed counter it knows of)."""
    global _mark
    if counter is None:
        return
    with _mark_lock:
        _mark = max(_mark, int(counter))


# What the version query of a compilation (``cache._version``) reads besides, and keeps.
COUNTER_COLUMN = ", counter" if ENABLED else ""


def marked(row: tuple) -> tuple:
    """Mark a compilation's (held token, counter, profiles token); return it without the
    counter, as the version query answers without a replica."""
    mark(row[1])
    return row[0], row[2]


def recorded(counter: int) -> None:
    """Record a committed write's counter: here and in the shared cache (a maximum)."""
    mark(counter)
    backend = caches["default"]
    try:
        redis = throttling.redis_client(backend)
        if redis is not None:
            redis.eval(_MAX_SCRIPT, 1, _shared_key(), int(counter))
            return
        with _mark_lock:  # another cache: a maximum within this process only
            if int(backend.get(KEY, 0) or 0) < counter:
                backend.set(KEY, int(counter), timeout=None)
    except Exception:  # the write committed: its readers fall back to the primary instead
        logger.exception("replica: the write's counter could not be recorded in the cache")


def write_recorded() -> None:
    """Record the counter of the write in progress (read inside its transaction, after its
    bump) once the transaction commits. Nothing without a replica."""
    if ENABLED:
        counter = workspace_counter_get()
        if counter is not None:
            transaction.on_commit(lambda: recorded(counter))


def wanted() -> int | None:
    """Return the counter a replica must have applied to answer: the highest recorded (the
    shared cache's, read along with the throttle when it was) or known here. None when the
    cache cannot say: the primary answers."""
    along = throttling.fetched_along.get()
    try:
        shared = along[KEY] if along is not None else caches["default"].get(KEY, 0)
    except Exception:
        logger.exception("replica: the recorded counter could not be read")
        return None
    return max(int(shared or 0), _mark)


def available() -> bool:
    """Whether this read may go to the replica at all: one is configured, this process is not
    leaving it alone, and the read is not inside a transaction of the primary (a write)."""
    return (
        ENABLED and time.monotonic() >= _skip_until and not connections["default"].in_atomic_block
    )


def unreachable() -> None:
    global _skip_until
    _skip_until = time.monotonic() + getattr(settings, "REPLICA_RETRY_SECONDS", 5)
    count("primary_unreachable")
    logger.warning("replica: unreachable; reads go to the primary for a while", exc_info=True)
    with contextlib.suppress(Exception):
        connections[ALIAS].close()


def lag_sql() -> str:
    """The replica's lag in seconds (0 when it has replayed all it received)."""
    return (
        "(CASE WHEN NOT pg_is_in_recovery() OR pg_last_wal_receive_lsn() = "
        "pg_last_wal_replay_lsn() THEN 0 ELSE COALESCE(EXTRACT(EPOCH FROM now() - "
        "pg_last_xact_replay_timestamp()), 0) END)"
    )


def fresh(counter, lag) -> str:
    """Return the outcome of a replica's answer with this counter and lag: "replica" when it
    may be used, else why the primary answers."""
    if lag is None or float(lag) > getattr(settings, "REPLICA_MAX_LAG_SECONDS", 5):
        return "primary_lag"
    needed = wanted()
    if needed is None or counter is None or int(counter) < needed:
        return "primary_written"
    return "replica"


def replica_rows(sql: str, params) -> list | None:
    """Run a read on the replica; None (counted, the replica left alone a while) when it
    cannot be reached. A dropped persistent connection is opened again once."""
    try:
        return rows_read(sql, params, using=ALIAS, prepared=True)
    except (OperationalError, InterfaceError):
        unreachable()
        return None


def _state_sql() -> str:
    from_table = connections[ALIAS].ops.quote_name(WorkspaceVersion._meta.db_table)
    return f"SELECT (SELECT counter FROM {from_table} WHERE id = 1), {lag_sql()}"


@contextlib.contextmanager
def replica_reads():
    """Let the router send this block's reads of the material to the replica when it has
    applied every recorded write and does not lag (one statement on the replica asks);
    otherwise they stay on the primary. Later reads see the replica at least as far."""
    if not available():
        yield False
        return
    rows = replica_rows(_state_sql(), [])
    if rows is None:
        yield False
        return
    outcome = fresh(*rows[0])
    count(outcome)
    token = _route.set(outcome == "replica")
    try:
        yield outcome == "replica"
    finally:
        _route.reset(token)


def routed() -> bool:
    """Whether reads are being routed to the replica now (``replica_reads``)."""
    return _route.get()

"""The decision log: one row per resolution served, written so that it never fails or slows one.

Entries are handed to a background writer (one thread per process) that inserts them in
batches (what arrived within 0.2 s of the first entry, at most 200 rows per insert); the
request only pays for building the row. A full queue drops the entry and says
so in the log rather than making a resolution wait. ``DECISION_LOG_ASYNC=false`` writes
synchronously instead (the test suite does, so that each test sees its own rows).
"""

import atexit
import contextlib
import datetime as dt
import hashlib
import json
import logging
import os
import queue
import threading
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from profiles.authoring.scenarios import ScenarioInvalid, scenario_create
from profiles.models import DecisionLog, Scenario
from profiles.workspace import cache
from profiles.workspace.throttling import parse_rate, scope_rate
from resolver import ValidationIssue

logger = logging.getLogger("profiles.decision_log")


def request_fingerprint(request_data: dict) -> str:
    """Return the SHA-256 of the request's canonical JSON (keys sorted, dates as strings)."""
    text = json.dumps(request_data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def decision_log_record(
    *,
    request_data: dict,
    resolution: dict,
    source: str,
    started: float,
    workspace_version: str = "",
    user=None,
    auth: str = "",
    profile_version: int | None = None,
) -> DecisionLog | None:
    """Record a served resolution; log (never raise) when it cannot be written.

    ``started`` is a ``time.perf_counter()`` value taken before resolving. The input is kept
    only as a fingerprint unless ``DECISION_LOG_STORE_INPUT`` is on; ``profile_version`` is
    the number of the profile version that answered. Returns the saved row
    when writing synchronously, else None (the row is written in the background).
    """
    if not settings.DECISION_LOG_ENABLED:
        return None
    if source == DecisionLog.Source.PREVIEW and not settings.DECISION_LOG_PREVIEWS:
        return None
    try:
        values = (
            timezone.now(),
            source,
            user.pk if getattr(user, "is_authenticated", False) else None,
            auth,
            (resolution.get("profile") or {}).get("key", ""),
            workspace_version or cache.cached_token(),
            profile_version,
            request_fingerprint(request_data),
            request_data.get("input") if settings.DECISION_LOG_STORE_INPUT else None,
            resolution.get("status", ""),
            resolution.get("blockers") or [],
            (resolution.get("budget") or {}).get("estimatedTokens", 0),
            round((time.perf_counter() - started) * 1000, 3),
        )
        if settings.DECISION_LOG_ASYNC:
            # The row's values only: the writer inserts them without a model instance each
            # (building one cost more than everything else the row needs).
            _writer.submit(values)
            return None
        entry = DecisionLog(**dict(zip(_ATTRIBUTES, values, strict=True)))
        with transaction.atomic():
            entry.save()
        return entry
    except Exception:  # a failure to log must not fail the resolution
        logger.exception("could not write the decision log entry")
        return None


# A row's values in ``decision_log_record``'s order: the model's fields but its id.
_FIELDS = (
    "created_at",
    "source",
    "user",
    "auth",
    "profile_key",
    "workspace_version",
    "profile_version",
    "request_fingerprint",
    "input",
    "status",
    "blockers",
    "estimated_tokens",
    "duration_ms",
)
_MODEL_FIELDS = tuple(DecisionLog._meta.get_field(name) for name in _FIELDS)
_ATTRIBUTES = tuple(field.attname for field in _MODEL_FIELDS)


def _rows_insert(rows: list[tuple]) -> None:
    """Insert rows of values (``_FIELDS``' order) in one transaction, each value prepared by
    its model field as ``bulk_create`` prepares it (the JSON fields' adaptation included)."""
    quote = connection.ops.quote_name
    sql = (
        f"INSERT INTO {quote(DecisionLog._meta.db_table)} "
        f"({', '.join(quote(field.column) for field in _MODEL_FIELDS)}) "
        f"VALUES ({', '.join(['%s'] * len(_MODEL_FIELDS))})"
    )
    params = [
        [
            field.get_db_prep_save(value, connection)
            for field, value in zip(_MODEL_FIELDS, row, strict=True)
        ]
        for row in rows
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(sql, params)


INPUT_NOT_STORED = (
    "was not stored (DECISION_LOG_STORE_INPUT was off when this request was served): "
    "only its fingerprint is kept, so it cannot become a scenario"
)


def decision_log_scenario_name(entry: DecisionLog) -> str:
    """Return the name suggested for the scenario made from a logged request."""
    served = timezone.localtime(entry.created_at)
    return f"{entry.profile_key} request {entry.pk} ({served:%Y-%m-%d %H:%M})"


def decision_log_save_as_scenario(*, entry: DecisionLog, name: str, user=None) -> Scenario:
    """Save a logged request as a new scenario of its profile, through ``scenario_create``.

    The scenario has the stored input and, as ``now``, the time the request was served (so it
    answers as it did then, whatever the items' dates); its description names the entry. The
    log keeps no format or availability: the scenario has the profile's defaults. Raise
    ``ScenarioInvalid`` (``input``: not stored; the profile is gone; a bad name) or
    ``Conflict`` (the name is taken): nothing is written then.
    """
    if entry.input is None:
        raise ScenarioInvalid([ValidationIssue("input", INPUT_NOT_STORED)])
    served = entry.created_at.astimezone(dt.UTC)
    document = {
        "name": name.strip(),
        "profile": entry.profile_key,
        "description": (
            f"From the decision log: request {entry.pk}, served {served:%Y-%m-%d %H:%M:%S} UTC "
            f"({entry.status or 'no status'})."
        ),
        "input": entry.input,
        "now": served.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return scenario_create(document=document, user=user)


# Queued after the rows: the writer closes its connection.
_CLOSE = object()


class _BackgroundWriter:
    """Insert queued entries in batches from one daemon thread per process."""

    BATCH = 200
    GATHER_SECONDS = 0.2

    def __init__(self):
        self._queue: queue.Queue = queue.Queue(maxsize=10_000)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._pid = None

    def submit(self, entry: tuple) -> None:
        self._ensure_running()
        try:
            self._queue.put_nowait(entry)
        except queue.Full:
            logger.error("decision log queue full: an entry was dropped")

    def flush(self, timeout: float = 5.0, *, close_connection: bool = False) -> bool:
        """Wait until every queued entry is written (or failed); return whether it drained.
        ``close_connection``: the writer then closes its database connection (at exit, so
        the server sees the session end; a test database can then be dropped)."""
        deadline = time.monotonic() + timeout
        if close_connection and self._thread is not None and self._thread.is_alive():
            with contextlib.suppress(queue.Full):
                self._queue.put_nowait(_CLOSE)
        while self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def _ensure_running(self) -> None:
        # After a fork (gunicorn workers) the parent's thread does not exist in the child.
        if self._thread is not None and self._thread.is_alive() and self._pid == os.getpid():
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
                self._pid = os.getpid()
                self._thread = threading.Thread(
                    target=self._run, name="decision-log-writer", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            # Let the entries of concurrent requests gather: under load, one insert and one
            # commit serve many resolutions instead of one each.
            time.sleep(self.GATHER_SECONDS)
            while len(batch) < self.BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            rows = [row for row in batch if row is not _CLOSE]
            try:
                if rows:
                    self._write(rows)
                if len(rows) < len(batch):
                    connection.close()
            finally:
                for _ in batch:
                    self._queue.task_done()

    @staticmethod
    def _write(batch: list[tuple]) -> None:
        close_old_connections()
        try:
            _rows_insert(batch)
            return
        except Exception:
            connection.close()  # reconnect (the database may have restarted)
        # One bad entry must not lose the others: write them one by one.
        for row in batch:
            try:
                _rows_insert([row])
            except Exception:
                logger.exception("could not write a decision log entry")
                connection.close()


_writer = _BackgroundWriter()
atexit.register(_writer.flush, 2.0, close_connection=True)


def decision_log_flush(timeout: float = 5.0, *, close_connection: bool = False) -> bool:
    """Wait for the background writer to store what was queued (tests, shutdown); with
    ``close_connection``, its database connection is closed after."""
    return _writer.flush(timeout, close_connection=close_connection)


def decision_log_prune(*, days: int | None = None, dry_run: bool = False) -> int:
    """Delete entries older than ``days`` (default: the retention setting); return how many."""
    days = settings.DECISION_LOG_RETENTION_DAYS if days is None else days
    old = DecisionLog.objects.filter(created_at__lt=timezone.now() - timezone.timedelta(days=days))
    if dry_run:
        return old.count()
    deleted, _ = old.delete()
    return deleted


# --- how fast it grows ---------------------------------------------------------------------

# Bytes one row takes on PostgreSQL, its indexes included: 50,000 rows of API resolutions
# without input (DECISION_LOG_STORE_INPUT off) took 14.8 MB, 296 bytes a row (216 in the
# table, 80 in the indexes). Used where the database cannot tell (SQLite, a nearly empty log).
MEASURED_ROW_BYTES = 296
_SECONDS_A_DAY = 86_400


@dataclass(frozen=True)
class DecisionLogGrowth:
    """The log's growth over the last day, and what it comes to over the retention period."""

    rows_last_day: int
    row_bytes: int
    retention_days: int
    rate: str | None  # the per-user resolve rate ("600/minute"), None when not throttled

    @property
    def bytes_last_day(self) -> int:
        return self.rows_last_day * self.row_bytes

    @property
    def bytes_retained(self) -> int:
        """Bytes the log holds at the current rate once the retention period is full."""
        return self.bytes_last_day * self.retention_days

    @property
    def rows_a_day_at_rate(self) -> int | None:
        """Rows one token at the resolve rate limit adds a day (None without a limit)."""
        if self.rate is None:
            return None
        requests, seconds = parse_rate(self.rate)
        return requests * _SECONDS_A_DAY // seconds

    @property
    def bytes_a_day_at_rate(self) -> int | None:
        rows = self.rows_a_day_at_rate
        return None if rows is None else rows * self.row_bytes


def decision_log_row_bytes() -> int:
    """Return the bytes a row takes: on PostgreSQL the table's size with its indexes over its
    row count (the planner's estimate, read without counting), else the measured figure."""
    if connection.vendor != "postgresql":
        return MEASURED_ROW_BYTES
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_total_relation_size(oid), reltuples FROM pg_class WHERE oid = %s::regclass",
            [DecisionLog._meta.db_table],
        )
        total, rows = cursor.fetchone()
    if rows is None or rows < 1_000:  # too few rows (or never analysed) to tell
        return MEASURED_ROW_BYTES
    return round(total / rows)


def decision_log_growth(*, now: dt.datetime | None = None) -> DecisionLogGrowth:
    """Return the rows written over the last 24 hours and what they weigh."""
    now = now or timezone.now()
    rows = DecisionLog.objects.filter(created_at__gte=now - dt.timedelta(days=1)).count()
    return DecisionLogGrowth(
        rows_last_day=rows,
        row_bytes=decision_log_row_bytes(),
        retention_days=settings.DECISION_LOG_RETENTION_DAYS,
        rate=scope_rate("resolve"),
    )

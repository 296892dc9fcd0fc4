"""Concurrency of writes: the writers' lock, ETags with If-Match, and retryable conflicts.

Every workspace or scenario write (the features' write services) runs in ``workspace_write()``: one
transaction that first locks the single ``WorkspaceVersion`` row. Writers therefore queue in
one order — that row, then the rows they change — and two writers can never deadlock each
other (an import, a profile edit and a rule edit alike). Readers never take the lock.

An ETag is a hash of the object's document form (SPEC §2), so it changes with any edit that
matters, however it was made. A writer sends the ETag it read (``If-Match``); the service
compares it after taking the lock, so of two writes based on the same version exactly one
applies and the other is refused with ``PreconditionFailed``.
"""

import hashlib
import json
from contextlib import contextmanager

from django.conf import settings
from django.db import OperationalError, connection, transaction

from profiles.models import Consumer, Item, Layer, Profile, Rule, Scenario, WorkspaceVersion
from profiles.workspace.mappers import (
    json_safe,
    map_consumer_to_resolver,
    map_item_to_resolver,
    map_layer_to_resolver,
    map_profile_to_resolver,
    map_scenario_to_document,
)

RETRY_AFTER_SECONDS = 1
# PostgreSQL SQLSTATEs of failures that a retry resolves: deadlock, serialization, lock wait.
RETRYABLE_SQLSTATES = {"40P01", "40001", "55P03"}


class PreconditionFailed(Exception):
    """The object changed since the client read it (stale ``If-Match``)."""

    def __init__(self, current_etag: str):
        super().__init__("someone else saved this first; reload to see their change")
        self.current_etag = current_etag


class WriteConflict(Exception):
    """Another write held what this one needed; nothing was written, a retry will succeed."""

    def __init__(self, message: str = "another change was being saved; retry in a moment"):
        super().__init__(message)
        self.retry_after = RETRY_AFTER_SECONDS


# --- ETags --------------------------------------------------------------------------------


def document_etag(document) -> str:
    """Return a strong ETag of a document: a hash of its canonical JSON."""
    text = json.dumps(json_safe(document), sort_keys=True, separators=(",", ":"))
    return '"' + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32] + '"'


def consumer_etag(consumer: Consumer) -> str:
    return document_etag(map_consumer_to_resolver(consumer))


def layer_etag(layer: Layer) -> str:
    """Return the ETag of a layer's own fields (its items have their own ETags)."""
    document = map_layer_to_resolver(layer, [])
    document.pop("items", None)
    return document_etag(document)


def item_etag(item: Item) -> str:
    return document_etag(map_item_to_resolver(item))


def profile_etag(profile: Profile, rules: list[Rule] | None = None) -> str:
    """Return the ETag of a profile with its rules (``rules`` with their layers, if loaded)."""
    rules = list(profile.rules.select_related("layer")) if rules is None else rules
    layer_keys = {rule.layer_id: rule.layer.key for rule in rules}
    return document_etag(
        map_profile_to_resolver(
            profile, rules, consumer_key=profile.consumer.key, layer_keys=layer_keys
        )
    )


def scenario_etag(scenario: Scenario) -> str:
    return document_etag(map_scenario_to_document(scenario))


def etag_matches(if_match: str | None, current: str) -> bool:
    """Return whether an ``If-Match`` header value admits the current ETag (None = no check)."""
    if if_match is None:
        return True
    candidates = [part.strip() for part in if_match.split(",")]
    return "*" in candidates or current in candidates or current.strip('"') in candidates


def check_if_match(if_match: str | None, current: str) -> None:
    """Raise ``PreconditionFailed`` unless ``if_match`` admits the current ETag."""
    if not etag_matches(if_match, current):
        raise PreconditionFailed(current)


# --- the writers' lock --------------------------------------------------------------------


def workspace_writer_lock() -> None:
    """Block every other writer until this transaction ends (call inside ``atomic``)."""
    if connection.vendor == "postgresql":
        # How long a writer waits before answering "busy, retry" (a PostgreSQL duration),
        # then the lock: two statements in one round trip (the timeout set first).
        table = connection.ops.quote_name(WorkspaceVersion._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT set_config('lock_timeout', %s, true); "
                f"SELECT 1 FROM {table} WHERE id = 1 FOR UPDATE",
                [settings.WRITE_LOCK_TIMEOUT],
            )
            cursor.nextset()
            if cursor.fetchone() is not None:
                return
    if not WorkspaceVersion.objects.select_for_update().filter(pk=1).exists():
        # The first write ever: create the row (a concurrent creator wins the race), lock it.
        WorkspaceVersion.objects.get_or_create(pk=1)
        WorkspaceVersion.objects.select_for_update().filter(pk=1).exists()


def is_retryable(error: OperationalError) -> bool:
    """Return whether a database error is a lock conflict that a retry resolves."""
    cause = error.__cause__
    return (
        getattr(cause, "sqlstate", None) in RETRYABLE_SQLSTATES
        or getattr(getattr(cause, "diag", None), "sqlstate", None) in RETRYABLE_SQLSTATES
    )


@contextmanager
def workspace_write():
    """Run one write: a transaction holding the writers' lock, retryable failures reported.

    A deadlock, serialization failure or lock timeout (none should happen: every writer
    takes the same lock first) raises ``WriteConflict`` instead of a database error.
    """
    try:
        with transaction.atomic():
            workspace_writer_lock()
            yield
    except OperationalError as exc:
        if is_retryable(exc):
            raise WriteConflict() from exc
        raise

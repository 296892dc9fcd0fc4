"""The API keys this process holds in memory, and the stamp in the shared cache that says when
to forget them (``keys.key_authenticate`` reads through it: the one rule of which key signs a
request in, for every door that takes one, the API's authentication classes and the lean door).

A key's record (with its owner, and the owner's role once asked) is read from the database
the first time a process sees the key (one query, ``keys.token_by_key_get``) and then held,
by the key's hash, so that a request signed with a known key costs no query. What can make a
held record wrong — a key revoked, deleted or changed, its owner deactivated, deleted,
promoted or demoted, the editors group renamed or deleted — moves a **stamp** in the shared
cache (``django.core.cache``: Redis in production) when it commits:

* the process that made the change forgets every key at once (and again at the commit);
* every other process compares its stamp with the shared one at most every
  ``API_KEY_CACHE_SECONDS`` (default 5 s) and forgets every key when it moved. So a
  revocation, an expiry, a deactivation or a demotion takes effect everywhere within that
  time. A stamp missing from the shared cache (evicted, the cache restarted) counts as moved.

Writes through the models are seen by signals (``post_save``, ``post_delete``,
``m2m_changed`` of the users' groups); the key services' bulk updates (revocation) call
``keys_changed`` themselves. An expiry needs no write: it is checked at each request.
An unknown key is never held (a key made on another worker works there at once), and at
most ``MAX_HELD`` keys are held (beyond, the memory starts again).
"""

import secrets
import threading
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.cache import cache as shared_cache
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save
from django.dispatch import receiver

from profiles.models import ApiKey

STAMP_KEY = "api_keys_stamp"
MAX_HELD = 10_000


class _Held:
    """The records this process holds, by key hash, and the stamp they were read under."""

    def __init__(self):
        self.records: dict[str, ApiKey] = {}
        self.stamp: str | None = None
        self.checked = float("-inf")  # time.monotonic() of the last comparison
        self.generation = 0  # moves whenever the records are forgotten
        self.lock = threading.Lock()

    def forget(self, stamp: str | None = None) -> None:
        with self.lock:
            self.records = {}
            self.generation += 1
            if stamp is not None:
                self.stamp = stamp
                self.checked = time.monotonic()


_held = _Held()


def held_clear() -> None:
    """Forget every held key and the stamp they were read under: the next request compares
    the stamp (tests start so, whatever an earlier test in the process held)."""
    with _held.lock:
        _held.records = {}
        _held.generation += 1
        _held.stamp = None
        _held.checked = float("-inf")


def check_seconds() -> float:
    return float(getattr(settings, "API_KEY_CACHE_SECONDS", 5))


def _compare_stamp() -> None:
    """Forget every held key when the shared stamp moved (asked at most every
    ``API_KEY_CACHE_SECONDS``)."""
    now = time.monotonic()
    if now - _held.checked < check_seconds():
        return
    stamp = shared_cache.get(STAMP_KEY)
    if stamp is None:  # never set, evicted, or the cache restarted: start a new one
        shared_cache.add(STAMP_KEY, secrets.token_hex(8), timeout=None)
        stamp = shared_cache.get(STAMP_KEY)
    if stamp != _held.stamp:
        _held.forget(stamp)
    else:
        _held.checked = now


def held_record(hashed: str) -> ApiKey | None:
    """Return the record held for this key hash (None: not held), after comparing the stamp
    when it is time to."""
    _compare_stamp()
    return _held.records.get(hashed)


def held_generation() -> int:
    """Return the generation of the held records: read it before reading a row from the
    database, and give it back to ``record_hold``."""
    return _held.generation


def record_hold(hashed: str, record: ApiKey, generation: int) -> None:
    """Hold a record read from the database, unless the keys were forgotten since
    ``generation`` (the row may predate the change)."""
    with _held.lock:
        if _held.generation == generation:
            if len(_held.records) >= MAX_HELD:
                _held.records = {}
            _held.records[hashed] = record


def keys_changed() -> None:
    """Say that a key or an account changed: this process forgets every key now, and, when the
    change commits, the shared stamp moves (every process forgets within
    ``API_KEY_CACHE_SECONDS``) and this process forgets again (a request in between may have
    read the row before the change)."""
    _held.forget()
    transaction.on_commit(_stamp_move)


def _stamp_move() -> None:
    stamp = secrets.token_hex(8)
    shared_cache.set(STAMP_KEY, stamp, timeout=None)
    _held.forget(stamp)


# --- the writes that move the stamp ---------------------------------------------------------

_RELEVANT_GROUP_ACTIONS = {"post_add", "post_remove", "post_clear"}


@receiver(post_save, sender=ApiKey, dispatch_uid="key_cache_key_saved")
@receiver(post_delete, sender=ApiKey, dispatch_uid="key_cache_key_deleted")
@receiver(post_delete, sender=Group, dispatch_uid="key_cache_group_deleted")
def _row_changed(sender, **kwargs):
    keys_changed()


@receiver(post_save, sender=Group, dispatch_uid="key_cache_group_saved")
def _group_saved(sender, created, **kwargs):
    if not created:  # a rename may make or unmake the editors group
        keys_changed()


def _user_changed(sender, created=False, update_fields=None, **kwargs):
    # A new account has no key yet; ``last_login`` alone (a sign-in) changes no role.
    if created or (update_fields is not None and set(update_fields) <= {"last_login"}):
        return
    keys_changed()


def _groups_changed(sender, action, **kwargs):
    if action in _RELEVANT_GROUP_ACTIONS:
        keys_changed()


_user_model = get_user_model()
post_save.connect(_user_changed, sender=_user_model, dispatch_uid="key_cache_user_saved")
post_delete.connect(_user_changed, sender=_user_model, dispatch_uid="key_cache_user_deleted")
m2m_changed.connect(
    _groups_changed, sender=_user_model.groups.through, dispatch_uid="key_cache_groups"
)

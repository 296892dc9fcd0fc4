"""API keys: a user's own token (the studio's API keys page, ``POST /api/v1/auth/token``) and
the scoped keys applications hold — create, list, revoke — and the lookup by key on every API
request that carries one.

A key is how a caller signs in to the API, whichever door made it: like the permissions, it
belongs to no feature. Only its hash is stored (``profiles.models.keys``); the key itself is
returned once, by the function that makes it.

The lookup by key is compiled once per process: the ORM would build the key-and-owner query
each time (``select_related("owner").get(hash=…)``), which cost about a tenth of a resolve
request under gunicorn. Here the ORM compiles the same statement once per database and the
rows become the same model instances (``Model.from_db``), so the answer and the one query are
the ORM's. That goes below the queryset API (a compiler, its value converters, a cursor), so
it is explained here rather than kept among the selectors.
"""

import datetime
import functools
import logging
import re
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import InterfaceError, OperationalError, connections, router, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext_lazy as _

from profiles.models import ApiKey, Environment, KeyScope, Profile
from profiles.models.keys import EXPIRY_LATEST, NAME_MAX_LENGTH, key_hash, key_prefix, new_key
from profiles.workspace.key_cache import held_generation, held_record, keys_changed, record_hold
from profiles.workspace.permissions import (
    ADMINISTER,
    IMPORT_EXPORT,
    WRITE_MATERIAL,
    WRITE_RULES,
    user_can,
    user_capabilities,
)
from resolver.limits import TEXT_RULE_MESSAGE, violates_text_rule

logger = logging.getLogger(__name__)

USER_TOKEN_NAME = "user token"
# ``last_used_at`` is written at most this often per key: the resolve path is hot, and "last
# used" only needs to tell a key in use from a forgotten one.
LAST_USED_INTERVAL = datetime.timedelta(minutes=1)
ROLE_WRITES = frozenset({WRITE_RULES, WRITE_MATERIAL, IMPORT_EXPORT})


# --- a user's own token ----------------------------------------------------------------------


def user_token_get(*, user) -> ApiKey | None:
    """Return the user's live token, or None."""
    return ApiKey.objects.filter(owner=user, kind=ApiKey.Kind.USER, revoked_at=None).first()


def token_replace(*, user) -> tuple[ApiKey, str]:
    """Create a new token for the user, revoking the old one; return it and its key (the
    only time the key is seen)."""
    with transaction.atomic():
        # Posts of one user (a double click, two tabs) take turns on the user's row: each
        # replaces the token the one before made, and the last page shows the one that works.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        _user_tokens(user).update(revoked_at=timezone.now())
        keys_changed()
        return _key_create(owner=user, kind=ApiKey.Kind.USER, name=USER_TOKEN_NAME)


def _key_create(**fields) -> tuple[ApiKey, str]:
    """Store a new key with these fields: only its hash and prefix. Return the record and
    the key (the only time it is seen)."""
    key = new_key()
    record = ApiKey.objects.create(prefix=key_prefix(key), hash=key_hash(key), **fields)
    return record, key


def token_revoke(*, user) -> bool:
    """Revoke the user's token; return whether there was one."""
    revoked = bool(_user_tokens(user).update(revoked_at=timezone.now()))
    keys_changed()
    return revoked


def _user_tokens(user) -> QuerySet[ApiKey]:
    return ApiKey.objects.filter(owner=user, kind=ApiKey.Kind.USER, revoked_at=None)


# --- scoped keys -----------------------------------------------------------------------------


class ApiKeyInvalid(ValueError):
    """A field of a new key is not valid; ``field`` names it (``name``, ``scopes``…)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class NewApiKey:
    """A key just made: its record and the key itself, shown this once."""

    record: ApiKey
    key: str


def environment_keys() -> list[str]:
    """Return the environments a key may be limited to: those with settings or profiles."""
    used = Profile.objects.exclude(environment=None).values_list("environment", flat=True)
    return sorted({*used, *Environment.objects.values_list("key", flat=True)})


def _clean_name(name) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ApiKeyInvalid("name", "must be a non-empty string")
    name = name.strip()
    if len(name) > NAME_MAX_LENGTH:
        raise ApiKeyInvalid("name", f"must be at most {NAME_MAX_LENGTH} characters")
    if violates_text_rule(name):
        raise ApiKeyInvalid("name", TEXT_RULE_MESSAGE)
    return name


def _clean_list(value, field: str, *, allowed, what: str, required: bool) -> list[str]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ApiKeyInvalid(field, "must be a list of strings")
    if required and not value:
        raise ApiKeyInvalid(field, f"give at least one of {', '.join(allowed)}")
    seen = set()
    for index, entry in enumerate(value):
        if entry in seen:
            raise ApiKeyInvalid(f"{field}[{index}]", f'"{entry}" is given twice')
        seen.add(entry)
        if entry not in allowed:
            known = ", ".join(allowed) or "none exist"
            raise ApiKeyInvalid(f"{field}[{index}]", f'unknown {what} "{entry}" ({known})')
    return list(value)


_EXPIRY_BOUND = (
    f"must be at most {EXPIRY_LATEST.isoformat().replace('+00:00', 'Z')} "
    "(the latest moment the database reads back)"
)
_FIVE_DIGIT_YEAR = re.compile(r"\s*[+-]?\d{5,}-")


def _clean_expiry(value, now: datetime.datetime) -> datetime.datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            parsed = parse_datetime(value)
        except ValueError:
            parsed = None
        if parsed is None and _FIVE_DIGIT_YEAR.match(value):
            raise ApiKeyInvalid("expiresAt", _EXPIRY_BOUND)
        if parsed is None:
            raise ApiKeyInvalid("expiresAt", "must be a date and time (ISO 8601)")
        value = parsed
    if not isinstance(value, datetime.datetime):
        raise ApiKeyInvalid("expiresAt", "must be a date and time (ISO 8601)")
    if timezone.is_naive(value):
        value = timezone.make_aware(value, datetime.UTC)
    try:
        value = value.astimezone(datetime.UTC)
    except OverflowError:  # outside years 1 to 9999 in UTC ("9999-12-31T23:59:59-14:00")
        if value.year < 9999:
            raise ApiKeyInvalid("expiresAt", "must be in the future") from None
        value = None
    if value is None or value > EXPIRY_LATEST:
        raise ApiKeyInvalid("expiresAt", _EXPIRY_BOUND)
    if value <= now:
        raise ApiKeyInvalid("expiresAt", "must be in the future")
    return value


def api_key_create(
    *, owner, name, scopes, environments=None, expires_at=None, now=None
) -> NewApiKey:
    """Create a scoped key for ``owner``; return it with the key (the only time it is seen).

    Raises ``ApiKeyInvalid`` naming the field: a name that is empty or longer than 100
    characters, an unknown or repeated scope, ``write`` for an owner who may not write (a
    reader), an unknown or repeated environment, an expiry not in the future or later than
    ``EXPIRY_LATEST`` in UTC (9999-12-31T23:59:59Z: a later one cannot be read back).
    Who may create keys for whom is the door's check (``MANAGE_KEYS``, ``ADMINISTER``).
    """
    now = now or timezone.now()
    name = _clean_name(name)
    scopes = _clean_list(scopes, "scopes", allowed=KeyScope.values, what="scope", required=True)
    if KeyScope.WRITE in scopes and not user_capabilities(owner) & ROLE_WRITES:
        # Harmless (a key never exceeds its owner's role) but surely a mistake.
        raise ApiKeyInvalid(
            f"scopes[{scopes.index(KeyScope.WRITE)}]", "the owner's role (reader) writes nothing"
        )
    environments = _clean_list(
        [] if environments is None else environments,
        "environments",
        allowed=environment_keys(),
        what="environment",
        required=False,
    )
    expires_at = _clean_expiry(expires_at, now)
    record, key = _key_create(
        owner=owner,
        kind=ApiKey.Kind.SCOPED,
        name=name,
        scopes=scopes,
        environments=environments,
        expires_at=expires_at,
        created_at=now,
    )
    return NewApiKey(record=record, key=key)


def api_key_list(*, viewer) -> QuerySet[ApiKey]:
    """Return the live scoped keys the viewer may see: their own; staff, everyone's."""
    keys = ApiKey.objects.filter(kind=ApiKey.Kind.SCOPED, revoked_at=None).select_related("owner")
    if not user_can(viewer, ADMINISTER):
        keys = keys.filter(owner=viewer)
    return keys.order_by("-created_at", "-pk")


def api_key_get(*, viewer, key_id) -> ApiKey | None:
    """Return the live scoped key ``key_id`` if the viewer may see it, else None."""
    try:
        key_id = int(key_id)
    except (TypeError, ValueError):
        return None
    return api_key_list(viewer=viewer).filter(pk=key_id).first()


def api_key_revoke(*, key: ApiKey) -> None:
    """Revoke the key: requests that send it are refused from now on."""
    ApiKey.objects.filter(pk=key.pk, revoked_at=None).update(revoked_at=timezone.now())
    keys_changed()


def api_key_used(*, key: ApiKey, now=None) -> None:
    """Record that the key was used, at most once per ``LAST_USED_INTERVAL`` (no query in
    between: the row read by the lookup says when it was last written)."""
    now = now or timezone.now()
    if key.last_used_at is not None and now - key.last_used_at < LAST_USED_INTERVAL:
        return
    # Conditional, so processes that read the same old time write once between them.
    ApiKey.objects.filter(
        Q(last_used_at=None) | Q(last_used_at__lt=now - LAST_USED_INTERVAL), pk=key.pk
    ).update(last_used_at=now)
    key.last_used_at = now


# --- the lookup by key, on every API request ----------------------------------------------

# A hash that no key has: it only stands for the parameter while the statement is compiled.
_HASH_PLACEHOLDER = "-"


@functools.cache
def _key_statement(alias: str):
    """Return the SQL of the key-and-owner lookup, its parameters (the hash's a placeholder),
    its compiler (for the database's value converters) and how many of its columns are the
    key's."""
    queryset = ApiKey.objects.using(alias).select_related("owner").filter(hash=_HASH_PLACEHOLDER)
    compiler = queryset.query.get_compiler(using=alias)
    sql, params = compiler.as_sql()
    # The hash's place among the parameters (the SELECT may have its own: the readable expiry).
    assert params.count(_HASH_PLACEHOLDER) == 1, params
    converters = compiler.get_converters([column[0] for column in compiler.select])
    return sql, params, compiler, converters, len(ApiKey._meta.concrete_fields)


def token_by_key_get(key: str) -> ApiKey | None:
    """Return the record of this key (revoked and expired ones too), its owner loaded, or
    None (one query)."""
    alias = router.db_for_read(ApiKey)
    sql, params, compiler, converters, key_columns = _key_statement(alias)
    hashed = key_hash(key)
    with connections[alias].cursor() as cursor:
        cursor.execute(sql, [hashed if p == _HASH_PLACEHOLDER else p for p in params])
        row = cursor.fetchone()
    if row is None:
        return None
    if converters:  # SQLite's dates and JSON, for instance
        row = next(iter(compiler.apply_converters([row], converters)))
    record = ApiKey.from_db(alias, None, row[:key_columns])
    user_model = ApiKey._meta.get_field("owner").related_model
    record.owner = user_model.from_db(alias, None, row[key_columns:])
    return record


# --- which key signs a request in (every door) --------------------------------------------


class KeyRefused(Exception):
    """The key signs nothing in (401): unknown, revoked, expired, or its owner inactive."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message


# The refusals' words are DRF's (its translations too): the answers stay what they were.
UNKNOWN = _("Invalid token.")
REVOKED = _("This API key was revoked.")
EXPIRED = _("This API key has expired.")
INACTIVE = _("User inactive or deleted.")


def key_record(key: str) -> ApiKey | None:
    """Return the record of this key (revoked and expired ones too), its owner loaded, or None:
    from this process's memory when it holds the key (no query, ``key_cache``), else one
    query."""
    hashed = key_hash(key)
    record = held_record(hashed)
    if record is not None:
        return record
    generation = held_generation()
    record = token_by_key_get(key)
    if record is not None:
        record_hold(hashed, record, generation)
    return record


def key_authenticate(key: str, now=None) -> ApiKey:
    """Return the record of a key that signs a request in, after noting its use (at most
    once a minute, ``api_key_used``); raise ``KeyRefused`` naming why it does not.

    A database that cannot be reached does not refuse a held key: its use goes unnoted.
    """
    record = key_record(key)
    if record is None:
        raise KeyRefused(UNKNOWN)
    if record.revoked:
        raise KeyRefused(REVOKED)
    now = now or timezone.now()
    if record.expired(now):
        raise KeyRefused(EXPIRED)
    if not record.owner.is_active:
        raise KeyRefused(INACTIVE)
    try:
        api_key_used(key=record, now=now)
    except (OperationalError, InterfaceError) as exc:
        logger.warning("could not note the use of API key %s…: %s", record.prefix, exc)
    return record

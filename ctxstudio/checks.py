"""The project's system checks."""

from django.conf import settings
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from django.core.checks import Error, Tags, Warning, register
from django.utils.module_loading import import_string


@register()
def shared_cache_check(app_configs=None, **kwargs):
    """Warn, naming the variable to set, when production counts in a per-process cache.

    It replaces axes' ``axes.W001`` (silenced in the settings), which points at
    ``AXES_CACHE`` and ``CACHES`` rather than at the one variable an operator sets. Failed
    logins (axes' lockouts, the per-address rate) and the throttles are counted in the
    default cache; with local memory each process counts on its own.
    """
    if settings.DEBUG:  # make run: one development server counts for itself
        return []
    backend = import_string(settings.CACHES["default"]["BACKEND"])
    if issubclass(backend, RedisCache) or not issubclass(backend, LocMemCache):
        return []
    return [
        Warning(
            "CACHE_URL is not set: failed logins and request rates are counted in each "
            "process's own memory, so every gunicorn worker (and the task worker) counts apart.",
            hint="Set CACHE_URL to a Redis server every process shares, e.g. "
            "CACHE_URL=redis://127.0.0.1:6379/0 (docs/operations.md). On one machine, just "
            "trying production mode, this warning can be ignored.",
            id="ctxstudio.W001",
        )
    ]


@register()
def single_sign_on_check(app_configs=None, **kwargs):
    """Refuse a default role that is no role; warn when nobody could sign in at the studio."""
    found = []
    if settings.OIDC_DEFAULT_ROLE not in ("reader", "editor", "staff"):
        found.append(
            Error(
                f"OIDC_DEFAULT_ROLE is {settings.OIDC_DEFAULT_ROLE!r}.",
                hint="Set it to reader, editor or staff.",
                id="ctxstudio.E001",
            )
        )
    configured = settings.OIDC_RP_CLIENT_ID and (
        settings.OIDC_ISSUER or settings.OIDC_OP_AUTHORIZATION_ENDPOINT
    )
    if not settings.PASSWORD_SIGN_IN and not configured:
        found.append(
            Warning(
                "PASSWORD_SIGN_IN is off and single sign-on is not configured: only the "
                "admin's login takes anyone in.",
                hint="Set OIDC_ISSUER and OIDC_CLIENT_ID (README, Single sign-on), or "
                "PASSWORD_SIGN_IN=true.",
                id="ctxstudio.W002",
            )
        )
    return found


@register(Tags.database)
def pooler_check(app_configs=None, **kwargs):
    """Refuse, behind PgBouncer's transaction pooling (``DB_POOLER=pgbouncer``), a PostgreSQL
    database that keeps state beyond a transaction: server-side cursors or prepared
    statements (the settings turn both off; this catches a settings module that turns them
    on again)."""
    if getattr(settings, "DB_POOLER", "") != "pgbouncer":
        return []
    found = []
    for alias, database in settings.DATABASES.items():
        if database.get("ENGINE") != "django.db.backends.postgresql":
            continue
        options = database.get("OPTIONS", {})
        if not database.get("DISABLE_SERVER_SIDE_CURSORS"):
            found.append(
                Error(
                    f"DATABASES[{alias!r}] uses server-side cursors behind PgBouncer.",
                    hint="Set DISABLE_SERVER_SIDE_CURSORS: a cursor does not outlive the "
                    "transaction's server connection in transaction pooling.",
                    id="ctxstudio.E010",
                )
            )
        if options.get("prepare_threshold") is not None:
            found.append(
                Error(
                    f"DATABASES[{alias!r}] prepares statements behind PgBouncer.",
                    hint="Leave DB_PREPARE_THRESHOLD empty with DB_POOLER=pgbouncer: "
                    "PgBouncer 1.18's transaction pooling does not keep prepared statements.",
                    id="ctxstudio.E011",
                )
            )
    return found

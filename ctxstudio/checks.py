"""The project's system checks."""

from django.conf import settings
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from django.core.checks import Warning, register
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

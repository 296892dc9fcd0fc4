"""Per-user throttles of resolve, preview and expand; rates in ``DEFAULT_THROTTLE_RATES``.

Counting uses atomic cache increments (in Redis one pipelined round trip of ``INCR``,
``EXPIRE`` and the previous period's ``GET``; with another cache ``cache.add`` then
``cache.incr``, atomic in the local-memory cache too), so concurrent requests of one user, in
any thread or worker sharing the cache, are never served beyond the rate. DRF's own
throttles read a request history, append to it and write it back: two requests at once both
read the same history and both pass (8 threads were served 660 expands against a limit of
600 per minute).

The rate is a sliding window estimated from two fixed-window counters: the count of the
current period plus the previous period's count weighted by the share of it still inside the
sliding window. Only served requests are counted.
"""

import contextlib
import math
import time

from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache
from rest_framework.settings import api_settings
from rest_framework.throttling import ScopedRateThrottle


class ResolutionRateThrottle(ScopedRateThrottle):
    """A scoped, per-user throttle whose counters cannot race.

    The rate is read when used, so a settings change applies at once (DRF binds
    ``THROTTLE_RATES`` when its module is imported). A scope without a rate, or a rate of
    ``None``, is not throttled.
    """

    timer = time.time

    def get_rate(self):
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)

    def allow_request(self, request, view):
        self.scope = getattr(view, self.scope_attr, None)
        if not self.scope:
            return True
        self.rate = self.get_rate()
        if self.rate is None:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)
        self.key = self.get_cache_key(request, view)

        now = self.timer()
        window = int(now // self.duration)
        elapsed = now - window * self.duration
        current_key = f"{self.key}:{window}"
        previous_key = f"{self.key}:{window - 1}"
        redis = _redis_client(caches["default"])
        if redis is not None:
            count, previous, undo = self._count_in_redis(redis, current_key, previous_key)
        else:
            count, previous, undo = self._count_in_cache(current_key, previous_key)
        previous_weight = 1 - elapsed / self.duration
        if previous * previous_weight + count <= self.num_requests:
            return True
        # Refused requests do not count: a client that keeps knocking is served again as soon
        # as its served requests fall out of the window.
        undo()
        self.wait_seconds = self._seconds_until_allowed(count - 1, previous, elapsed)
        return False

    def _count_in_cache(self, current_key: str, previous_key: str):
        """Count the request with the cache API (three or four calls)."""
        # A counter outlives its window by a whole period: it is read as the previous one, and
        # it can never expire between ``add`` and ``incr`` while its window is current.
        cache.add(current_key, 0, timeout=2 * self.duration)
        try:
            count = cache.incr(current_key)
        except ValueError:  # evicted, or the cache cleared, since ``add``
            cache.set(current_key, 1, timeout=2 * self.duration)
            count = 1
        previous = cache.get(previous_key, 0)

        def undo():
            with contextlib.suppress(ValueError):  # evicted meanwhile: nothing left to undo
                cache.decr(current_key)

        return count, previous, undo

    def _count_in_redis(self, redis, current_key: str, previous_key: str):
        """Count the request in one round trip: INCR (atomic, creates the counter), EXPIRE and
        GET of the previous period, pipelined. The keys and values are the cache's own
        (``cache.get`` reads the same counters)."""
        current = cache.make_and_validate_key(current_key)
        pipeline = redis.pipeline(transaction=False)
        pipeline.incr(current)
        # A counter outlives its last increment by two periods: it is read as the previous one.
        pipeline.expire(current, 2 * self.duration)
        pipeline.get(cache.make_and_validate_key(previous_key))
        count, _, previous = pipeline.execute()
        return count, int(previous or 0), lambda: redis.decr(current)

    def _seconds_until_allowed(self, served: int, previous: int, elapsed: float) -> float:
        """Return how long until one more request fits, given the requests ``served`` in the
        current period and the ``previous`` period's count."""
        room = self.num_requests - 1 - served
        until_window_end = self.duration - elapsed
        if self.num_requests == 0:
            return self.duration
        if room < 0:
            # This period is full: its end, then until its own weight has fallen enough.
            return until_window_end + (1 - (self.num_requests - 1) / served) * self.duration
        # previous * (1 - (elapsed + wait) / duration) <= room
        wait = (1 - room / previous) * self.duration - elapsed
        return min(max(wait, 0.0), until_window_end)

    def wait(self):
        # Whole seconds for Retry-After (rounded first: 1.0000000001 s is 1 s).
        return max(1, math.ceil(round(self.wait_seconds, 3)))


def _redis_client(backend):
    """Return a Redis client of the cache when it is Django's Redis cache, else None.

    Django's Redis cache builds a client object per call (with its table of response
    callbacks, a fifth of a millisecond each); one client per cache backend is kept instead.
    It shares the backend's connection pool, which is thread-safe and reconnects after a fork.
    """
    if not isinstance(backend, RedisCache):
        return None
    client_holder = backend._cache
    redis = getattr(client_holder, "_throttle_client", None)
    if redis is None:
        redis = client_holder.get_client(write=True)
        client_holder._throttle_client = redis
    return redis

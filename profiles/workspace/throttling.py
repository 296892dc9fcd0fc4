"""Per-user rates of the costly doors (resolve, preview, expand, impact), counted once for
every door: the API's throttle (``profiles.api.throttling``) and the studio's views count on
the same counters, so a user cannot double a rate by using both. Rates are the settings'
``REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]``, read when used (a settings change applies at
once); a scope without a rate, or a rate of ``None``, is not throttled.

Counting uses atomic cache increments (in Redis one pipelined round trip of ``INCR``,
``EXPIRE`` and the previous period's ``GET``; with another cache ``cache.add`` then
``cache.incr``, atomic in the local-memory cache too), so concurrent requests of one user, in
any thread or worker sharing the cache, are never served beyond the rate. A history read,
appended to and written back (DRF's own throttles) lets two requests at once both pass
(8 threads were served 660 expands against a limit of 600 per minute).

The rate is a sliding window estimated from two fixed-window counters: the count of the
current period plus the previous period's count weighted by the share of it still inside the
sliding window. Only served requests are counted.
"""

import contextlib
import contextvars
import math
import time

from django.conf import settings
from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache

# Cache keys whose values the counting round trip in Redis reads along (the replica's record
# of the last write, ``profiles.workspace.replica``: empty without a replica), kept for the
# request in ``fetched_along`` (key -> value; None: not read).
along_keys: list[str] = []
fetched_along: contextvars.ContextVar = contextvars.ContextVar("fetched_along", default=None)

# Seconds of each period a rate may name ("600/minute", "30/m", "5/hour").
_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def scope_rate(scope: str) -> str | None:
    """Return the configured rate of ``scope`` ("600/minute"), None when not throttled."""
    rates = getattr(settings, "REST_FRAMEWORK", {}).get("DEFAULT_THROTTLE_RATES") or {}
    return rates.get(scope)


def parse_rate(rate: str) -> tuple[int, int]:
    """Return ``(requests, seconds)`` of a rate such as ``"30/minute"``."""
    number, period = rate.split("/")
    return int(number), _PERIODS[period[0]]


def throttle_key(scope: str, ident) -> str:
    """Return the counter's key of one caller (a user's id, else a client address) in one
    scope. The API's throttle and the studio use the same key: one count per user."""
    return f"throttle_{scope}_{ident}"


class RateCounter:
    """One caller's sliding-window count in one scope; ``admit()`` counts a request.

    ``timer`` is the clock (seconds); tests set it.
    """

    def __init__(self, key: str, rate: str, *, timer=time.time):
        self.key = key
        self.num_requests, self.duration = parse_rate(rate)
        self.timer = timer
        self.wait_seconds = 0.0

    def admit(self, cost: int = 1) -> bool:
        """Count ``cost`` requests and return True when they fit the rate; refused requests
        are not counted (a client that keeps knocking is served again as soon as its served
        requests fall out of the window) and ``wait()`` tells how long to wait."""
        if self.num_requests:
            cost = min(cost, self.num_requests)  # a costly request still fits an empty window
        now = self.timer()
        window = int(now // self.duration)
        elapsed = now - window * self.duration
        current_key = f"{self.key}:{window}"
        previous_key = f"{self.key}:{window - 1}"
        redis = redis_client(caches["default"])
        if redis is not None:
            count, previous, undo = self._count_in_redis(redis, current_key, previous_key, cost)
        else:
            count, previous, undo = self._count_in_cache(current_key, previous_key, cost)
        previous_weight = 1 - elapsed / self.duration
        if previous * previous_weight + count <= self.num_requests:
            return True
        undo()
        self.wait_seconds = self._seconds_until_allowed(count - cost, previous, elapsed, cost)
        return False

    def _count_in_cache(self, current_key: str, previous_key: str, cost: int):
        """Count the request with the cache API (three or four calls)."""
        # A counter outlives its window by a whole period: it is read as the previous one, and
        # it can never expire between ``add`` and ``incr`` while its window is current.
        cache.add(current_key, 0, timeout=2 * self.duration)
        try:
            count = cache.incr(current_key, cost)
        except ValueError:  # evicted, or the cache cleared, since ``add``
            cache.set(current_key, cost, timeout=2 * self.duration)
            count = cost
        previous = cache.get(previous_key, 0)

        def undo():
            with contextlib.suppress(ValueError):  # evicted meanwhile: nothing left to undo
                cache.decr(current_key, cost)

        return count, previous, undo

    def _count_in_redis(self, redis, current_key: str, previous_key: str, cost: int):
        """Count the request in one round trip: INCR (atomic, creates the counter), EXPIRE and
        GET of the previous period, pipelined. The keys and values are the cache's own
        (``cache.get`` reads the same counters)."""
        current = cache.make_and_validate_key(current_key)
        pipeline = redis.pipeline(transaction=False)
        pipeline.incr(current, cost)
        # A counter outlives its last increment by two periods: it is read as the previous one.
        pipeline.expire(current, 2 * self.duration)
        pipeline.get(cache.make_and_validate_key(previous_key))
        for key in along_keys:
            pipeline.get(cache.make_and_validate_key(key))
        count, _, previous, *along = pipeline.execute()
        if along_keys:
            fetched_along.set(dict(zip(along_keys, along, strict=True)))
        return count, int(previous or 0), lambda: redis.decr(current, cost)

    def _seconds_until_allowed(
        self, served: int, previous: int, elapsed: float, cost: int = 1
    ) -> float:
        """Return how long until ``cost`` more requests fit, given the requests ``served`` in
        the current period and the ``previous`` period's count."""
        room = self.num_requests - cost - served
        until_window_end = self.duration - elapsed
        if self.num_requests == 0:
            return self.duration
        if room < 0:
            # This period is full: its end, then until its own weight has fallen enough.
            return until_window_end + (1 - (self.num_requests - cost) / served) * self.duration
        # previous * (1 - (elapsed + wait) / duration) <= room
        wait = (1 - room / previous) * self.duration - elapsed
        return min(max(wait, 0.0), until_window_end)

    def wait(self) -> int:
        """Return whole seconds for Retry-After (rounded first: 1.0000000001 s is 1 s)."""
        return max(1, math.ceil(round(self.wait_seconds, 3)))


def user_throttle_wait(*, scope: str, user, cost: int = 1, timer=time.time) -> int | None:
    """Count ``cost`` requests of a signed-in ``user`` in ``scope``; return None when they are
    served, else the seconds to wait (Retry-After). The studio's doors ask this; the API's
    throttle counts on the same counters."""
    rate = scope_rate(scope)
    if rate is None or not getattr(user, "is_authenticated", False):
        return None
    counter = RateCounter(throttle_key(scope, user.pk), rate, timer=timer)
    return None if counter.admit(cost) else counter.wait()


def redis_client(backend):
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

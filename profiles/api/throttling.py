"""The API's throttle of the costly doors (resolve, preview, expand, impact): DRF's adapter of
the hall's counters (``profiles.workspace.throttling``), which the studio's doors count on
too. Rates in ``DEFAULT_THROTTLE_RATES``."""

import time

from rest_framework.throttling import ScopedRateThrottle

from profiles.workspace.throttling import RateCounter, scope_rate


class ResolutionRateThrottle(ScopedRateThrottle):
    """A scoped, per-user throttle whose counters cannot race (see the hall's module).

    The rate is read when used, so a settings change applies at once (DRF binds
    ``THROTTLE_RATES`` when its module is imported). A scope without a rate, or a rate of
    ``None``, is not throttled.
    """

    timer = time.time

    def get_rate(self):
        return scope_rate(self.scope)

    def allow_request(self, request, view):
        self.scope = getattr(view, self.scope_attr, None)
        if not self.scope:
            return True
        self.rate = self.get_rate()
        if self.rate is None:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)
        # user id (else the client address): the key the studio counts on as well.
        self.counter = RateCounter(self.get_cache_key(request, view), self.rate, timer=self.timer)
        return self.counter.admit()

    def wait(self):
        return self.counter.wait()

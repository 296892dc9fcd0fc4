"""Per-user throttles of resolve, preview and expand; rates in ``DEFAULT_THROTTLE_RATES``."""

from rest_framework.settings import api_settings
from rest_framework.throttling import ScopedRateThrottle


class ResolutionRateThrottle(ScopedRateThrottle):
    """A scoped throttle that reads its rate when used, so a settings change applies at once.

    (DRF binds ``THROTTLE_RATES`` when its module is imported.) A scope without a rate, or a
    rate of ``None``, is not throttled.
    """

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
        return super(ScopedRateThrottle, self).allow_request(request, view)

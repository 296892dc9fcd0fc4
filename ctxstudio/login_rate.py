"""Failed logins per client address, across usernames: refused before any password is hashed.

Axes locks a *username* at an address (``ctxstudio.login_lockout``); random usernames never
reach its limit, and each of them costs a password hash (Django hashes even for an unknown
username, so that the answer takes as long). This is the rule that bounds them: more than
``LOGIN_ADDRESS_MAX_FAILURES`` failed logins from one address within a window of
``LOGIN_ADDRESS_FAILURE_WINDOW`` seconds, and every further login from that address is refused
with 429 and ``Retry-After`` (the rest of the window) until the window ends.

One rule for every login door (the studio's and the admin's login forms, the API's
``auth/token``): they all go through ``django.contrib.auth.authenticate``, whose first backend
is :class:`LoginBackend`. It asks :func:`address_retry_after` (one cache read) before axes and
before the password backend; the failures are counted by a ``user_login_failed`` receiver in
the shared cache (Redis with ``CACHE_URL``), one atomic increment each. Axes' middleware turns
the refusal into the answer (``ctxstudio.login_lockout.lockout_response``).

The windows are fixed (aligned on the clock): a counter is one cache key that expires with
its window, so nothing has to be read back and rewritten.
"""

import math
import time

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.contrib.auth.signals import user_login_failed
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.dispatch import receiver

from ctxstudio.client_address import client_address

#: set on Django's request when this rule refused the login: the seconds to wait
RETRY_AFTER_ATTRIBUTE = "login_address_retry_after"


def _django_request(request):
    """Return Django's request behind DRF's (the one middleware sees)."""
    return getattr(request, "_request", request)


def _window(now: float) -> tuple[int, float]:
    """Return the current window's number and the seconds left in it."""
    length = settings.LOGIN_ADDRESS_FAILURE_WINDOW
    number = int(now // length)
    return number, (number + 1) * length - now


def _counter_key(address: str, window: int) -> str:
    return f"login-address-failures:{address}:{window}"


def address_retry_after(request) -> int | None:
    """Return the seconds until logins from the request's address are taken again, or None
    when its failed logins in this window are within ``LOGIN_ADDRESS_MAX_FAILURES``."""
    address = client_address(_django_request(request))
    if not address:
        return None
    window, left = _window(time.time())
    failures = cache.get(_counter_key(address, window), 0)
    if failures < settings.LOGIN_ADDRESS_MAX_FAILURES:
        return None
    return max(math.ceil(left), 1)


def address_failure_count(request) -> None:
    """Count one failed login of the request's address in the current window."""
    address = client_address(_django_request(request))
    if not address:
        return
    window, _ = _window(time.time())
    key = _counter_key(address, window)
    # The key lives a little past its window: a window's last failures still find it.
    timeout = settings.LOGIN_ADDRESS_FAILURE_WINDOW + 60
    if cache.add(key, 1, timeout):
        return
    try:
        cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout)


class LoginBackend(AxesStandaloneBackend):
    """Axes' backend with the per-address rule in front: a refused login reaches neither the
    username's lockout counter check nor any password hasher."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is not None:
            retry_after = address_retry_after(request)
            if retry_after is not None:
                # Axes' middleware answers for a request marked locked out (with our wait).
                django_request = _django_request(request)
                setattr(django_request, RETRY_AFTER_ATTRIBUTE, retry_after)
                django_request.axes_locked_out = True
                raise PermissionDenied("too many failed logins from this address")
        return super().authenticate(request, username=username, password=password, **kwargs)


@receiver(user_login_failed)
def count_failed_login(sender, credentials, request=None, **kwargs):
    """Count a failed login at its address (not one this rule refused: it cost nothing)."""
    if request is None or getattr(_django_request(request), RETRY_AFTER_ATTRIBUTE, None):
        return
    address_failure_count(request)

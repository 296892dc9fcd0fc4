"""Login lockouts by django-axes: the 429 answer, API logins and the lockout record.

Axes counts failed logins in the cache (Redis with ``CACHE_URL``) per username *and* client
address (``AXES_LOCKOUT_PARAMETERS``); the address comes from
:func:`ctxstudio.client_address.client_address`. This module adds what the project needs
around it:

* one lockout answer for every login door (also for an address over its rate of failed
  logins across usernames, ``ctxstudio.login_rate``): the API's error shape under ``/api/``, a short
  page elsewhere, both 429 with ``Retry-After``;
* the token endpoint: DRF authenticates with its own request object, on which axes sets
  its lockout mark; the mark is copied to Django's request so that ``AxesMiddleware``
  answers 429 there too;
* a record of each lockout (axes' ``AccessFailureLog``) listed in the admin, with an action
  that lifts it. The cache keeps only counters, which the admin cannot list.
"""

import math

from axes.helpers import get_cool_off, get_failure_limit
from axes.models import AccessFailureLog
from axes.signals import user_locked_out
from django.dispatch import receiver
from django.http import HttpResponse, JsonResponse

from ctxstudio.login_rate import RETRY_AFTER_ATTRIBUTE
from profiles.api.exceptions import error_body

API_PREFIX = "/api/"


def lockout_seconds(request=None) -> int:
    return int(get_cool_off(request).total_seconds())


def lockout_response(request, original_response=None, credentials=None) -> HttpResponse:
    """Return the answer to a login attempt while its username is locked at this address, or
    while the address is over its rate of failed logins (``ctxstudio.login_rate``)."""
    address_wait = getattr(request, RETRY_AFTER_ATTRIBUTE, None)
    seconds = address_wait if address_wait is not None else lockout_seconds(request)
    minutes = max(math.ceil(seconds / 60), 1)
    unit = "minute" if minutes == 1 else "minutes"
    source = " from this address" if address_wait is not None else ""
    message = f"too many failed logins{source}; try again in {minutes} {unit}"
    if request.path.startswith(API_PREFIX):
        response = JsonResponse(error_body("LOGIN_LOCKED_OUT", message), status=429)
    else:
        response = HttpResponse(
            "<!doctype html><title>Too many attempts</title>"
            f"<h1>Too many failed logins</h1><p>{message.capitalize()}.</p>",
            status=429,
        )
    response["Retry-After"] = str(seconds)
    return response


@receiver(user_locked_out)
def mark_django_request(sender, request, **kwargs):
    """Carry the lockout from DRF's request to Django's, where ``AxesMiddleware`` looks."""
    django_request = getattr(request, "_request", None)
    if django_request is not None:
        django_request.axes_locked_out = True
        django_request.axes_credentials = getattr(request, "axes_credentials", None)


@receiver(user_locked_out)
def record_lockout(sender, request, username, ip_address, **kwargs):
    """Record the failure that locked the username out (once: not the refusals after it)."""
    credentials = getattr(request, "axes_credentials", None)
    if getattr(request, "axes_failures_since_start", None) != get_failure_limit(
        request, credentials
    ):
        return
    AccessFailureLog.objects.create(
        username=(username or "")[:255],
        ip_address=ip_address,
        user_agent=request.axes_user_agent,
        http_accept=request.axes_http_accept,
        path_info=request.axes_path_info,
        locked_out=True,
    )

"""Login rate limiting for the studio and admin login forms.

Failed logins are counted per client address and per username in the cache (shared by every
worker when CACHE_URL points at Redis). Past ``LOGIN_MAX_FAILURES`` within
``LOGIN_FAILURE_WINDOW`` seconds, further login attempts answer 429 until the window passes.
A successful login clears the username's count.
"""

import hashlib

from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.cache import cache
from django.dispatch import receiver
from django.http import HttpResponse

LOGIN_PATHS = ("/accounts/login/", "/admin/login/", "/api/v1/auth/token")


def _user_key(username: str) -> str:
    # Hashed: a username may hold any character, a cache key may not.
    digest = hashlib.sha256(username.strip().lower().encode()).hexdigest()
    return f"login-failures:user:{digest}"


def _keys(request, username: str | None) -> list[str]:
    keys = [f"login-failures:addr:{request.META.get('REMOTE_ADDR', '')}"]
    if username:
        keys.append(_user_key(username))
    return keys


def _failures(keys: list[str]) -> int:
    counts = cache.get_many(keys)
    return max(counts.values(), default=0)


@receiver(user_login_failed)
def count_failure(sender, credentials, request=None, **kwargs):
    if request is None:
        return
    for key in _keys(request, credentials.get("username")):
        cache.add(key, 0, settings.LOGIN_FAILURE_WINDOW)
        try:
            cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, settings.LOGIN_FAILURE_WINDOW)


@receiver(user_logged_in)
def clear_failures(sender, request, user, **kwargs):
    if request is not None:
        cache.delete(_user_key(user.get_username()))


class LoginRateLimitMiddleware:
    """Refuse login attempts (429) from an address or for a username with too many failures."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method == "POST" and request.path in LOGIN_PATHS:
            keys = _keys(request, request.POST.get("username"))
            if _failures(keys) >= settings.LOGIN_MAX_FAILURES:
                minutes = max(settings.LOGIN_FAILURE_WINDOW // 60, 1)
                response = HttpResponse(
                    "<!doctype html><title>Too many attempts</title>"
                    "<h1>Too many failed logins</h1>"
                    f"<p>Wait {minutes} minutes before trying again.</p>",
                    status=429,
                )
                response["Retry-After"] = str(settings.LOGIN_FAILURE_WINDOW)
                return response
        return self.get_response(request)

"""The lean door (issue 35): applications' resolves and expands answered without the
middleware they do not need.

``LeanDoorMiddleware`` sits right after ``RequestIdMiddleware``. A request the lean door takes
(``profiles.api.lean.takes``: a POST to resolve or expand signed with a key, JSON in and out)
goes through the rest of ``MIDDLEWARE`` **but** the middleware in ``SKIPPED`` (sessions,
CSRF, the session's user, messages, htmx, history, login lockouts, static files: nothing a
key's request reads or answers) to ``profiles.api.lean.answer``; every other request goes on
through the whole stack unchanged. So the security headers (``SecurityMiddleware``, the CSP,
``X-Frame-Options``), the body limit and the API's error shapes are the very middleware's,
and a middleware added to ``MIDDLEWARE`` later applies to the lean door too unless it is
added to ``SKIPPED``.

A database that cannot be reached while the lean door answers (and that no degraded answer
covers) gets the project's 503 (``DatabaseUnavailableMiddleware``), as on the full stack.
"""

from django.conf import settings
from django.core.handlers.exception import convert_exception_to_response
from django.utils.module_loading import import_string

from ctxstudio.middleware import DatabaseUnavailableMiddleware
from profiles.api import lean

# Middleware a key's resolve or expand does not need (their work is for sessions and pages).
SKIPPED = frozenset(
    {
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.middleware.csrf.CsrfViewMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        "django.contrib.messages.middleware.MessageMiddleware",
        "django_htmx.middleware.HtmxMiddleware",
        "simple_history.middleware.HistoryRequestMiddleware",
        "axes.middleware.AxesMiddleware",
        # It answers STATIC_URL only (and would index the static files a second time).
        "whitenoise.middleware.WhiteNoiseMiddleware",
    }
)
NAME = "ctxstudio.lean_door.LeanDoorMiddleware"


def lean_view(request):
    """The lean door's answer; a database outage it does not cover answers 503 as the full
    stack's ``DatabaseUnavailableMiddleware`` does."""
    try:
        return lean.answer(request)
    except Exception as exc:
        response = DatabaseUnavailableMiddleware(None).process_exception(request, exc)
        if response is None:
            raise
        return response


def lean_chain():
    """Return the handler of lean requests: ``lean_view`` inside the middleware listed after
    this one in ``MIDDLEWARE``, but the skipped ones, built as Django builds its own chain."""
    names = list(settings.MIDDLEWARE)
    kept = [name for name in names[names.index(NAME) + 1 :] if name not in SKIPPED]
    handler = convert_exception_to_response(lean_view)
    for name in reversed(kept):
        handler = convert_exception_to_response(import_string(name)(handler))
    return handler


class LeanDoorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response
        self.lean = lean_chain()

    def __call__(self, request):
        if lean.takes(request):
            return self.lean(request)
        return self.get_response(request)

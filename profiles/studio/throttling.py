"""The studio's resolution doors, throttled per user on the API's counters.

``throttled(scope)`` counts a request of the signed-in user in the hall's counters
(``profiles.workspace.throttling``), the ones the API's throttle counts on, so resolving in
the studio and through the API share one rate. Beyond it the view answers 429 with
``Retry-After``: to htmx, a fragment in the place the view's fragment would go; otherwise a
page.
"""

from functools import wraps

from django.shortcuts import render

from profiles.workspace.throttling import user_throttle_wait

# What the user was asking for, in words, per scope.
_WHAT = {
    "preview": "previews",
    "resolve": "resolutions",
    "impact": "impact checks",
    "expand": "expansions",
    "webhook-test": "test deliveries",
    "bulk": "bulk uploads",
    "invite": "invitations",
}


def throttled(scope: str, *, cost: int = 1, unless=None):
    """Decorate a view to count ``cost`` requests in ``scope`` before it runs (a compare
    resolves two profiles: cost 2); ``unless(request)`` true lets a request that resolves
    nothing through uncounted. Put it under the permission and method checks, so that only
    requests the view would serve are counted."""

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if unless is not None and unless(request):
                return view(request, *args, **kwargs)
            refusal = throttle_refusal(request, scope=scope, cost=cost)
            return view(request, *args, **kwargs) if refusal is None else refusal

        return wrapper

    return decorator


def throttle_refusal(request, *, scope: str, cost: int = 1):
    """Count ``cost`` requests of the user in ``scope``; return None when they are within the
    rate, else the 429 answer (for a view whose cost is known only once it runs: the
    playground resolves as many profiles as its page shows)."""
    wait = user_throttle_wait(scope=scope, user=request.user, cost=cost)
    if wait is None:
        return None
    context = {"wait": wait, "what": _WHAT.get(scope, "this")}
    template = "profiles/throttled.html"
    if getattr(request, "htmx", False):
        template += "#message"
    response = render(request, template, context, status=429)
    response["Retry-After"] = str(wait)
    return response

"""The signed-in user's API token: create it (shown once), revoke it; how to use it."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET, require_POST

from profiles.workspace import tokens as api_tokens
from profiles.workspace.permissions import RESOLVE, capability_required


def _page(request, *, new_key: str | None = None):
    token = api_tokens.user_token_get(user=request.user)
    context = {
        "token": token,
        "new_key": new_key,
        "hint": token.key[-4:] if token is not None else "",
    }
    response = render(request, "profiles/tokens.html", context)
    # A page that shows a secret is never kept by the browser or a proxy.
    add_never_cache_headers(response)
    return response


@capability_required(RESOLVE)
@require_GET
def token_list(request):
    return _page(request)


@capability_required(RESOLVE)
@require_POST
def token_create(request):
    """Create a new token (replacing the old one) and show it this once."""
    token = api_tokens.token_replace(user=request.user)
    return _page(request, new_key=token.key)


@capability_required(RESOLVE)
@require_POST
def token_revoke(request):
    if api_tokens.token_revoke(user=request.user):
        messages.success(request, "Token revoked: requests that send it are refused from now on.")
    return redirect("token-list")

"""The signed-in user's API token: create it (shown once), revoke it; how to use it."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.db import transaction
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET, require_POST
from rest_framework.authtoken.models import Token

from profiles.workspace.permissions import RESOLVE, capability_required


def _page(request, *, new_key: str | None = None):
    token = Token.objects.filter(user=request.user).first()
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
    with transaction.atomic():
        # Posts of one user (a double click, two tabs) take turns on the user's row: each
        # replaces the token the one before made, and the last page shows the one that works.
        get_user_model().objects.select_for_update().filter(pk=request.user.pk).first()
        Token.objects.filter(user=request.user).delete()
        token = Token.objects.create(user=request.user)
    return _page(request, new_key=token.key)


@capability_required(RESOLVE)
@require_POST
def token_revoke(request):
    deleted, _ = Token.objects.filter(user=request.user).delete()
    if deleted:
        messages.success(request, "Token revoked: requests that send it are refused from now on.")
    return redirect("token-list")

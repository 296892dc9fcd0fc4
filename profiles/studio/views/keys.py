"""The signed-in user's API keys: their own token (create it, shown once; revoke it), and
their scoped keys (create one, shown once; revoke one). Staff see and revoke everyone's keys.

The rules of a key (names, scopes, environments, expiry) are
``profiles.workspace.keys.api_key_create``'s, as in the API and ``create_api_key``.
"""

from django import forms
from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_GET, require_POST

from profiles.models import KeyScope
from profiles.models.keys import NAME_MAX_LENGTH
from profiles.studio.lookups import or_404
from profiles.workspace import keys as api_keys
from profiles.workspace.permissions import (
    ADMINISTER,
    MANAGE_KEYS,
    RESOLVE,
    capability_required,
    user_can,
)

SCOPE_HELP = {
    KeyScope.RESOLVE: "resolve, expand and preview only",
    KeyScope.READ: "also every read your role allows",
    KeyScope.WRITE: "also every write your role allows",
}
# The service's field names (``scopes[1]``…) on the form's fields.
FORM_FIELDS = {"name": "name", "scopes": "scopes", "environments": "environments"}


class ApiKeyForm(forms.Form):
    """A new scoped key; the service validates it (the messages are the API's)."""

    name = forms.CharField(
        max_length=NAME_MAX_LENGTH,
        help_text="What the key is for, e.g. “support bot (production)”.",
    )
    scopes = forms.MultipleChoiceField(
        choices=[(scope.value, f"{scope.value}: {SCOPE_HELP[scope]}") for scope in KeyScope],
        widget=forms.CheckboxSelectMultiple,
        help_text="Within your role: a key never does more than you may.",
    )
    environments = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Resolve only profiles of these environments. None ticked: every profile.",
    )
    expires = forms.DateField(
        required=False,
        label="Expires on",
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="The key stops working at the end of this day (UTC). Empty: never.",
    )

    def __init__(self, *args, environments=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["environments"].choices = [(key, key) for key in environments]


def _page(request, *, new_token: str | None = None, new_key=None, form=None, status=200):
    token = api_keys.user_token_get(user=request.user)
    manages_keys = user_can(request.user, MANAGE_KEYS)
    context = {
        "token": token,
        "new_token": new_token,
        "manages_keys": manages_keys,
        "sees_owners": user_can(request.user, ADMINISTER),
        "new_key": new_key,
    }
    if manages_keys:
        context["keys"] = list(api_keys.api_key_list(viewer=request.user))
        context["form"] = form or ApiKeyForm(environments=api_keys.environment_keys())
    response = render(request, "profiles/tokens.html", context, status=status)
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
    _, key = api_keys.token_replace(user=request.user)
    return _page(request, new_token=key)


@capability_required(RESOLVE)
@require_POST
def token_revoke(request):
    if api_keys.token_revoke(user=request.user):
        messages.success(request, "Token revoked: requests that send it are refused from now on.")
    return redirect("token-list")


@capability_required(RESOLVE, unsafe=MANAGE_KEYS)
@require_POST
def key_create(request):
    """Create a scoped key of the signed-in user and show it this once."""
    form = ApiKeyForm(request.POST, environments=api_keys.environment_keys())
    if not form.is_valid():
        return _page(request, form=form, status=400)
    expires = form.cleaned_data["expires"]
    try:
        made = api_keys.api_key_create(
            owner=request.user,
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"],
            environments=form.cleaned_data["environments"],
            expires_at=None if expires is None else f"{expires.isoformat()}T23:59:59Z",
        )
    except api_keys.ApiKeyInvalid as exc:
        field = exc.field.partition("[")[0]
        form.add_error(FORM_FIELDS.get(field, "expires"), exc.message)
        return _page(request, form=form, status=400)
    return _page(request, new_key=made)


@capability_required(RESOLVE, unsafe=MANAGE_KEYS)
@require_POST
def key_revoke(request, key_id: int):
    key = or_404("no such API key", api_keys.api_key_get, viewer=request.user, key_id=key_id)
    api_keys.api_key_revoke(key=key)
    messages.success(request, f"Key “{key.name}” revoked: requests that send it get 401 now.")
    return redirect("token-list")

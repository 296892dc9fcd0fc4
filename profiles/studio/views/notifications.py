"""Webhooks in the studio, for staff: the list, a form to create or edit one (its secret shown
once, when it is made or replaced), its delivery log with "Send test", and deletion after a
confirmation. The rules are ``profiles.notifications.webhooks``' (the API's messages)."""

import secrets

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_http_methods, require_POST

from profiles.models import WEBHOOK_EVENTS
from profiles.notifications import webhooks as service
from profiles.notifications.addresses import URL_MAX_LENGTH
from profiles.studio.lookups import or_404
from profiles.studio.throttling import throttled
from profiles.workspace.permissions import MANAGE_WEBHOOKS, capability_required

DELIVERIES_PER_PAGE = 20


class WebhookForm(forms.Form):
    """A webhook's fields; the service validates them (the messages are the API's)."""

    url = forms.CharField(
        label="URL",
        max_length=URL_MAX_LENGTH,
        help_text="The http(s) address each event is POSTed to. Private and loopback "
        "addresses are refused in production.",
    )
    description = forms.CharField(
        required=False,
        max_length=service.DESCRIPTION_MAX_LENGTH,
        help_text="What receives the events, e.g. “review channel bridge”.",
    )
    events = forms.MultipleChoiceField(
        choices=[(event, f"{event}: {service.EVENT_HELP[event]}") for event in WEBHOOK_EVENTS],
        widget=forms.CheckboxSelectMultiple,
        help_text="Each ticked event sends one signed POST per occurrence.",
    )
    secret = forms.CharField(
        required=False,
        max_length=service.SECRET_MAX_LENGTH,
        strip=False,
        widget=forms.PasswordInput(render_value=False),
        help_text=f"{service.SECRET_MIN_LENGTH} to {service.SECRET_MAX_LENGTH} characters, "
        "the key of the X-Signature-256 signature. Leave it empty and one is made for you "
        "(when editing: the secret stays as it is).",
    )
    active = forms.BooleanField(
        required=False, initial=True, help_text="An inactive webhook receives nothing."
    )


def _service_error(form: WebhookForm, exc: service.WebhookInvalid) -> None:
    field = exc.field.partition("[")[0]
    form.add_error(field if field in form.fields else None, exc.message)


def _list_page(request, *, form=None, new_secret=None, status=200):
    context = {
        "webhooks": list(service.webhook_list(user=request.user)),
        "form": form or WebhookForm(),
        "new_secret": new_secret,
    }
    response = render(request, "profiles/webhooks.html", context, status=status)
    add_never_cache_headers(response)  # it may show a secret
    return response


@capability_required(MANAGE_WEBHOOKS)
@require_http_methods(["GET", "POST"])
def webhook_list_page(request):
    """List the webhooks; POST creates one (its secret is shown this once)."""
    if request.method == "GET":
        return _list_page(request)
    form = WebhookForm(request.POST)
    if not form.is_valid():
        return _list_page(request, form=form, status=400)
    secret = form.cleaned_data["secret"] or secrets.token_urlsafe(32)
    try:
        webhook = service.webhook_create(
            user=request.user,
            url=form.cleaned_data["url"],
            events=form.cleaned_data["events"],
            secret=secret,
            description=form.cleaned_data["description"],
            active=form.cleaned_data["active"],
        )
    except service.WebhookInvalid as exc:
        _service_error(form, exc)
        return _list_page(request, form=form, status=400)
    return _detail_page(request, webhook, new_secret=secret)


def _webhook(request, webhook_id):
    return or_404("no such webhook", service.webhook_get, user=request.user, webhook_id=webhook_id)


def _detail_page(request, webhook, *, form=None, new_secret=None, status=200):
    deliveries = Paginator(
        service.webhook_deliveries_list(user=request.user, webhook=webhook), DELIVERIES_PER_PAGE
    )
    page = deliveries.get_page(request.GET.get("page"))
    initial = {
        "url": webhook.url,
        "description": webhook.description,
        "events": webhook.events,
        "active": webhook.active,
    }
    context = {
        "webhook": webhook,
        "secret_masked": service.secret_masked(webhook.secret),
        "form": form or WebhookForm(initial=initial),
        "page": page,
        "new_secret": new_secret,
    }
    response = render(request, "profiles/webhook.html", context, status=status)
    add_never_cache_headers(response)
    return response


@capability_required(MANAGE_WEBHOOKS)
@require_http_methods(["GET", "POST"])
def webhook_page(request, webhook_id: int):
    """A webhook's form and delivery log; POST saves the form."""
    webhook = _webhook(request, webhook_id)
    if request.method == "GET":
        return _detail_page(request, webhook)
    form = WebhookForm(request.POST)
    if not form.is_valid():
        return _detail_page(request, webhook, form=form, status=400)
    changes = {name: form.cleaned_data[name] for name in ("url", "events", "description", "active")}
    if form.cleaned_data["secret"]:
        changes["secret"] = form.cleaned_data["secret"]
    try:
        service.webhook_update(user=request.user, webhook=webhook, **changes)
    except service.WebhookInvalid as exc:
        webhook.refresh_from_db()
        _service_error(form, exc)
        return _detail_page(request, webhook, form=form, status=400)
    messages.success(request, "Webhook saved.")
    return redirect("webhook", webhook_id=webhook.pk)


@capability_required(MANAGE_WEBHOOKS)
@require_http_methods(["GET", "POST"])
def webhook_delete_page(request, webhook_id: int):
    """Ask first (GET), then delete the webhook and its delivery log (POST)."""
    webhook = _webhook(request, webhook_id)
    if request.method == "POST":
        service.webhook_delete(user=request.user, webhook=webhook)
        messages.success(request, f"Webhook {webhook.url} deleted.")
        return redirect("webhook-list")
    count = service.webhook_delivery_count(webhook=webhook)
    context = {
        "kind": "webhook",
        "key": webhook.url,
        "consequences": [
            "It receives no more events, and no test.",
            f"Its delivery log ({count} deliveries) is deleted with it.",
            "Deliveries still waiting for a retry are not sent.",
        ],
        "cancel_url": reverse("webhook", kwargs={"webhook_id": webhook.pk}),
    }
    return render(request, "profiles/confirm_delete.html", context)


@capability_required(MANAGE_WEBHOOKS)
@require_POST
@throttled("webhook-test")
def webhook_test_page(request, webhook_id: int):
    """Send the webhook a ``ping`` (the worker sends it); back to its delivery log."""
    webhook = _webhook(request, webhook_id)
    delivery = service.webhook_test(user=request.user, webhook=webhook)
    messages.success(
        request,
        f"Test delivery #{delivery.pk} queued: its outcome shows in the log below once the "
        "worker has sent it (reload the page).",
    )
    return redirect("webhook", webhook_id=webhook.pk)


urlpatterns = [
    path("webhooks/", webhook_list_page, name="webhook-list"),
    path("webhooks/<int:webhook_id>/", webhook_page, name="webhook"),
    path("webhooks/<int:webhook_id>/delete/", webhook_delete_page, name="webhook-delete"),
    path("webhooks/<int:webhook_id>/test/", webhook_test_page, name="webhook-test"),
]

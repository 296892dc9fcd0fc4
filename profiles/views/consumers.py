"""Consumers: who reads the context. List, create, edit, delete."""

from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from profiles import services
from profiles.concurrency import consumer_etag
from profiles.forms import ConsumerForm, lock_key
from profiles.mappers import map_consumer_to_resolver
from profiles.models import Consumer, Profile
from profiles.permissions import READ_CONFIG, WRITE_MATERIAL, capability_required
from profiles.views.entries import confirm_delete, entry_page, writable_by

PER_PAGE = 25


def _consumer(key: str) -> Consumer:
    consumer = Consumer.objects.filter(key=key).first()
    if consumer is None:
        raise Http404(f'no consumer "{key}"')
    return consumer


@capability_required(READ_CONFIG)
@require_GET
def consumer_list(request):
    """List the consumers with the profiles that use each, a page at a time."""
    consumers = Consumer.objects.order_by("position", "id")
    page = Paginator(consumers, PER_PAGE).get_page(request.GET.get("page"))
    users: dict[int, list[str]] = {}
    for consumer_id, key in Profile.objects.filter(consumer__in=list(page)).values_list(
        "consumer_id", "key"
    ):
        users.setdefault(consumer_id, []).append(key)
    rows = [{"consumer": c, "profiles": sorted(users.get(c.pk, []))} for c in page]
    return render(request, "profiles/consumer_list.html", {"page": page, "rows": rows})


@capability_required(WRITE_MATERIAL)
@require_http_methods(["GET", "POST"])
def consumer_create(request):
    form = ConsumerForm(request.POST if request.method == "POST" else None)
    return entry_page(
        request,
        form,
        lambda: services.consumer_create(document=form.document(), user=request.user),
        success="Consumer created.",
        next_url=reverse("consumer-list"),
        context={
            "title": "New consumer",
            "submit": "Create consumer",
            "crumbs": [("Consumers", reverse("consumer-list"))],
            "cancel_url": reverse("consumer-list"),
        },
    )


@capability_required(READ_CONFIG, unsafe=WRITE_MATERIAL)
@require_http_methods(["GET", "POST"])
def consumer_edit(request, key):
    consumer = _consumer(key)
    initial = ConsumerForm.initial_of(map_consumer_to_resolver(consumer))
    initial["etag"] = consumer_etag(consumer)
    form = ConsumerForm(request.POST if request.method == "POST" else None, initial=initial)
    lock_key(form)
    writer = writable_by(form, request.user, WRITE_MATERIAL)
    return entry_page(
        request,
        form,
        lambda: services.consumer_update(
            key=key,
            changes=form.document(),
            user=request.user,
            if_match=form.cleaned_data["etag"] or None,
        ),
        success=f"Consumer {key} saved.",
        next_url=reverse("consumer-list"),
        context={
            "title": f"Consumer {key}",
            "submit": "Save consumer",
            "read_only": not writer,
            "delete_url": reverse("consumer-delete", args=[key]) if writer else None,
            "crumbs": [("Consumers", reverse("consumer-list"))],
            "cancel_url": reverse("consumer-list"),
        },
    )


@capability_required(WRITE_MATERIAL)
@require_http_methods(["GET", "POST"])
def consumer_delete(request, key):
    consumer = _consumer(key)
    users = list(consumer.profiles.order_by("key").values_list("key", flat=True))
    context = {
        "kind": "consumer",
        "key": key,
        "consequences": ["Profiles and layers are not changed."],
        "blockers": [
            {"text": f"profile {user}", "url": reverse("profile-edit", args=[user])}
            for user in users
        ],
        "blocker_intro": "Profiles still use this consumer. Give them another consumer "
        "(or delete them) first:",
        "cancel_url": reverse("consumer-edit", args=[key]),
    }
    return confirm_delete(
        request,
        context,
        lambda: services.consumer_delete(key=key, user=request.user),
        success=f"Consumer {key} deleted.",
        next_url=reverse("consumer-list"),
    )

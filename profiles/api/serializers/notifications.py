"""Shapes and examples of the webhooks (``/api/v1/webhooks``), for the OpenAPI schema. The
service (``profiles.notifications.webhooks``) validates the bodies; these describe them."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from profiles.api.serializers.examples import request_example, response_example
from profiles.models import WEBHOOK_EVENTS, WebhookDelivery
from profiles.notifications.addresses import URL_MAX_LENGTH
from profiles.notifications.webhooks import (
    DESCRIPTION_MAX_LENGTH,
    EVENT_HELP,
    PING_EVENT,
    SECRET_MAX_LENGTH,
    SECRET_MIN_LENGTH,
)

EVENTS_HELP = "The events to receive, each once: " + "; ".join(
    f"`{event}`: {EVENT_HELP[event]}" for event in WEBHOOK_EVENTS
)
URL_HELP = (
    "http(s) URL the server POSTs each event to. Refused (`WEBHOOK_URL_REFUSED`) when its "
    "host is or resolves to a loopback, link-local, private, multicast, reserved or "
    "unspecified address, unless the server allows them (`WEBHOOKS_ALLOW_PRIVATE`)."
)
SECRET_HELP = (
    f"{SECRET_MIN_LENGTH} to {SECRET_MAX_LENGTH} characters: the key of each delivery's "
    "`X-Signature-256` (HMAC-SHA256 of the body). Never shown again: answers carry "
    "`secretMasked`."
)


@extend_schema_field(
    {
        "type": "array",
        "items": {"enum": list(WEBHOOK_EVENTS)},
        "minItems": 1,
        "uniqueItems": True,
    }
)
class EventsField(serializers.ListField):
    """The events of a webhook: each at most once."""


class WebhookCreateSerializer(serializers.Serializer):
    url = serializers.CharField(max_length=URL_MAX_LENGTH, help_text=URL_HELP)
    events = EventsField(child=serializers.ChoiceField(WEBHOOK_EVENTS), help_text=EVENTS_HELP)
    secret = serializers.CharField(
        min_length=SECRET_MIN_LENGTH, max_length=SECRET_MAX_LENGTH, help_text=SECRET_HELP
    )
    description = serializers.CharField(
        max_length=DESCRIPTION_MAX_LENGTH, required=False, help_text="What the receiver is."
    )
    active = serializers.BooleanField(
        required=False, help_text="Inactive webhooks receive nothing (default: true)."
    )


class WebhookUpdateSerializer(WebhookCreateSerializer):
    """Every field optional: only those sent change (a new ``secret`` replaces the old)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for field in self.fields.values():
            field.required = False


class WebhookSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.ChoiceField(WEBHOOK_EVENTS))
    secretMasked = serializers.CharField(help_text="The secret's last four characters.")
    active = serializers.BooleanField()
    description = serializers.CharField()
    createdAt = serializers.DateTimeField()
    createdBy = serializers.CharField(allow_null=True, help_text="Username of its creator.")
    deliveriesUrl = serializers.CharField(help_text="Its delivery log.")


class WebhookDeliverySerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="The body's `id` and the `X-Delivery` header.")
    event = serializers.ChoiceField([*WEBHOOK_EVENTS, PING_EVENT])
    status = serializers.ChoiceField(
        WebhookDelivery.Status.values,
        help_text="`pending` (waiting for an attempt or a retry), `delivered` (a 2xx "
        "answer), `failed` (no more retries).",
    )
    attempts = serializers.IntegerField()
    responseStatus = serializers.IntegerField(
        allow_null=True, help_text="The last attempt's HTTP status (none: no answer)."
    )
    error = serializers.CharField(help_text="What went wrong on the last attempt, if it did.")
    createdAt = serializers.DateTimeField()
    nextAttemptAt = serializers.DateTimeField(allow_null=True)
    deliveredAt = serializers.DateTimeField(allow_null=True)
    payload = serializers.JSONField(help_text="The body's `data`.")


NEW_WEBHOOK_EXAMPLE = request_example(
    "Change requests to a chat bridge",
    {
        "url": "https://hooks.example.com/context-studio",
        "events": ["change_request.opened", "change_request.approved", "change_request.applied"],
        "secret": "a-long-random-shared-secret",
        "description": "review notifications",
    },
)
WEBHOOK_EXAMPLE = response_example(
    "A webhook",
    {
        "id": 3,
        "url": "https://hooks.example.com/context-studio",
        "events": ["change_request.opened", "change_request.approved", "change_request.applied"],
        "secretMasked": "…cret",
        "active": True,
        "description": "review notifications",
        "createdAt": "2026-11-29T12:00:00Z",
        "createdBy": "dana",
        "deliveriesUrl": "/api/v1/webhooks/3/deliveries",
    },
)
DELIVERY_EXAMPLE = response_example(
    "A delivery retried after a 503",
    {
        "id": 41,
        "event": "change_request.opened",
        "status": "pending",
        "attempts": 1,
        "responseStatus": 503,
        "error": "HTTP 503 Service Unavailable",
        "createdAt": "2026-11-29T12:00:00Z",
        "nextAttemptAt": "2026-11-29T12:01:00Z",
        "deliveredAt": None,
        "payload": {
            "changeRequest": {
                "id": 7,
                "title": "Refunds: more policy",
                "status": "open",
                "profile": "support-answer",
                "url": "/changes/7/",
            }
        },
    },
)

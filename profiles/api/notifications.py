"""Outgoing webhooks (staff only, ``MANAGE_WEBHOOKS``): create, list, change, delete one, read
its delivery log and send it a test. The rules are ``profiles.notifications.webhooks``'; the
secret is in no answer, only its last characters (``secretMasked``)."""

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import action
from rest_framework.response import Response

from profiles.api.base import ApiViewSet, RecordListMixin, body_object, invalid, viewset_schema
from profiles.api.exceptions import ApiError, or_404
from profiles.api.serializers import notifications as s
from profiles.api.serializers.entries import username
from profiles.notifications.webhooks import (
    FIELDS,
    WebhookInvalid,
    secret_masked,
    webhook_create,
    webhook_delete,
    webhook_deliveries_list,
    webhook_get,
    webhook_list,
    webhook_test,
    webhook_update,
)
from profiles.workspace.permissions import MANAGE_WEBHOOKS, capability_permission

NO_BODY = None


def webhook_record(webhook) -> dict:
    """Return a webhook as the API shows it (the secret masked)."""
    return {
        "id": webhook.pk,
        "url": webhook.url,
        "events": list(webhook.events),
        "secretMasked": secret_masked(webhook.secret),
        "active": webhook.active,
        "description": webhook.description,
        "createdAt": webhook.created_at,
        "createdBy": username(webhook.created_by),
        "deliveriesUrl": reverse("api:webhook-deliveries", kwargs={"webhook_id": webhook.pk}),
    }


def delivery_record(delivery) -> dict:
    return {
        "id": delivery.pk,
        "event": delivery.event,
        "status": delivery.status,
        "attempts": delivery.attempts,
        "responseStatus": delivery.response_status,
        "error": delivery.error,
        "createdAt": delivery.created_at,
        "nextAttemptAt": delivery.next_attempt_at,
        "deliveredAt": delivery.delivered_at,
        "payload": delivery.payload,
    }


def refused(exc: WebhookInvalid) -> ApiError:
    if exc.code == "INVALID_REQUEST":
        return invalid(exc.field, exc.message)
    return ApiError(400, exc.code, f"{exc.field}: {exc.message}", exc.field)


@viewset_schema(
    "webhooks", record=s.WebhookSerializer, listing="Every webhook, oldest first (staff)"
)
class WebhookViewSet(RecordListMixin, ApiViewSet):
    permission_classes = [capability_permission(MANAGE_WEBHOOKS)]
    lookup_url_kwarg = "webhook_id"
    lookup_value_regex = "[0-9]+"
    # Each test makes the worker send a request: counted per user like the costly doors.
    throttle_scope = "webhook-test"
    throttled_actions = ("test",)
    record = staticmethod(webhook_record)

    def _webhook(self, request, webhook_id):
        return or_404(
            f"webhook {webhook_id}", webhook_get, user=request.user, webhook_id=webhook_id
        )

    def rows(self):
        return webhook_list(user=self.request.user)

    @extend_schema(
        summary="Create a webhook: the events it receives, signed with its secret (staff)",
        request=s.WebhookCreateSerializer,
        examples=[s.NEW_WEBHOOK_EXAMPLE, s.WEBHOOK_EXAMPLE],
    )
    def create(self, request):
        body = body_object(request, FIELDS, required=("url", "events", "secret"))
        try:
            webhook = webhook_create(user=request.user, **body)
        except WebhookInvalid as exc:
            raise refused(exc) from None
        location = reverse("api:webhook-detail", kwargs={"webhook_id": webhook.pk})
        return Response(
            webhook_record(webhook),
            status=201,
            headers={"Location": request.build_absolute_uri(location)},
        )

    @extend_schema(summary="One webhook (its secret masked)", examples=[s.WEBHOOK_EXAMPLE])
    def retrieve(self, request, webhook_id):
        return Response(webhook_record(self._webhook(request, webhook_id)))

    @extend_schema(
        summary="Change some of a webhook's fields (a new secret replaces the old)",
        request=s.WebhookUpdateSerializer,
        examples=[s.WEBHOOK_EXAMPLE],
    )
    def partial_update(self, request, webhook_id):
        body = body_object(request, FIELDS)
        webhook = self._webhook(request, webhook_id)
        try:
            webhook = webhook_update(user=request.user, webhook=webhook, **body)
        except WebhookInvalid as exc:
            raise refused(exc) from None
        return Response(webhook_record(webhook))

    @extend_schema(summary="Delete a webhook and its delivery log")
    def destroy(self, request, webhook_id):
        webhook_delete(user=request.user, webhook=self._webhook(request, webhook_id))
        return Response(status=204)

    @extend_schema(
        summary="The webhook's deliveries, newest first: status, attempts, last answer",
        responses={200: s.WebhookDeliverySerializer(many=True)},
        examples=[s.DELIVERY_EXAMPLE],
    )
    @action(detail=True, methods=["get"])
    def deliveries(self, request, webhook_id):
        webhook = self._webhook(request, webhook_id)
        deliveries = webhook_deliveries_list(user=request.user, webhook=webhook)
        return self.page_of(deliveries, delivery_record)

    @extend_schema(
        summary="Send the webhook a `ping` delivery now (throttled: `webhook-test`)",
        description="Enqueues a delivery of the event `ping` (which no webhook subscribes "
        "to), whatever the webhook's events and even when it is inactive; the answer is the "
        "delivery, pending: its outcome shows in the delivery log.",
        request=NO_BODY,
        responses={202: s.WebhookDeliverySerializer},
    )
    @action(detail=True, methods=["post"])
    def test(self, request, webhook_id):
        delivery = webhook_test(user=request.user, webhook=self._webhook(request, webhook_id))
        return Response(delivery_record(delivery), status=202)

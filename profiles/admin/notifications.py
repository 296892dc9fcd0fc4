"""Webhooks and their deliveries in the admin: read-only records for staff (ADMINISTER, and
MANAGE_WEBHOOKS to see them at all). Webhooks are created, changed and tested in the studio
or the API, through ``profiles.notifications.webhooks``; the admin never shows a secret."""

from django.contrib import admin

from profiles.models import Webhook, WebhookDelivery
from profiles.notifications.webhooks import secret_masked
from profiles.workspace.permissions import MANAGE_WEBHOOKS, ReadOnlyAdminMixin, user_can

# Django's default plural adds an "s" ("webhook deliverys"). A ModelAdmin has no plural of its
# own (the index, the changelist and the breadcrumbs read the model's options), and the
# model's Meta would need a migration for a label: set the option the admin reads, here.
WebhookDelivery._meta.verbose_name_plural = "webhook deliveries"


class WebhooksAdminMixin(ReadOnlyAdminMixin):
    """Read-only, and only for those who may manage webhooks (staff)."""

    def has_module_permission(self, request) -> bool:
        return super().has_module_permission(request) and user_can(request.user, MANAGE_WEBHOOKS)

    def has_view_permission(self, request, obj=None) -> bool:
        return super().has_view_permission(request, obj) and user_can(request.user, MANAGE_WEBHOOKS)


class WebhookDeliveryInline(WebhooksAdminMixin, admin.TabularInline):
    model = WebhookDelivery
    fields = ["id", "event", "status", "attempts", "response_status", "error", "created_at"]
    readonly_fields = fields
    ordering = ["-id"]
    extra = 0
    max_num = 0
    show_change_link = True

    def get_queryset(self, request):
        # The newest 20: a busy webhook's log is paged in the studio, not here.
        ids = list(super().get_queryset(request).order_by("-id").values_list("id", flat=True)[:20])
        return super().get_queryset(request).filter(id__in=ids)


@admin.register(Webhook)
class WebhookAdmin(WebhooksAdminMixin, admin.ModelAdmin):
    list_display = ["url", "events", "active", "description", "created_at", "created_by"]
    list_filter = ["active"]
    search_fields = ["url", "description"]
    fields = ["url", "events", "masked_secret", "active", "description", "created_at", "created_by"]
    readonly_fields = fields
    inlines = [WebhookDeliveryInline]

    @admin.display(description="secret")
    def masked_secret(self, webhook) -> str:
        return secret_masked(webhook.secret)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(WebhooksAdminMixin, admin.ModelAdmin):
    list_display = ["id", "webhook", "event", "status", "attempts", "response_status", "created_at"]
    list_filter = ["status", "event"]
    list_select_related = ["webhook"]
    readonly_fields = [field.name for field in WebhookDelivery._meta.fields]
    list_per_page = 50

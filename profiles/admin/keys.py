"""API keys, read-only and without secrets: staff revoke them here."""

from django.contrib import admin

from profiles.models import ApiKey
from profiles.workspace.keys import api_key_revoke
from profiles.workspace.permissions import ReadOnlyAdminMixin


# API keys (other users' too) are ADMINISTER, like the rest of this admin. Accounts — users
# and groups — keep Django's model permissions (superusers): being staff must not be enough to
# make oneself superuser.
@admin.register(ApiKey)
class ApiKeyAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Read-only, and without any secret: only the hash is stored, and it is not shown either.
    Keys are made where they can be shown once (the studio, the API, ``create_api_key``);
    here staff revoke them."""

    list_display = (
        "name",
        "prefix",
        "owner",
        "kind",
        "scopes",
        "environments",
        "last_used_at",
        "expires_at",
        "created_at",
        "revoked_at",
    )
    list_filter = ("kind", "revoked_at", "created_at")
    search_fields = ("name", "prefix", "owner__username")
    fields = list_display
    readonly_fields = list_display
    list_select_related = ("owner",)
    actions = ["revoke"]

    @admin.action(description="Revoke the selected keys")
    def revoke(self, request, queryset):
        revoked = 0
        for key in queryset.filter(revoked_at=None):
            api_key_revoke(key=key)
            revoked += 1
        self.message_user(request, f"Revoked {revoked} key(s): requests sending them now get 401.")

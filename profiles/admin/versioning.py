"""Versioning in the admin: protected profiles are read-only, versions are shown read-only,
and environments are protected here.

The admin saves through the features' write services, whose writes record each profile version
and refuse protected environments (``profiles.versioning.versions.profile_versions_record``),
like every other door; showing a protected profile read-only spares a form that cannot be saved.
"""

import json

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.utils.html import format_html

from profiles.models import Environment, ProfileVersion
from profiles.versioning.environments import profile_write_refusal
from profiles.workspace.permissions import AdministerAdminMixin, ReadOnlyAdminMixin


class ReadOnlyAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Records that staff read and nobody edits or deletes."""


def _protected(request, profile) -> bool:
    return profile is not None and (
        profile_write_refusal(user=request.user, environments=[profile.environment]) is not None
    )


class ProtectedWritesAdmin(admin.ModelAdmin):
    """Shared by the profile and rule admins. Their saves go through the services, which
    record the version and refuse protected environments; here a protected row is shown
    read-only; a refusal the form could not foresee (a new profile placed in a protected
    environment, a revert) is reported above the form by ``WorkspaceAdmin``, as at every
    workspace entry's page."""

    def profile_of(self, obj):
        raise NotImplementedError

    def has_change_permission(self, request, obj=None):
        if _protected(request, self.profile_of(obj)):
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        if _protected(request, self.profile_of(obj)):
            return False
        return super().has_delete_permission(request, obj)

    def delete_queryset(self, request, queryset):
        if any(_protected(request, self.profile_of(obj)) for obj in queryset):
            raise PermissionDenied("a selected row belongs to a protected environment")
        super().delete_queryset(request, queryset)


class ProtectedProfileAdmin(ProtectedWritesAdmin):
    def profile_of(self, obj):
        return obj


class ProtectedRuleAdmin(ProtectedWritesAdmin):
    def profile_of(self, obj):
        return None if obj is None or not obj.profile_id else obj.profile


@admin.register(ProfileVersion)
class ProfileVersionAdmin(ReadOnlyAdmin):
    list_display = [
        "profile_key",
        "number",
        "created_at",
        "author",
        "source",
        "change_request",
        "message",
        "protection_bypassed",
    ]
    list_filter = ["source", "protection_bypassed", "created_at"]
    list_select_related = ["author", "change_request"]
    search_fields = ["profile_key", "message"]
    date_hierarchy = "created_at"
    readonly_fields = ["document_json"]
    exclude = ["document"]

    @admin.display(description="document")
    def document_json(self, obj):
        if obj.document is None:
            return "— (the profile was deleted)"
        return format_html("<pre>{}</pre>", json.dumps(obj.document, indent=2, ensure_ascii=False))


@admin.register(Environment)
class EnvironmentAdmin(AdministerAdminMixin, admin.ModelAdmin):
    """Protection settings; the API's ``PUT environments/<key>`` changes them too."""

    list_display = ["key", "requires_change_request", "approvals", "updated_at", "updated_by"]
    readonly_fields = ["updated_at", "updated_by"]

    def save_model(self, request, obj, form, change):
        obj.updated_by = request.user
        super().save_model(request, obj, form, change)

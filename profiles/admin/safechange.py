"""Safe change in the admin: change requests, with their approvals, shown read-only (versions,
environments and the protected profiles' admins are ``versioning``'s)."""

from django.contrib import admin

from profiles.admin.versioning import ReadOnlyAdmin
from profiles.models import ChangeRequest, ChangeRequestApproval
from profiles.workspace.permissions import ReadOnlyAdminMixin


class ApprovalInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = ChangeRequestApproval
    extra = 0
    can_delete = False
    readonly_fields = ["user", "created_at"]


@admin.register(ChangeRequest)
class ChangeRequestAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "title",
        "profile_key",
        "environment",
        "status",
        "author",
        "base_version",
        "applied_version",
        "created_at",
    ]
    list_filter = ["status", "environment", "created_at"]
    list_select_related = ["author"]
    search_fields = ["title", "description", "profile_key"]
    date_hierarchy = "created_at"
    inlines = [ApprovalInline]

"""The activity log in the admin: read-only, for staff (nobody adds, changes or deletes a
row; the write services record them)."""

from django.contrib import admin

from profiles.activity.filters import ACTIVITY_KINDS
from profiles.models import Activity
from profiles.workspace.permissions import ReadOnlyAdminMixin


class KindFilter(admin.SimpleListFilter):
    """The kinds an entity can be, from the vocabulary (not a DISTINCT over the whole log)."""

    title = "kind"
    parameter_name = "kind"

    def lookups(self, request, model_admin):
        return [(kind, kind) for kind in ACTIVITY_KINDS]

    def queryset(self, request, queryset):
        return queryset.filter(kind=self.value()) if self.value() else queryset


@admin.register(Activity)
class ActivityAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Every entity write with its actor, door and field-level before/after."""

    list_display = (
        "at",
        "actor_name",
        "origin",
        "change_request_number",
        "kind",
        "key",
        "path",
        "op",
    )
    list_filter = (KindFilter, "origin", "op")
    search_fields = ("key", "actor_name")
    date_hierarchy = "at"
    list_per_page = 100
    # The actor is shown by the name the row kept (a deleted user's too): no join per row.
    readonly_fields = [field.name for field in Activity._meta.fields]
    show_full_result_count = False  # the log only grows: no COUNT(*) of all of it per page

    @admin.display(description="change request", ordering="change_request_id")
    def change_request_number(self, activity: Activity) -> str:
        return f"#{activity.change_request_id}" if activity.change_request_id else "—"

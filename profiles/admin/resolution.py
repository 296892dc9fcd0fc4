"""The decision log, read-only for staff, with "Save as scenario"; the workspace version."""

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.urls import path, reverse
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from profiles.models import DecisionLog, WorkspaceVersion
from profiles.resolution.decision_log import (
    decision_log_growth,
    decision_log_save_as_scenario,
    decision_log_scenario_name,
)
from profiles.workspace.permissions import WRITE_RULES, ReadOnlyAdminMixin, user_can
from profiles.workspace.validation import WorkspaceValidationError
from profiles.workspace.writing import Conflict


@admin.register(WorkspaceVersion)
class WorkspaceVersionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Read-only: the version changes with every workspace write."""

    list_display = ["counter", "token", "changed_at"]


@admin.register(DecisionLog)
class DecisionLogAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Read-only: the log records what was served; nobody edits or deletes it (not even in
    bulk; prune_decision_log applies the retention period)."""

    list_display = (
        "created_at",
        "source",
        "profile_key",
        "profile_version",
        "status",
        "estimated_tokens",
        "duration_ms",
        "user",
        "auth",
    )
    list_filter = ("source", "status", "auth", "created_at")
    search_fields = ("profile_key", "request_fingerprint", "workspace_version")
    date_hierarchy = "created_at"
    list_per_page = 100
    readonly_fields = [field.name for field in DecisionLog._meta.fields]
    # Above the list: the rows and bytes of the last day, and where they lead.
    change_list_template = "admin/profiles/decisionlog/change_list.html"

    change_form_template = "admin/profiles/decisionlog/change_form.html"

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}), "growth": decision_log_growth()}
        return super().changelist_view(request, extra_context=extra_context)

    # "Save as scenario": production requests become regression scenarios (issue 23).
    def change_view(self, request, object_id, form_url="", extra_context=None):
        entry = self.get_object(request, object_id)
        extra_context = {
            **(extra_context or {}),
            "can_save_scenario": user_can(request.user, WRITE_RULES),
            "scenario_name": decision_log_scenario_name(entry) if entry else "",
            "save_scenario_url": reverse(
                "admin:profiles_decisionlog_save_scenario", args=[object_id]
            ),
        }
        return super().change_view(request, object_id, form_url, extra_context)

    def get_urls(self):
        custom = [
            path(
                "<path:object_id>/save-as-scenario/",
                self.admin_site.admin_view(require_POST(self.save_scenario_view)),
                name="profiles_decisionlog_save_scenario",
            )
        ]
        return custom + super().get_urls()

    def save_scenario_view(self, request, object_id):
        """Save the logged request as a scenario of its profile (writers of rules only)."""
        entry = self.get_object(request, object_id)
        if entry is None:
            raise Http404("No such decision log entry.")
        if not (self.has_view_permission(request, entry) and user_can(request.user, WRITE_RULES)):
            raise PermissionDenied
        back = reverse("admin:profiles_decisionlog_change", args=[object_id])
        name = request.POST.get("name", "")
        try:
            scenario = decision_log_save_as_scenario(entry=entry, name=name, user=request.user)
        except (WorkspaceValidationError, Conflict) as exc:
            messages.error(request, f"Not saved as a scenario: {scenario_error(exc)}")
            return HttpResponseRedirect(back)
        editor = reverse("profile-editor", args=[scenario.profile.key])
        messages.success(
            request,
            format_html(
                'Saved as scenario “{}” of profile {}. <a href="{}?scenario={}">Open it in the '
                "editor</a>.",
                scenario.name,
                scenario.profile.key,
                editor,
                scenario.pk,
            ),
        )
        return HttpResponseRedirect(back)


def scenario_error(exc) -> str:
    """Return a refusal's message with the field it names (``name: is required``)."""
    issues = getattr(exc, "issues", None)
    if issues:
        return "; ".join(
            f"{issue.path}: {issue.message}" if issue.path else issue.message for issue in issues
        )
    return str(exc)

"""What the admin's pages of workspace entries share: a model form validated by the engine's one
validator, and the history admin that saves and deletes through the features' services."""

from django import forms
from django.contrib import messages
from django.db import transaction
from django.http import HttpResponseRedirect
from simple_history.admin import SimpleHistoryAdmin

from profiles.versioning.environments import SafeChangeError
from profiles.workspace.concurrency import PreconditionFailed, WriteConflict
from profiles.workspace.permissions import AdministerAdminMixin
from profiles.workspace.selectors import row_get
from profiles.workspace.validation import WorkspaceValidationError, instance_issues
from profiles.workspace.writing import Conflict

TEXT_INPUT = forms.TextInput(attrs={"size": 60})

# What the write services refuse after a form was valid: reported, nothing written.
SAVE_REFUSALS = (
    WorkspaceValidationError,
    Conflict,
    PreconditionFailed,
    WriteConflict,
    SafeChangeError,
)


class WorkspaceModelForm(forms.ModelForm):
    """A model form whose row is validated by the engine inside the stored workspace.

    The engine's messages come first; Django's unique and constraint checks (the same rules
    in database terms) only run when the engine found nothing, as a safety net.
    """

    _engine_found_issues = False

    def validate_unique(self):
        if not self.errors:
            issues = instance_issues(self.instance)
            self._engine_found_issues = bool(issues)
            for field, message in issues:
                self.add_error(field if field in self.fields else None, message)
        if not self._engine_found_issues:
            super().validate_unique()

    def validate_constraints(self):
        if not self._engine_found_issues:
            super().validate_constraints()


class WorkspaceAdmin(AdministerAdminMixin, SimpleHistoryAdmin):
    """Saves and deletes go through the features' write services: validated like the API, recorded
    in the history with their author, and the workspace version bumped — one write path.

    A write the service refuses after the form was valid (someone else saved in between)
    is reported above the form; nothing is written.
    """

    readonly_fields = ["created_at", "created_by", "updated_at", "updated_by"]

    def service_save(self, request, obj, change: bool):
        """Write ``obj`` (edited by the form) through its service; return the saved row."""
        raise NotImplementedError

    def service_delete(self, request, obj) -> None:
        raise NotImplementedError

    def save_model(self, request, obj, form, change):
        saved = self.service_save(request, obj, change)
        obj.pk = saved.pk
        obj._state.adding = False
        obj.refresh_from_db()

    def delete_model(self, request, obj):
        self.service_delete(request, obj)

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            self.service_delete(request, obj)

    def _refused(self, request, exc: Exception, what: str):
        """Report a write the services refused above the page it came from; nothing was written."""
        message = f"Nothing was {what}: {exc}"
        if isinstance(exc, SafeChangeError):  # e.g. a protected answer depends on it: propose it
            message += ". Propose it as a change request in the studio."
        self.message_user(request, message, messages.ERROR)
        return HttpResponseRedirect(request.get_full_path())

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)
        except SAVE_REFUSALS as exc:
            return self._refused(request, exc, "saved")

    def history_form_view(self, request, object_id, version_id, extra_context=None):
        """simple-history's revert saves through ``save_model`` (the services) outside a
        transaction of its own: give it one, so a refusal leaves nothing behind and is
        reported like a save's."""
        try:
            with transaction.atomic():
                return super().history_form_view(request, object_id, version_id, extra_context)
        except SAVE_REFUSALS as exc:
            return self._refused(request, exc, "reverted")

    def delete_view(self, request, object_id, extra_context=None):
        try:
            with transaction.atomic():
                return super().delete_view(request, object_id, extra_context)
        except (Conflict, SafeChangeError) as exc:
            self.message_user(request, f"Nothing was deleted: {exc}", messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def changelist_view(self, request, extra_context=None):
        # The bulk "delete selected" action deletes through the services: all or nothing.
        try:
            with transaction.atomic():
                return super().changelist_view(request, extra_context)
        except (Conflict, SafeChangeError) as exc:
            self.message_user(request, f"Nothing was deleted: {exc}", messages.ERROR)
            return HttpResponseRedirect(request.get_full_path())

    def stored(self, obj):
        """Return the row as stored before the form changed it."""
        return row_get(model=type(obj), pk=obj.pk)

"""Profiles, rules and scenarios in the admin, saved through the authoring services: their
forms (validated by the engine, rule fields labelled as in the studio), a profile's rules
inline and saved with its fields as one version, and the read-only "resolve" page."""

import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.forms.models import BaseInlineFormSet
from django.http import Http404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from profiles.admin.versioning import ProtectedProfileAdmin, ProtectedRuleAdmin
from profiles.admin.workspace import TEXT_INPUT, WorkspaceAdmin, WorkspaceModelForm
from profiles.authoring.profiles import (
    profile_create,
    profile_delete,
    profile_update,
    rule_delete,
    rule_update,
)
from profiles.authoring.rules import RULE_DEFAULT_HINTS, RULE_FIELD_BY_MODEL
from profiles.authoring.scenarios import scenario_create, scenario_delete, scenario_update
from profiles.models import Profile, Rule, Scenario
from profiles.resolution.services import profile_resolve
from profiles.workspace.fields import PROFILE_FIELDS, RULE_MODEL_FIELDS
from profiles.workspace.mappers import (
    map_profile_to_resolver,
    map_rule_to_resolver,
    map_scenario_to_document,
)
from profiles.workspace.origin import ADMIN as ADMIN_ORIGIN
from profiles.workspace.permissions import AdministerAdminMixin
from profiles.workspace.selectors import (
    layer_keys_list,
    rule_get,
    rule_layer_keys_list,
    rule_with_keys_get,
    scenario_list,
)
from profiles.workspace.validation import (
    profile_rules_issues,
    validate_scenario,
)
from resolver import ResolverError

PROFILE_ENTRY_FIELDS = list(PROFILE_FIELDS)


def _entry(document: dict, fields) -> dict:
    """Return every field of an entry, None where the document leaves it out (the default)."""
    return {name: document.get(name) for name in fields}


class ProfileForm(WorkspaceModelForm):
    class Meta:
        model = Profile
        fields = ["key", "name", "consumer", "objective", "environment", "budget", "description"]
        widgets = {"name": TEXT_INPUT, "description": forms.Textarea(attrs={"rows": 3})}


# Model field -> the studio's hint for "not given" ("(auto)"), so both say the same thing.
RULE_BLANK_LABELS = {
    model: f"({RULE_DEFAULT_HINTS[document]})" for model, document in RULE_FIELD_BY_MODEL.items()
}


def show_rule_defaults(form: forms.BaseForm) -> None:
    """Label an empty rule field with the default rule's value in brackets, as the studio
    does: "(false)" for ``required``, never Django's "Unknown"."""
    for name, field in form.fields.items():
        blank = RULE_BLANK_LABELS.get(name)
        if blank is None:
            continue
        if isinstance(field.widget, forms.NullBooleanSelect):
            field.widget.choices = [("unknown", blank), ("true", "true"), ("false", "false")]
        elif getattr(field, "choices", None):
            field.choices = [("", blank), *[c for c in field.choices if c[0] != ""]]
        else:
            field.widget.attrs["placeholder"] = blank


class RuleForm(WorkspaceModelForm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        show_rule_defaults(self)

    class Meta:
        model = Rule
        fields = ["profile", "layer", *RULE_MODEL_FIELDS]


def scenario_entry(scenario: Scenario) -> dict:
    """Return the scenario entry of a (possibly unsaved) scenario row."""
    document = map_scenario_to_document(scenario)
    return {name: value for name, value in document.items() if value is not None}


class ScenarioForm(forms.ModelForm):
    """A scenario, checked as a request of its profile (the scenario services' validation)."""

    class Meta:
        model = Scenario
        fields = [
            "name",
            "profile",
            "description",
            "input",
            "now",
            "format",
            "availability",
            "is_default",
        ]

    def clean(self):
        cleaned = super().clean()
        if self.errors or not cleaned.get("profile"):
            return cleaned
        scenario = Scenario(
            name=cleaned.get("name") or "",
            profile=cleaned["profile"],
            description=cleaned.get("description") or "",
            input=cleaned.get("input") or {},
            now=cleaned.get("now") or None,
            format=cleaned.get("format") or None,
            availability=cleaned.get("availability") or {},
            is_default=bool(cleaned.get("is_default")),
        )
        for issue in validate_scenario(scenario_entry(scenario), layer_keys=layer_keys_list()):
            field = {"default": "is_default"}.get(
                issue.path.split(".")[0], issue.path.split(".")[0]
            )
            self.add_error(field if field in self.fields else None, str(issue))
        return cleaned


class RuleInlineForm(forms.ModelForm):
    """Validated together with the profile and its other rules by the formset.

    Each control is named after its layer and rule field as in the studio ("kb maxItems"): a
    tabular inline has no label per cell. A field left empty shows the default rule's value
    in brackets, as in the studio.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.row_name = self.instance.layer.key if self.instance.layer_id else "new rule"
        for name, field in self.fields.items():
            # The admin wraps related fields (layer) in a widget that renders the inner one.
            widget = getattr(field.widget, "widget", field.widget)
            widget.attrs["aria-label"] = f"{self.row_name} {RULE_FIELD_BY_MODEL.get(name, name)}"
        show_rule_defaults(self)

    def validate_constraints(self):
        # The formset validates all rules with the engine (same messages as the import);
        # the database constraints stay as the safety net.
        return

    class Meta:
        model = Rule
        fields = ["layer", *RULE_MODEL_FIELDS]
        widgets = {"facets": forms.TextInput(attrs={"size": 18})}


class RuleInlineFormSet(BaseInlineFormSet):
    def add_fields(self, form, index):
        super().add_fields(form, index)
        if "DELETE" in form.fields:
            row = getattr(form, "row_name", "new rule")
            form.fields["DELETE"].widget.attrs["aria-label"] = f"delete the {row} rule"

    def clean(self):
        super().clean()
        if any(form.errors for form in self.forms):
            return
        kept = [
            form
            for form in self.forms
            if getattr(form, "cleaned_data", None)
            and not form.cleaned_data.get("DELETE")
            and (form.instance.pk is not None or form.has_changed())
        ]
        general, by_layer = profile_rules_issues(self.instance, [form.instance for form in kept])
        for form in kept:
            for field, message in by_layer.pop(form.instance.layer.key, []):
                form.add_error(field if field in form.fields else None, message)
        problems = [message for _, message in general]
        problems += [message for issues in by_layer.values() for _, message in issues]
        if problems:
            raise forms.ValidationError(problems)


class RuleInline(AdministerAdminMixin, admin.TabularInline):
    model = Rule
    form = RuleInlineForm
    formset = RuleInlineFormSet
    extra = 0
    fk_name = "profile"
    show_change_link = True
    verbose_name = "rule"
    verbose_name_plural = "rules (a layer without a rule takes the default rule)"


@admin.register(Profile)
class ProfileAdmin(ProtectedProfileAdmin, WorkspaceAdmin):
    form = ProfileForm
    inlines = [RuleInline]
    change_form_template = "admin/profiles/profile/change_form.html"
    list_display = [
        "key",
        "name",
        "consumer",
        "objective",
        "environment",
        "budget",
        "rule_count",
        "updated_at",
        "updated_by",
        "resolve_link",
    ]
    list_filter = ["consumer", "objective", "environment"]
    list_select_related = ["consumer", "updated_by"]
    search_fields = ["key", "name", "objective", "environment", "description"]
    history_list_display = ["budget", "consumer", "objective", "environment"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(rule_total=Count("rules"))

    @admin.display(description="rules", ordering="rule_total")
    def rule_count(self, obj):
        return obj.rule_total

    # A save of the add or change page is one service call, fields and rules together, so
    # it makes one profile version (safe change): save_model only remembers the fields, the
    # rules inline (save_formset) adds the rules, and save_related writes both. Other views
    # that save the form alone (the history's revert) write the fields at once.

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        request._profile_admin_write = {}
        return super().changeform_view(request, object_id, form_url, extra_context)

    def service_save(self, request, obj, change):
        fields = self.entry_fields(obj)
        if not change:
            return profile_create(document=fields, user=request.user, origin=ADMIN_ORIGIN)
        return profile_update(
            key=self.stored(obj).key, changes=fields, user=request.user, origin=ADMIN_ORIGIN
        )

    def save_model(self, request, obj, form, change):
        pending = getattr(request, "_profile_admin_write", None)
        if pending is None:
            return super().save_model(request, obj, form, change)
        pending.update(
            key=self.stored(obj).key if change else None, fields=self.entry_fields(obj), rules={}
        )

    @staticmethod
    def entry_fields(obj) -> dict:
        return _entry(
            map_profile_to_resolver(obj, [], consumer_key=obj.consumer.key, layer_keys={}),
            PROFILE_ENTRY_FIELDS,
        )

    def save_formset(self, request, form, formset, change):
        """Collect the rule inline as the profile's whole set of rules (written with the
        fields in ``save_related``)."""
        formset.save(commit=False)  # fills new/changed/deleted_objects for the change message
        pending = request._profile_admin_write
        deleted = set(formset.deleted_forms)
        rules = {
            rule_form.instance.layer.key: map_rule_to_resolver(rule_form.instance)
            for rule_form in formset.forms
            if rule_form not in deleted
            and getattr(rule_form, "cleaned_data", None)
            and (rule_form.instance.pk is not None or rule_form.has_changed())
        }
        if pending["key"] is not None:
            stored = rule_layer_keys_list(profile_key=pending["key"])
            rules = {**dict.fromkeys(stored), **rules}
        pending["rules"] = rules

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        pending = request._profile_admin_write
        if pending["key"] is None:
            saved = profile_create(
                document={**pending["fields"], "rules": pending["rules"]},
                user=request.user,
                origin=ADMIN_ORIGIN,
            )
        else:
            saved = profile_update(
                key=pending["key"],
                changes={**pending["fields"], "rules": pending["rules"]},
                user=request.user,
                origin=ADMIN_ORIGIN,
            )
        obj = form.instance
        obj.pk = saved.pk
        obj._state.adding = False
        obj.refresh_from_db()

    def service_delete(self, request, obj):
        profile_delete(key=obj.key, user=request.user, origin=ADMIN_ORIGIN)

    @admin.display(description="resolve")
    def resolve_link(self, obj):
        url = reverse("admin:profiles_profile_resolve", args=[obj.pk])
        return format_html('<a href="{}">Resolve</a>', url)

    def get_urls(self):
        urls = super().get_urls()
        custom = [
            path(
                "<path:object_id>/resolve/",
                self.admin_site.admin_view(self.resolve_view),
                name="profiles_profile_resolve",
            )
        ]
        return custom + urls

    def resolve_view(self, request, object_id):
        """Show what a profile resolves to for one of its scenarios (read-only)."""
        profile = self.get_object(request, object_id)
        if profile is None:
            raise Http404("No such profile.")
        if not self.has_view_permission(request, profile):
            raise PermissionDenied
        scenarios = scenario_list(profile=profile)
        scenario = None
        chosen = request.GET.get("scenario")
        if chosen:
            scenario = next((s for s in scenarios if str(s.pk) == chosen), None)
            if scenario is None:
                messages.warning(request, "That scenario does not belong to this profile.")
        elif scenarios:
            scenario = scenarios[0]
        request_document = (
            scenario.as_request() if scenario else {"profile": profile.key, "input": {}}
        )
        resolution, error = None, None
        try:
            resolution = profile_resolve(profile=profile, request=request_document)
        except ResolverError as exc:
            error = exc.as_dict()["error"]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "original": profile,
            "profile": profile,
            "title": f"Resolve {profile.key}",
            "scenarios": scenarios,
            "scenario": scenario,
            "request_json": json.dumps(request_document, indent=2, ensure_ascii=False),
            "resolution": resolution,
            "resolution_json": json.dumps(resolution, indent=2, ensure_ascii=False)
            if resolution
            else "",
            "error": error,
            "has_view_permission": True,
        }
        return TemplateResponse(request, "admin/profiles/profile/resolve.html", context)


@admin.register(Rule)
class RuleAdmin(ProtectedRuleAdmin, WorkspaceAdmin):
    form = RuleForm
    list_display = [
        "profile",
        "layer",
        "participation",
        "mode",
        "required",
        "priority",
        "max_items",
        "max_tokens",
        "order",
        "currentness_max_age_days",
        "updated_at",
        "updated_by",
    ]
    list_filter = ["profile", "layer", "participation", "mode", "required"]
    list_select_related = ["profile", "layer", "updated_by"]
    search_fields = ["profile__key", "layer__key"]
    history_list_display = ["participation", "mode", "required", "priority"]

    def service_save(self, request, obj, change):
        profile, layer = obj.profile.key, obj.layer.key
        if change:
            stored = rule_with_keys_get(pk=obj.pk)
            if (stored.profile.key, stored.layer.key) != (profile, layer):
                rule_delete(
                    profile=stored.profile.key,
                    layer=stored.layer.key,
                    user=request.user,
                    origin=ADMIN_ORIGIN,
                )
        rule_update(
            profile=profile,
            layer=layer,
            changes=map_rule_to_resolver(obj),
            replace=True,
            user=request.user,
            origin=ADMIN_ORIGIN,
        )
        return rule_get(profile_key=profile, layer_key=layer)

    def service_delete(self, request, obj):
        rule_delete(
            profile=obj.profile.key, layer=obj.layer.key, user=request.user, origin=ADMIN_ORIGIN
        )


@admin.register(Scenario)
class ScenarioAdmin(WorkspaceAdmin):
    form = ScenarioForm
    list_display = ["name", "profile", "is_default", "now", "format", "resolve_link"]
    list_filter = ["profile", "is_default", "format"]
    list_select_related = ["profile"]
    search_fields = ["name", "description", "profile__key"]
    readonly_fields = ["created_at", "updated_at"]

    def service_save(self, request, obj, change):
        document = scenario_entry(obj)
        if not change:
            return scenario_create(document=document, user=request.user, origin=ADMIN_ORIGIN)
        return scenario_update(
            name=self.stored(obj).name,
            changes=document,
            replace=True,
            user=request.user,
            origin=ADMIN_ORIGIN,
        )

    def service_delete(self, request, obj):
        scenario_delete(name=obj.name, user=request.user, origin=ADMIN_ORIGIN)

    @admin.display(description="resolve")
    def resolve_link(self, obj):
        url = reverse("admin:profiles_profile_resolve", args=[obj.profile_id])
        return format_html('<a href="{}?scenario={}">Resolve</a>', url, obj.pk)

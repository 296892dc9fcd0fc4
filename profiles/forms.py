"""Forms of the studio pages. Validation is the engine's (``profiles.validation``): each form
substitutes the edited row into the stored workspace and shows the issues on its fields."""

import json
import re

from django import forms
from django.conf import settings

from profiles.mappers import CURRENTNESS_FIELDS, RULE_FIELDS, canonical_string
from profiles.models import Availability, Consumer, Item, Layer
from profiles.validation import instance_issues
from resolver.model import (
    AVAILABILITIES,
    DEFAULT_RULE,
    MODES,
    ON_POLICIES,
    ORDERS,
    PARTICIPATIONS,
    Currentness,
)

# --- the rule vocabulary, from the engine ---------------------------------------------------

# Every rule field the editor shows, by its workspace-document name, in SPEC §2 order.
RULE_FORM_FIELDS = (
    "participation",
    "mode",
    "required",
    "priority",
    "maxItems",
    "maxTokens",
    "order",
    "facets",
    "currentness.maxAgeDays",
    "currentness.field",
    "currentness.onStale",
    "currentness.onUnknown",
)
MAIN_RULE_FIELDS = RULE_FORM_FIELDS[:7]
CURRENTNESS_FORM_FIELDS = RULE_FORM_FIELDS[8:]
RULE_CHOICES = {
    "participation": PARTICIPATIONS,
    "mode": MODES,
    "required": ("true", "false"),
    "order": ORDERS,
    "currentness.onStale": ON_POLICIES,
    "currentness.onUnknown": ON_POLICIES,
}
_CURRENTNESS_DEFAULTS = Currentness(max_age_days=0)
# What applies when a field is not given (shown greyed, in brackets: "(auto)").
RULE_DEFAULT_HINTS = {
    "participation": DEFAULT_RULE.participation,
    "mode": DEFAULT_RULE.mode,
    "required": canonical_string(DEFAULT_RULE.required),
    "priority": canonical_string(DEFAULT_RULE.priority),
    "maxItems": "none",
    "maxTokens": "none",
    "order": "by mode",
    "facets": ", ".join(DEFAULT_RULE.facets),
    "currentness.maxAgeDays": "off",
    "currentness.field": _CURRENTNESS_DEFAULTS.field,
    "currentness.onStale": _CURRENTNESS_DEFAULTS.on_stale,
    "currentness.onUnknown": _CURRENTNESS_DEFAULTS.on_unknown,
}
# Model field -> the rule field's document name (max_items -> maxItems): what people read.
RULE_FIELD_BY_MODEL = {model: document for document, model in RULE_FIELDS.items()} | {
    model: f"currentness.{document}" for document, model in CURRENTNESS_FIELDS.items()
}
NUMERIC_RULE_FIELDS = ("priority", "maxItems", "maxTokens", "currentness.maxAgeDays")
AVAILABILITY_CHOICES = AVAILABILITIES


def _issue_field(form: forms.BaseForm, name: str | None) -> str | None:
    return name if name in form.fields else None


class EngineValidatedMixin:
    """Run the engine's validator on the edited instance and put issues on the fields."""

    field_aliases: dict[str, str] = {}

    def add_engine_issues(self, issues) -> None:
        for name, message in issues:
            name = self.field_aliases.get(name, name)
            self.add_error(_issue_field(self, name), message)


class ProfileCreateForm(EngineValidatedMixin, forms.Form):
    key = forms.CharField(max_length=64, help_text="Lowercase letters, digits, '-' and '_'.")
    name = forms.CharField(required=False)
    consumer = forms.ModelChoiceField(queryset=Consumer.objects.order_by("position", "id"))
    objective = forms.CharField(max_length=64, help_text="A slug, e.g. answer-ticket.")
    environment = forms.CharField(
        max_length=64, required=False, help_text="Optional, e.g. production."
    )
    budget = forms.IntegerField(min_value=1, help_text="Estimated tokens (characters ÷ 4).")

    def profile_values(self) -> dict:
        """Return the profile's SPEC §2 entry (consumer by key), for ``profile_create``."""
        data = self.cleaned_data
        return {
            "key": data["key"].strip(),
            "name": data["name"].strip(),
            "consumer": data["consumer"].key,
            "objective": data["objective"].strip(),
            "environment": data["environment"].strip() or None,
            "budget": data["budget"],
        }

    def add_issues(self, issues) -> None:
        for issue in issues:
            # "profiles[7]: another profile …" reads better without the document path.
            message = re.sub(r"^profiles\[\d+\]: ", "", issue.message)
            self.add_error(_issue_field(self, issue.path), message)


def _split_list(text: str) -> list[str]:
    return [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]


class LayerConditionsForm(EngineValidatedMixin, forms.ModelForm):
    """The conditions of a layer; lists are typed comma-separated, the filter one per line."""

    objectives = forms.CharField(
        required=False, help_text="Comma-separated objectives; empty = every objective."
    )
    consumers = forms.CharField(
        required=False, help_text="Comma-separated consumer keys; empty = every consumer."
    )
    requires_input_text = forms.CharField(
        label="Requires input",
        required=False,
        help_text="Comma-separated input keys that must be provided.",
    )
    item_filter_text = forms.CharField(
        label="Item filter",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One “metadata field = input key” per line: only matching items participate.",
    )
    field_aliases = {
        "applies_to_objectives": "objectives",
        "applies_to_consumers": "consumers",
        "requires_input": "requires_input_text",
        "item_filter": "item_filter_text",
    }

    class Meta:
        model = Layer
        fields = ["name", "description", "availability"]
        widgets = {"name": forms.TextInput, "description": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["availability"].choices = Availability.choices
        layer = self.instance
        self.initial.setdefault("objectives", ", ".join(layer.applies_to_objectives or []))
        self.initial.setdefault("consumers", ", ".join(layer.applies_to_consumers or []))
        self.initial.setdefault("requires_input_text", ", ".join(layer.requires_input or []))
        self.initial.setdefault(
            "item_filter_text",
            "\n".join(f"{k} = {v}" for k, v in sorted((layer.item_filter or {}).items())),
        )

    def clean_item_filter_text(self) -> dict:
        result = {}
        for number, line in enumerate(self.cleaned_data["item_filter_text"].splitlines(), 1):
            if not line.strip():
                continue
            field_name, sep, input_key = line.partition("=")
            if not sep or not field_name.strip() or not input_key.strip():
                raise forms.ValidationError(f"line {number}: write “metadata field = input key”")
            result[field_name.strip()] = input_key.strip()
        return result

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        layer = self.instance
        layer.applies_to_objectives = _split_list(cleaned.get("objectives", ""))
        layer.applies_to_consumers = _split_list(cleaned.get("consumers", ""))
        layer.requires_input = _split_list(cleaned.get("requires_input_text", ""))
        layer.item_filter = cleaned.get("item_filter_text") or {}
        for name in ("name", "description", "availability"):
            setattr(layer, name, cleaned.get(name, getattr(layer, name)))
        self.add_engine_issues(instance_issues(layer))
        return cleaned


class ItemForm(EngineValidatedMixin, forms.ModelForm):
    """An item's title, body and metadata (a JSON object, checked before the engine sees it)."""

    metadata_text = forms.CharField(
        label="Metadata (JSON)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 8, "class": "mono", "spellcheck": "false"}),
        help_text='A JSON object, e.g. {"updated": "2026-11-20", "customer_id": "C-7"}.',
    )
    field_aliases = {"metadata": "metadata_text"}

    class Meta:
        model = Item
        fields = ["title", "body"]
        widgets = {"title": forms.TextInput, "body": forms.Textarea(attrs={"rows": 10})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.initial.setdefault(
            "metadata_text", json.dumps(self.instance.metadata or {}, indent=2, ensure_ascii=False)
        )

    def clean_metadata_text(self) -> dict:
        text = self.cleaned_data["metadata_text"].strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
            ) from exc
        if not isinstance(value, dict):
            raise forms.ValidationError("must be a JSON object ({…})")
        return value

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        item = self.instance
        item.title = cleaned.get("title", "")
        item.body = cleaned.get("body", "")
        item.metadata = cleaned.get("metadata_text") or {}
        self.add_engine_issues(instance_issues(item))
        return cleaned


class WorkspaceUploadForm(forms.Form):
    file = forms.FileField(label="Workspace file (YAML or JSON)")
    mode = forms.ChoiceField(
        choices=[
            ("merge", "Merge: update and add what the file contains"),
            ("replace", "Replace: also delete what the file does not contain"),
        ],
        initial="merge",
        widget=forms.RadioSelect,
    )

    def clean_file(self):
        upload = self.cleaned_data["file"]
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and upload.size > limit:
            raise forms.ValidationError(
                f"the file is {upload.size:,} bytes; at most {limit:,} bytes are accepted"
            )
        try:
            self.cleaned_data["text"] = upload.read().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise forms.ValidationError("the file is not UTF-8 text") from exc
        return upload

    def clean(self):
        cleaned = super().clean()
        if "text" in self.cleaned_data:
            cleaned["text"] = self.cleaned_data["text"]
        return cleaned

"""The authoring forms: a profile's own fields, and a new profile with what its rules start
from."""

from django import forms

from profiles.authoring.profiles import StartFrom
from profiles.models import Consumer
from profiles.studio.forms.entries import EntryForm, key_field
from profiles.workspace.selectors import consumer_get, consumer_list, layer_list, profile_list


def _consumer_or_none(key: str) -> Consumer | None:
    try:
        return consumer_get(key=key)
    except Consumer.DoesNotExist:
        return None


class ProfileForm(EntryForm):
    """A profile's own fields; its rules and budget are edited in the editor."""

    name = forms.CharField(
        label="Name", required=False, widget=forms.TextInput(attrs={"id": "id_name"})
    )
    key = key_field("id_name")
    consumer = forms.ModelChoiceField(
        label="Consumer",
        queryset=consumer_list(),
    )
    objective = forms.CharField(
        label="Objective", max_length=64, help_text="A key, e.g. answer-ticket."
    )
    environment = forms.CharField(
        label="Environment", max_length=64, required=False, help_text="Optional, e.g. production."
    )
    budget = forms.IntegerField(
        label="Budget", min_value=1, help_text="Estimated tokens (characters ÷ 4)."
    )
    description = forms.CharField(
        label="Description", required=False, widget=forms.Textarea(attrs={"rows": 2})
    )
    field_order = ["name", "key", "consumer", "objective", "environment", "budget"]
    entry_fields = {
        "key": "key",
        "name": "name",
        "consumer": "consumer",
        "objective": "objective",
        "environment": "environment",
        "budget": "budget",
        "description": "description",
    }

    @classmethod
    def initial_of(cls, entry: dict) -> dict:
        return {
            "key": entry["key"],
            "name": entry.get("name", ""),
            "consumer": _consumer_or_none(entry["consumer"]),
            "objective": entry["objective"],
            "environment": entry.get("environment") or "",
            "budget": entry["budget"],
            "description": entry.get("description", ""),
        }

    def document(self) -> dict:
        data = self.cleaned_data
        entry = {
            "key": data["key"].strip(),
            "name": data["name"].strip(),
            "consumer": data["consumer"].key,
            "objective": data["objective"].strip(),
            "environment": data["environment"].strip() or None,
            "budget": data["budget"],
        }
        if "description" in self.fields:
            entry["description"] = data["description"].strip()
        return entry

    # The profile list's and duplicate page's name for the same thing.
    profile_values = document

    def add_issues(self, issues) -> None:
        self.add_entry_issues(issues)


START_CHOICES = [
    ("default", "Every layer, on the default rule (inline, no limits)"),
    ("none", "No layers: every layer excluded, include the ones you need"),
    ("layers", "These layers only (the others are excluded)"),
    ("copy", "A copy of another profile's rules"),
]


class ProfileCreateForm(ProfileForm):
    """A new profile: its own fields and what its rules start from (``start_from()``)."""

    start = forms.ChoiceField(
        label="Start from",
        choices=START_CHOICES,
        initial="default",
        required=False,  # not given: every layer on the default rule, as before
        widget=forms.RadioSelect,
    )
    start_layers = forms.MultipleChoiceField(
        label="Layers to start with",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="With “These layers only”: the checked layers start on the default rule.",
    )
    start_copy = forms.ChoiceField(
        label="Profile to copy",
        required=False,
        help_text="With “A copy”: the new profile gets every rule of this profile.",
    )
    field_order = [*ProfileForm.field_order, "start", "start_layers", "start_copy"]
    entry_fields = {
        **ProfileForm.entry_fields,
        "startFrom": "start",
        "startFrom.kind": "start",
        "startFrom.layers": "start_layers",
        "startFrom.profile": "start_copy",
    }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["start_layers"].choices = [
            (layer.key, f"{layer.key} — {layer.name}" if layer.name else layer.key)
            for layer in layer_list()
        ]
        self.fields["start_copy"].choices = [("", "(choose a profile)")] + [
            (profile.key, profile.key) for profile in profile_list()
        ]

    def clean(self):
        cleaned = super().clean()
        start = cleaned["start"] = cleaned.get("start") or "default"
        if start == "layers" and not cleaned.get("start_layers"):
            self.add_error("start_layers", "check at least one layer, or start from no layers")
        if start == "copy" and not cleaned.get("start_copy"):
            self.add_error("start_copy", "choose the profile to copy")
        return cleaned

    def start_from(self) -> StartFrom:
        data = self.cleaned_data
        return StartFrom(
            kind=data["start"],
            layers=tuple(data["start_layers"]) if data["start"] == "layers" else (),
            profile=data["start_copy"] if data["start"] == "copy" else None,
        )

"""Forms of the studio pages.

Each entry form (consumer, layer, item, profile) reads what was typed into a SPEC §2 entry
(``document()``) for the write services; whether the entry is valid is the engine's to say.
``add_entry_issues`` puts the service's issues on the fields they name, in words: a key that
does not fit is explained, not shown as a regular expression.
"""

import json
import re

from django import forms
from django.conf import settings

from profiles.authoring.profiles import StartFrom
from profiles.material.bulk_ingest import batch_is_ndjson
from profiles.models import Consumer
from profiles.studio import metadata_rows, suggestions
from profiles.workspace import cache
from profiles.workspace.mappers import canonical_string
from profiles.workspace.selectors import consumer_get, consumer_list, layer_list, profile_list
from profiles.workspace.served import served_items_sample
from profiles.workspace.validation import field_for_path
from resolver import ResolverError
from resolver.documents import load_json
from resolver.model import AVAILABILITIES, FORMATS

# --- issues in words ----------------------------------------------------------------------------

KEY_HELP = "Lowercase letters, digits, “-” and “_”; it starts with a letter or a digit."
KEY_IN_WORDS = (
    "use only lowercase letters, digits, “-” and “_”, start with a letter or a digit, "
    "and keep it to 64 characters"
)
FIELD_IN_WORDS = "use only letters, digits, “-” and “_”, and start with a letter or “_”"


def issue_in_words(message: str) -> str:
    """Return a validation message a person can act on: no pattern, no document path."""
    if message.startswith("must match ^[a-z0-9]"):
        got = re.search(r"\(got (.+)\)$", message)
        return KEY_IN_WORDS + (f" ({got.group(1)} does not)" if got else "")
    if message.startswith("must match ^[A-Za-z_]"):
        return FIELD_IN_WORDS
    # "another profile (profiles[3]) already has…": the path means nothing on a form.
    return re.sub(r" \((?:consumers|layers|profiles)\[\d+\][^)]*\)", "", message)


class EntryForm(forms.Form):
    """A form whose ``document()`` is one SPEC §2 entry; ``entry_fields`` maps the entry's
    paths (``render.format``) to the form's fields (``render_format``)."""

    entry_fields: dict[str, str] = {}
    etag = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("label_suffix", "")  # labels read "Key", not "Key:"
        super().__init__(*args, **kwargs)

    def add_entry_issues(self, issues) -> None:
        """Put each issue (path relative to the entry) on its field, in words."""
        for issue in issues:
            field = field_for_path(issue.path, self.entry_fields)
            field = field if field in self.fields and not self.fields[field].disabled else None
            message = issue_in_words(issue.message)
            if field is None and issue.path:
                message = f"{issue.path}: {message}"
            self.add_error(field, message)

    def save_warnings(self) -> list[str]:
        """Return what the saved entry should be warned about (shown after the save)."""
        return []

    def add_conflict(self, conflict) -> None:
        field = conflict.path if conflict.path in self.fields else None
        message = conflict.message
        if field and message.startswith(f"{field}: "):
            message = message[len(field) + 2 :]
        self.add_error(field, message)


def _key_field(source: str) -> forms.CharField:
    return forms.CharField(
        label="Key",
        max_length=64,
        help_text=KEY_HELP + " Suggested from the name.",
        widget=forms.TextInput(
            attrs={"data-key-from": source, "autocomplete": "off", "spellcheck": "false"}
        ),
    )


def _split_list(text: str) -> list[str]:
    return [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]


def _yes_no(value: str):
    return {"true": True, "false": False}.get(value)


def lock_key(form: forms.Form) -> None:
    """Show the key of a stored entry without letting it change (URLs and rules use it)."""
    if "key" in form.fields:
        form.fields["key"].disabled = True
        form.fields["key"].help_text = "The key names the entry in rules, URLs and the API."
        form.fields["key"].widget.attrs.pop("data-key-from", None)


# --- consumers --------------------------------------------------------------------------------


class ConsumerForm(EntryForm):
    """A consumer: who reads the context, in which format, with or without item dates."""

    name = forms.CharField(
        label="Name", required=False, widget=forms.TextInput(attrs={"id": "id_name"})
    )
    key = _key_field("id_name")
    render_format = forms.ChoiceField(
        label="Format",
        required=False,
        choices=[("", "(markdown)"), *((f, "XML" if f == "xml" else f) for f in FORMATS)],
        help_text="How the context is written for this consumer.",
    )
    include_currentness = forms.ChoiceField(
        label="Item dates in the text",
        required=False,
        choices=[("", "(no)"), ("true", "yes"), ("false", "no")],
    )
    field_order = ["name", "key", "render_format", "include_currentness", "etag"]
    entry_fields = {
        "key": "key",
        "name": "name",
        "render": "render_format",
        "render.format": "render_format",
        "render.includeCurrentness": "include_currentness",
    }

    @classmethod
    def initial_of(cls, entry: dict) -> dict:
        render = entry.get("render") or {}
        include = render.get("includeCurrentness")
        return {
            "key": entry["key"],
            "name": entry.get("name", ""),
            "render_format": render.get("format") or "",
            "include_currentness": "" if include is None else canonical_string(include),
        }

    def document(self) -> dict:
        data = self.cleaned_data
        entry = {"key": data["key"].strip(), "name": data["name"].strip()}
        render = {}
        if data["render_format"]:
            render["format"] = data["render_format"]
        if _yes_no(data["include_currentness"]) is not None:
            render["includeCurrentness"] = _yes_no(data["include_currentness"])
        entry["render"] = render or None
        return entry


# --- layers -----------------------------------------------------------------------------------


class LayerForm(EntryForm):
    """A layer's own fields and conditions; lists are comma-separated, the filter one per line."""

    name = forms.CharField(
        label="Name", required=False, widget=forms.TextInput(attrs={"id": "id_name"})
    )
    key = _key_field("id_name")
    description = forms.CharField(
        label="Description", required=False, widget=forms.Textarea(attrs={"rows": 2})
    )
    availability = forms.ChoiceField(
        label="Availability",
        choices=[(a, a) for a in AVAILABILITIES],
        initial="auto",
        help_text="“unavailable” or “unknown” leave the layer out of every resolution.",
    )
    objectives = forms.CharField(
        label="Objectives",
        required=False,
        help_text="Comma-separated objectives; empty = every objective.",
    )
    consumers = forms.CharField(
        label="Consumers",
        required=False,
        help_text="Comma-separated consumer keys; empty = every consumer.",
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
    governed = forms.BooleanField(
        label="Governed",
        required=False,
        help_text="Adding, editing or deleting its items needs a change request while a profile "
        "of a protected environment reads it (policies, compliance texts). Staff only.",
    )
    field_order = ["name", "key", "description", "availability"]
    entry_fields = {
        "key": "key",
        "name": "name",
        "description": "description",
        "availability": "availability",
        "appliesTo": "objectives",
        "appliesTo.objectives": "objectives",
        "appliesTo.consumers": "consumers",
        "requiresInput": "requires_input_text",
        "itemFilter": "item_filter_text",
    }

    def __init__(self, *args, staff: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if not staff:  # only staff decide what is governed (the service checks it too)
            del self.fields["governed"]
        self._suggest()

    def governed_value(self) -> bool | None:
        """Return the governed flag posted (None: the form does not offer it)."""
        return self.cleaned_data.get("governed") if "governed" in self.fields else None

    def _suggest(self) -> None:
        """Give the free-text fields what the workspace knows (``field.suggestions``:
        ``(value, label)``), and ``item_fields``: the metadata fields of the layer's items."""
        snapshot = cache.workspace_get()
        document = snapshot.document
        layer = suggestions.layer_entry(document, self.initial.get("key"))
        items = layer.get("items") or [] if layer else []
        if layer and layer["key"] in snapshot.compiled.served:
            # A served layer's items are not held: its first items are looked at instead.
            items = served_items_sample(layer["key"])
        self.items_count = len(items)
        self.item_fields = suggestions.metadata_field_counts(items)
        known = suggestions.layer_field_suggestions(
            document, item_fields=self.item_fields, items_count=self.items_count
        )
        for name, values in known.items():
            field = self.fields[name]
            field.suggestions = values
            if values and name != "item_filter_text":  # a textarea takes no datalist
                field.widget.attrs["list"] = f"id_{name}_suggestions"
        self.fields["item_filter_text"].warnings = self.item_filter_warnings()

    def save_warnings(self) -> list[str]:
        return self.item_filter_warnings()

    def item_filter_warnings(self) -> list[str]:
        """Return a warning per item-filter field no item of the layer has (not an error:
        the items may come later, but today the filter lets no item through)."""
        if not self.items_count:
            return []
        if self.is_bound:
            text = self.data.get("item_filter_text", "")
        else:
            text = self.initial.get("item_filter_text", "")
        fields = [line.partition("=")[0].strip() for line in text.splitlines() if "=" in line]
        return [
            f"no item of this layer has a “{field}” field: the filter lets no item through"
            for field in suggestions.fields_on_no_item(fields, self.item_fields)
        ]

    @classmethod
    def initial_of(cls, entry: dict) -> dict:
        applies = entry.get("appliesTo") or {}
        return {
            "key": entry["key"],
            "name": entry.get("name", ""),
            "description": entry.get("description", ""),
            "availability": entry.get("availability") or "auto",
            "objectives": ", ".join(applies.get("objectives") or []),
            "consumers": ", ".join(applies.get("consumers") or []),
            "requires_input_text": ", ".join(entry.get("requiresInput") or []),
            "item_filter_text": "\n".join(
                f"{field} = {key}" for field, key in sorted((entry.get("itemFilter") or {}).items())
            ),
        }

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

    def document(self) -> dict:
        data = self.cleaned_data
        applies = {}
        if _split_list(data["objectives"]):
            applies["objectives"] = _split_list(data["objectives"])
        if _split_list(data["consumers"]):
            applies["consumers"] = _split_list(data["consumers"])
        return {
            "key": data["key"].strip(),
            "name": data["name"].strip(),
            "description": data["description"].strip(),
            "availability": data["availability"],
            "appliesTo": applies or None,
            "requiresInput": _split_list(data["requires_input_text"]) or None,
            "itemFilter": data["item_filter_text"] or None,
        }


# --- items ------------------------------------------------------------------------------------


class ItemForm(EntryForm):
    """An item: its path in the layer, title, body and metadata (a JSON object)."""

    path = forms.CharField(
        label="Path",
        max_length=255,
        help_text="Unique in the layer; it may contain “/”, e.g. refunds/card-refunds.md.",
        widget=forms.TextInput(attrs={"spellcheck": "false"}),
    )
    title = forms.CharField(label="Title", required=False)
    body = forms.CharField(
        label="Body", required=False, strip=False, widget=forms.Textarea(attrs={"rows": 10})
    )
    metadata_text = forms.CharField(
        label="Metadata",
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "class": "mono", "spellcheck": "false"}),
        help_text='A JSON object, e.g. {"updated": "2026-11-20", "customer_id": "C-7"}.',
    )
    metadata_mode = forms.ChoiceField(
        label="Edit the metadata as",
        required=False,  # not given (a client of the JSON field only): the JSON
        choices=[("rows", "key / value rows"), ("json", "raw JSON")],
        initial="rows",
        widget=forms.RadioSelect,
    )
    field_order = ["path", "title", "body", "metadata_mode", "metadata_text"]
    entry_fields = {"path": "path", "title": "title", "body": "body", "metadata": "metadata_text"}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields[
            "metadata_text"
        ].help_text = (
            'With “raw JSON”: a JSON object, e.g. {"updated": "2026-11-20", "customer_id": "C-7"}.'
        )
        self.metadata_rows = self._rows()

    def _rows(self) -> list[dict]:
        """Return the key/value rows shown: the posted ones, or the metadata's and blanks."""
        if self.is_bound:
            return metadata_rows.rows_posted(self.data)
        try:
            metadata = json.loads(self.initial.get("metadata_text") or "{}")
        except ValueError:
            metadata = {}
        return metadata_rows.rows_of(metadata if isinstance(metadata, dict) else {})

    @classmethod
    def initial_of(cls, entry: dict) -> dict:
        return {
            "path": entry["path"],
            "title": entry.get("title", ""),
            "body": entry.get("body", ""),
            "metadata_text": json.dumps(entry.get("metadata") or {}, indent=2, ensure_ascii=False),
        }

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("metadata_mode") == "rows":
            self.errors.pop("metadata_text", None)  # the JSON is not what was edited
            metadata = metadata_rows.metadata_of_rows(self.metadata_rows)
            if metadata is None:
                self.add_error("metadata_mode", "fix the marked metadata rows")
            cleaned["metadata_text"] = metadata or {}
        return cleaned

    def clean_metadata_text(self) -> dict:
        text = self.cleaned_data["metadata_text"].strip()
        if not text:
            return {}
        # The engine's JSON reader: nesting and number sizes are refused in words, not with
        # a crash; NaN and Infinity are not JSON.
        try:
            value = load_json(text, allow_nan=False)
        except ResolverError as exc:
            raise forms.ValidationError(exc.message) from exc
        if not isinstance(value, dict):
            raise forms.ValidationError("must be a JSON object ({…})")
        return value

    def document(self) -> dict:
        data = self.cleaned_data
        return {
            "path": data["path"].strip(),
            "title": data["title"].strip(),
            "body": data["body"],
            "metadata": data["metadata_text"],
        }


# --- profiles ---------------------------------------------------------------------------------


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
    key = _key_field("id_name")
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


# --- the workspace file -----------------------------------------------------------------------


def uploaded_text(upload) -> str:
    """Return the text of an uploaded file; raise ``ValidationError`` when it is larger than
    a request body may be (``MAX_BODY_BYTES``) or not UTF-8."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if limit is not None and upload.size > limit:
        raise forms.ValidationError(
            f"the file is {upload.size:,} bytes; at most {limit:,} bytes are accepted"
        )
    try:
        return upload.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise forms.ValidationError("the file is not UTF-8 text") from exc


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
        self.cleaned_data["text"] = uploaded_text(upload)
        return upload

    def clean(self):
        cleaned = super().clean()
        if "text" in self.cleaned_data:
            cleaned["text"] = self.cleaned_data["text"]
        return cleaned


# --- a layer's bulk ingest ----------------------------------------------------------------------


class BulkIngestUploadForm(forms.Form):
    """A batch of item operations for one layer (``profiles.material.bulk_ingest``), as a
    file; ``cleaned_data`` gets its ``text`` and whether it is ``ndjson``."""

    file = forms.FileField(
        label="Batch file (NDJSON or a JSON array)",
        widget=forms.FileInput(
            attrs={"accept": ".ndjson,.jsonl,.json,application/x-ndjson,application/json"}
        ),
    )

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        body_limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        self.fields["file"].help_text = (
            "NDJSON (.ndjson, .jsonl: one operation a line, blank lines skipped) or a JSON "
            'array (.json) of operations. An operation is {"op": "upsert", "item": {…}} (the '
            'item at item.path becomes exactly this item), {"op": "delete", "path": "…"}, or '
            "a plain item object (an upsert). The format is read from the file itself: a "
            "first non-blank character “[” means a JSON array, anything else NDJSON, whatever "
            f"the file’s name. At most {settings.BULK_INGEST_JOB_MAX_LINES:,} operations "
            "(BULK_INGEST_JOB_MAX_LINES)"
            + (f" and {body_limit:,} bytes (MAX_BODY_BYTES)." if body_limit else ".")
        )

    def clean_file(self):
        upload = self.cleaned_data["file"]
        text = uploaded_text(upload)
        self.cleaned_data["text"], self.cleaned_data["ndjson"] = text, batch_is_ndjson(text)
        return upload

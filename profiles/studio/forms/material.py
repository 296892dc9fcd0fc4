"""The material's forms: a consumer, a layer (with what the workspace suggests for it) and an
item (its metadata as key/value rows or raw JSON)."""

import json

from django import forms

from profiles.studio import metadata_rows, suggestions
from profiles.studio.forms.entries import EntryForm, key_field
from profiles.workspace import cache
from profiles.workspace.mappers import canonical_string
from profiles.workspace.served import served_items_sample
from resolver import ResolverError
from resolver.documents import load_json
from resolver.model import AVAILABILITIES, FORMATS


def _split_list(text: str) -> list[str]:
    return [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]


def _yes_no(value: str):
    return {"true": True, "false": False}.get(value)


# --- consumers --------------------------------------------------------------------------------


class ConsumerForm(EntryForm):
    """A consumer: who reads the context, in which format, with or without item dates."""

    name = forms.CharField(
        label="Name", required=False, widget=forms.TextInput(attrs={"id": "id_name"})
    )
    key = key_field("id_name")
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
    key = key_field("id_name")
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

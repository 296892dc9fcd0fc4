"""The editor's forms: one rule form per layer (a formset whose prefix is the layer key), the
budget, and the sample input of the preview.

The forms only read what was typed (choices, integers, numbers, lists); whether a rule makes
sense is the engine's to say. ``RulesFormSet.add_issues`` puts each of the engine's
validation issues on the field it names, with ``add_error``, so a form shows the same message
as the API and the import.
"""

import re
from typing import Any

from django import forms
from django.forms.formsets import TOTAL_FORM_COUNT, BaseFormSet, ManagementForm
from django.utils.functional import cached_property

from profiles.authoring.rules import (
    NUMERIC_RULE_FIELDS,
    RULE_CHOICES,
    RULE_DEFAULT_HINTS,
    RULE_FORM_FIELDS,
)
from profiles.studio.suggestions import metadata_field_counts
from profiles.workspace.mappers import canonical_string
from profiles.workspace.validation import MAX_STORED_INTEGER
from resolver.model import AVAILABILITIES, FORMATS

SOURCES = ("profile", "default")
# The editor shows a rule's main fields first, facets and currentness under "more".
MAIN_RULE_FIELDS = RULE_FORM_FIELDS[:7]
CURRENTNESS_FORM_FIELDS = RULE_FORM_FIELDS[8:]
TOO_LARGE = f"must be at most {MAX_STORED_INTEGER}"


class StoredIntegerField(forms.IntegerField):
    """An integer the database can store; any other text is an error in words, never a 500.

    Python refuses to convert integers of more than 4,300 digits (and this form accepts no
    more than ten): such input is "too large", not a crash.
    """

    default_error_messages = {"invalid": "must be an integer", "max_value": TOO_LARGE}

    def __init__(self, **kwargs):
        kwargs.setdefault("max_value", MAX_STORED_INTEGER)
        super().__init__(**kwargs)

    def to_python(self, value):
        text = str(value).strip() if value is not None else ""
        if re.fullmatch(r"[+-]?\d{11,}", text):
            raise forms.ValidationError(
                TOO_LARGE if not text.startswith("-") else self.error_messages["invalid"]
            )
        return super().to_python(value)

    def widget_attrs(self, widget):
        # Limits are the engine's to check (its messages name the rule field); the browser's
        # own range validation would only get in the way of typing.
        attrs = super().widget_attrs(widget)
        attrs.pop("min", None)
        attrs.pop("max", None)
        return attrs


class FiniteNumberField(forms.FloatField):
    default_error_messages = {"invalid": "must be a number"}


def _choice_field(name: str) -> forms.ChoiceField:
    choices = [("", f"({RULE_DEFAULT_HINTS[name]})"), *((c, c) for c in RULE_CHOICES[name])]
    return forms.ChoiceField(
        choices=choices,
        required=False,
        error_messages={"invalid_choice": "must be one of " + ", ".join(RULE_CHOICES[name])},
    )


def _rule_field(name: str) -> forms.Field:
    if name in RULE_CHOICES:
        return _choice_field(name)
    if name == "priority":
        return FiniteNumberField(required=False, widget=forms.NumberInput(attrs={"step": "any"}))
    if name in NUMERIC_RULE_FIELDS:
        return StoredIntegerField(required=False)
    return forms.CharField(required=False)


class RuleForm(forms.Form):
    """One layer's rule as the editor shows it: an empty field is "not given" (the default).

    The formset gives the layer key as ``prefix``; controls are named after the layer and the
    rule field ("kb maxItems") and carry their saved value (``data-saved``) so the page can
    mark edited cells.
    """

    source = forms.ChoiceField(
        choices=[(source, source) for source in SOURCES],
        required=False,
        widget=forms.HiddenInput,
    )

    def __init__(self, *args, layer: dict, **kwargs):
        super().__init__(*args, **kwargs)
        self.layer_key = layer["key"]
        self.layer_name = " ".join(str(layer.get("name") or "").split()) or layer["key"]
        self._items = layer.get("items") or []

    @cached_property
    def metadata_fields(self) -> list[tuple[str, int]]:
        """Return the metadata fields of the layer's items with their counts (for the
        currentness field's suggestions; counted when the page is rendered, not per preview)."""
        return metadata_field_counts(self._items)

    # -- what the template shows

    @property
    def source_value(self) -> str:
        source = self["source"].value()
        return source if source in SOURCES else self.initial.get("source", "default")

    def _cells(self, names) -> list[dict]:
        """Return the controls of ``names``: the rendered control and its error slot.

        The fields are shared by every form (see ``SharedFields``): a control's own
        attributes (id, accessible name, saved value) are given here, when it is rendered.
        """
        cells = []
        for name in names:
            slug = name.replace(".", "-")
            bound = self[name]
            value = bound.value()
            error_id = f"err-{self.layer_key}-{slug}"
            attrs = {
                "id": f"r-{self.layer_key}-{slug}",
                "aria-label": f"{self.layer_key} {name}",
                "aria-describedby": error_id,
                "data-saved": str(self.initial.get(name, "")),
            }
            if name in RULE_CHOICES and not value:
                attrs["class"] = "is-default"
            suggestions = None
            if name == "currentness.field":
                suggestions = self._currentness_suggestions(attrs)
            cells.append(
                {
                    "control": bound.as_widget(attrs=attrs),
                    "id": attrs["id"],
                    "name": name,
                    "label": name.replace(".", " "),
                    # Not the control's aria-describedby: it may name a warning too.
                    "error_id": error_id,
                    "slot": f"{self.layer_key} {name}",
                    "error": (self.errors.get(name) or [""])[0],
                    "suggestions": suggestions,
                }
            )
        return cells

    def _currentness_suggestions(self, attrs: dict) -> dict:
        """Point the currentness field at a datalist of the layer's metadata fields; the page
        warns (studio.js) while the field, or its default, is on no item of the layer."""
        list_id = f"md-{self.layer_key}"
        attrs["list"] = list_id
        attrs["data-field-check"] = f"warn-{self.layer_key}-currentness-field"
        attrs["data-default-field"] = RULE_DEFAULT_HINTS["currentness.field"]
        attrs["data-age-control"] = f"r-{self.layer_key}-currentness-maxAgeDays"
        attrs["aria-describedby"] += f" {attrs['data-field-check']}"
        return {
            "list_id": list_id,
            "warning_id": attrs["data-field-check"],
            "items": len(self._items),
            "fields": self.metadata_fields,
        }

    @property
    def main_cells(self) -> list:
        return self._cells(MAIN_RULE_FIELDS)

    @property
    def more_cells(self) -> list:
        return self._cells(RULE_FORM_FIELDS[len(MAIN_RULE_FIELDS) :])

    @property
    def more_open(self) -> bool:
        return any(name in self.errors for name in RULE_FORM_FIELDS[len(MAIN_RULE_FIELDS) :])

    @property
    def more_summary(self) -> str:
        facets = self["facets"].value() or RULE_DEFAULT_HINTS["facets"]
        age = self["currentness.maxAgeDays"].value()
        currentness = f"max {age} days" if age not in (None, "") else "no currentness limit"
        return f"facets {facets} · {currentness}"

    # -- what the engine gets

    def rule(self) -> dict:
        """Return the rule document of the fields given (call after ``is_valid``)."""
        data = self.cleaned_data
        rule: dict[str, Any] = {}
        for name in ("participation", "mode", "order"):
            if data.get(name):
                rule[name] = data[name]
        if data.get("required"):
            rule["required"] = data["required"] == "true"
        for name in ("priority", "maxItems", "maxTokens"):
            if data.get(name) is not None:
                value = data[name]
                rule[name] = (
                    int(value) if isinstance(value, float) and value.is_integer() else value
                )
        facets = [part.strip() for part in (data.get("facets") or "").split(",") if part.strip()]
        if facets:
            rule["facets"] = facets
        currentness: dict[str, Any] = {}
        if data.get("currentness.maxAgeDays") is not None:
            currentness["maxAgeDays"] = data["currentness.maxAgeDays"]
        for name in CURRENTNESS_FORM_FIELDS[1:]:
            if data.get(name):
                currentness[name.split(".", 1)[1]] = data[name].strip()
        if currentness:
            rule["currentness"] = currentness
        return rule


class SharedFields(dict):
    """Fields that every form of the class shares instead of deep-copying them.

    A preview builds a rule form per layer on every keystroke; copying their fields was
    most of its cost. Nothing changes these fields per form: per-control attributes are given
    when a control is rendered (``RuleForm._cells``).
    """

    def __deepcopy__(self, memo):
        return dict(self)


for _name in RULE_FORM_FIELDS:
    RuleForm.base_fields[_name] = _rule_field(_name)
    if _name not in RULE_CHOICES:
        RuleForm.base_fields[_name].widget.attrs["placeholder"] = f"({RULE_DEFAULT_HINTS[_name]})"
RuleForm.base_fields = SharedFields(RuleForm.base_fields)


def rule_form_values(rule: dict | None, source: str) -> dict[str, str]:
    """Return the editor's text values of a saved rule document (empty = not given)."""
    rule = rule or {}
    values = dict.fromkeys(RULE_FORM_FIELDS, "") | {"source": source}
    for name in ("participation", "mode", "order"):
        if rule.get(name) is not None:
            values[name] = str(rule[name])
    if rule.get("required") is not None:
        values["required"] = "true" if rule["required"] else "false"
    for name in ("priority", "maxItems", "maxTokens"):
        if rule.get(name) is not None:
            values[name] = canonical_string(rule[name])
    if rule.get("facets"):
        values["facets"] = ", ".join(rule["facets"])
    currentness = rule.get("currentness") or {}
    for name in ("maxAgeDays", "field", "onStale", "onUnknown"):
        if currentness.get(name) is not None:
            values[f"currentness.{name}"] = canonical_string(currentness[name])
    return values


class RulesFormSet(BaseFormSet):
    """One ``RuleForm`` per layer of the workspace, in workspace order, prefixed by its key.

    The layers come from the server's workspace, never from the client: no management form is
    posted. A layer the posted form does not know (added meanwhile) keeps its saved rule.
    """

    form = RuleForm
    extra = 0
    can_order = can_delete = False
    min_num, max_num, absolute_max = 0, 1_000_000, 1_000_000
    validate_min = validate_max = False
    renderer = None

    def __init__(self, data=None, *, layers: list[dict], saved_rules: dict, **kwargs):
        self.layers = layers
        self.saved_rules = saved_rules
        initial = [
            rule_form_values(
                saved_rules.get(layer["key"]),
                "profile" if layer["key"] in saved_rules else "default",
            )
            for layer in layers
        ]
        missing = [
            (layer, values)
            for layer, values in zip(layers, initial, strict=True)
            if data is not None and f"{layer['key']}-source" not in data
        ]
        if missing:
            data = data.copy()
            for layer, values in missing:
                for name, value in values.items():
                    data[f"{layer['key']}-{name}"] = value
        super().__init__(data, initial=initial, prefix="rules", **kwargs)
        self.by_layer = {form.layer_key: form for form in self.forms}

    @cached_property
    def management_form(self):
        count = str(len(self.layers))
        form = ManagementForm(
            {f"{self.prefix}-{TOTAL_FORM_COUNT}": count, f"{self.prefix}-INITIAL_FORMS": count},
            prefix=self.prefix,
        )
        form.full_clean()
        return form

    def total_form_count(self) -> int:
        return len(self.layers)

    def full_clean(self) -> None:
        # Every form is a layer's, none is "extra" or deletable: only the forms need cleaning.
        self._errors = [form.errors for form in self.forms]
        self._non_form_errors = self.error_class(error_class="nonform", renderer=self.renderer)

    def initial_form_count(self) -> int:
        return len(self.layers)

    def add_prefix(self, index) -> str:
        return self.layers[index]["key"] if index is not None else "__prefix__"

    def get_form_kwargs(self, index):
        return {**super().get_form_kwargs(index), "layer": self.layers[index]}

    @property
    def default_rule_layers(self) -> list[str]:
        """Return the keys of the layers on the default rule (no rule in the profile)."""
        return [form.layer_key for form in self.forms if form.source_value == "default"]

    def rule_overrides(self) -> dict:
        """Return every layer's rule as the form gives it, for ``with_profile_draft``.

        A layer on the default rule with nothing given is None (the default rule); otherwise
        every field not given is None, so saving removes it from the stored rule.
        """
        overrides: dict[str, Any] = {}
        for form in self.forms:
            rule = form.rule()
            if not rule and form.source_value == "default":
                overrides[form.layer_key] = None
                continue
            full: dict[str, Any] = dict.fromkeys(
                ("participation", "mode", "required", "priority", "maxItems", "maxTokens"), None
            ) | {"order": None, "facets": None, "currentness": None}
            overrides[form.layer_key] = full | rule
        return overrides

    def rules_document(self) -> dict:
        """Return the rules as saving would store them (layers on the default rule left out)."""
        result = {}
        for form in self.forms:
            rule = form.rule()
            if rule or form.source_value == "profile":
                result[form.layer_key] = rule
        return result

    def field_errors(self) -> dict[str, str]:
        """Return "<layer> <field>" -> first error message, for the page's error slots."""
        return {
            f"{form.layer_key} {name}": errors[0]
            for form in self.forms
            for name, errors in form.errors.items()
            if name in RULE_FORM_FIELDS
        }


class BudgetForm(forms.Form):
    """The profile's budget as edited, and the ETag of the profile the editor was opened on."""

    budget = StoredIntegerField(
        required=False,
        widget=forms.NumberInput(attrs={"id": "budget-input", "step": "1"}),
    )
    etag = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["budget"].widget.attrs["aria-describedby"] = "budget-help err-budget"

    def budget_value(self) -> int | None:
        return self.cleaned_data.get("budget") if self.is_valid() else None


def input_field_name(key: str) -> str:
    return f"input:{key}"


def availability_field_name(layer_key: str) -> str:
    return f"avail:{layer_key}"


class SampleInputForm(forms.Form):
    """The request the preview resolves: message, input values, as-of time, format, what-ifs.

    Input fields are the keys the layers read (``requiresInput``, then ``itemFilter``), always,
    so a profile without a saved scenario can preview customer-scoped layers. Names carry a
    ":" (``input:customer_id``, ``avail:kb``), which no layer key contains: they never collide
    with a rule field ("kb-mode").
    """

    message = forms.CharField(
        required=False,
        strip=False,
        label="message",
        widget=forms.Textarea(
            attrs={"id": "in-message", "rows": 2, "placeholder": "What the user asked…"}
        ),
    )
    now = forms.CharField(
        required=False,
        label="as of (UTC)",
        widget=forms.DateTimeInput(attrs={"id": "in-now", "type": "datetime-local", "step": "1"}),
    )
    format = forms.ChoiceField(
        required=False,
        label="output format",
        choices=[("", "consumer’s default"), *((f, "XML" if f == "xml" else f) for f in FORMATS)],
        widget=forms.Select(attrs={"id": "in-format"}),
    )

    def __init__(self, data=None, *, input_keys: list[str], layers: list[dict], **kwargs):
        super().__init__(data, **kwargs)
        self.input_keys = list(input_keys)
        self.layer_keys = [layer["key"] for layer in layers]
        for key in self.input_keys:
            self.fields[input_field_name(key)] = forms.CharField(
                required=False,
                label=key,
                widget=forms.TextInput(attrs={"id": f"in-{key}", "placeholder": "not provided"}),
            )
        for layer in layers:
            stored = layer.get("availability") or "auto"
            self.fields[availability_field_name(layer["key"])] = forms.ChoiceField(
                required=False,
                label=layer["key"],
                choices=[("", f"as stored ({stored})"), *((c, c) for c in AVAILABILITIES)],
                widget=forms.Select(attrs={"id": f"avail-{layer['key']}"}),
            )

        for name, field in self.fields.items():
            field.widget.attrs["aria-describedby"] = self.error_id(name)

    @staticmethod
    def error_id(name: str) -> str:
        return "err-sample-" + name.replace(":", "-")

    def cell(self, name: str) -> dict:
        """Return a control with its label and error slot (``sample <name>`` on the page)."""
        return {
            "field": self[name],
            "id": self.fields[name].widget.attrs["id"],
            "label": self.fields[name].label or name,
            "error_id": self.error_id(name),
            "slot": f"sample {name}",
            "error": (self.errors.get(name) or [""])[0] if self.is_bound else "",
        }

    @property
    def message_cell(self) -> dict:
        return self.cell("message")

    @property
    def now_cell(self) -> dict:
        return self.cell("now")

    @property
    def format_cell(self) -> dict:
        return self.cell("format")

    @property
    def input_cells(self) -> list[dict]:
        return [self.cell(input_field_name(key)) for key in self.input_keys]

    @property
    def availability_cells(self) -> list[dict]:
        return [self.cell(availability_field_name(key)) for key in self.layer_keys]

    def values(self) -> dict[str, str]:
        """Return the cleaned text values by field name (the form must be valid)."""
        self.is_valid()
        return {name: self.cleaned_data.get(name) or "" for name in self.fields}

    def as_request(self) -> dict:
        """Return the SPEC §3 request of the sample (without the profile selection)."""
        values = self.values()
        input_values: dict[str, Any] = {}
        if values["message"]:
            input_values["message"] = values["message"]
        for key in self.input_keys:
            value = values[input_field_name(key)].strip()
            if value:
                input_values[key] = value
        request: dict[str, Any] = {"input": input_values}
        if values["now"].strip():
            request["now"] = values["now"].strip()
        if values["format"]:
            request["format"] = values["format"]
        availability = {
            key: values[availability_field_name(key)]
            for key in self.layer_keys
            if values[availability_field_name(key)]
        }
        if availability:
            request["availability"] = availability
        return request

    def field_for_request_path(self, path: str) -> str | None:
        """Return the field a request error's path concerns (``input.customer_id``…)."""
        head, _, rest = (path or "").partition(".")
        if head in ("now", "format"):
            return head
        if head == "input":
            if rest == "message":
                return "message"
            name = input_field_name(rest)
            return name if name in self.fields else None
        if head == "availability":
            name = availability_field_name(rest)
            return name if name in self.fields else None
        return None

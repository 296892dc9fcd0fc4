"""What the studio's entry forms share.

Each entry form (consumer, layer, item, profile) reads what was typed into a SPEC §2 entry
(``document()``) for the write services; whether the entry is valid is the engine's to say.
``add_entry_issues`` puts the service's issues on the fields they name, in words: a key that
does not fit is explained, not shown as a regular expression.
"""

import re

from django import forms

from profiles.workspace.validation import field_for_path

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


def key_field(source: str) -> forms.CharField:
    """Return a new entry's key field, suggested from the field whose id is ``source``."""
    return forms.CharField(
        label="Key",
        max_length=64,
        help_text=KEY_HELP + " Suggested from the name.",
        widget=forms.TextInput(
            attrs={"data-key-from": source, "autocomplete": "off", "spellcheck": "false"}
        ),
    )


def lock_key(form: forms.Form) -> None:
    """Show the key of a stored entry without letting it change (URLs and rules use it)."""
    if "key" in form.fields:
        form.fields["key"].disabled = True
        form.fields["key"].help_text = "The key names the entry in rules, URLs and the API."
        form.fields["key"].widget.attrs.pop("data-key-from", None)

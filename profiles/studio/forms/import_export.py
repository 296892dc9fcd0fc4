"""The workspace file's upload form (import), and the text of an uploaded file."""

from django import forms
from django.conf import settings


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

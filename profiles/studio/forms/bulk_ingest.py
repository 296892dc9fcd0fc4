"""A layer's bulk ingest: the upload form of a batch of item operations."""

from django import forms
from django.conf import settings

from profiles.material.bulk_ingest import batch_is_ndjson
from profiles.studio.forms.import_export import uploaded_text


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

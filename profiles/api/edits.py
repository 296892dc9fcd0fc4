"""Single-object writes through the import path: one validation, one writer, all-or-nothing.

A write takes the stored workspace document, changes one entry, and imports the result with
``workspace_import(mode="replace")``: the engine validates the whole document (errors carry
paths such as ``profiles[3].rules.kb.mode``), only the rows that differ are written (with
history), and the content version is bumped so the next resolve sees the change.

API writes are serialized on the ``WorkspaceVersion`` row, so two of them never start from
the same stale document. (These functions are services; they belong in profiles.services.)
"""

import hashlib
import json
from collections.abc import Callable

from django.db import transaction

from profiles.mappers import json_safe, map_rows_to_document
from profiles.models import WorkspaceVersion
from profiles.selectors import workspace_rows_get
from profiles.services import ImportSummary, workspace_import
from profiles.validation import WorkspaceValidationError
from resolver import ValidationIssue


def document_etag(document) -> str:
    """Return a strong ETag of a document (the same scheme as ``profiles.concurrency``)."""
    text = json.dumps(json_safe(document), sort_keys=True, separators=(",", ":"))
    return '"' + hashlib.sha256(text.encode()).hexdigest()[:32] + '"'


def workspace_writes_lock() -> None:
    """Block other API writers until this transaction ends (call inside ``atomic``)."""
    if not WorkspaceVersion.objects.select_for_update().filter(pk=1).exists():
        WorkspaceVersion.bump()
        WorkspaceVersion.objects.select_for_update().filter(pk=1).exists()


class EntryInvalid(WorkspaceValidationError):
    """A write's validation issues, with ``field`` relative to the request body."""

    def __init__(self, issues: list[ValidationIssue], prefix: str | None):
        super().__init__(issues)
        self.prefix = prefix

    def as_dict(self) -> dict:
        body = super().as_dict()
        first = body["error"]["path"]
        if self.prefix and (first == self.prefix or first.startswith(self.prefix)):
            body["error"]["field"] = first[len(self.prefix) :].lstrip(".")
        return body


def workspace_document_change(
    change: Callable[[dict], str | None], *, user=None, check: Callable[[], None] | None = None
) -> ImportSummary:
    """Apply ``change`` to the stored document and save the result, all-or-nothing.

    ``change(document)`` edits the document in place and returns the path of the entry it
    edited (``layers[2]``), used to name the field of an error. ``check()`` runs after the
    lock, before the document is read (an If-Match comparison). Raise ``EntryInvalid``.
    """
    with transaction.atomic():
        workspace_writes_lock()
        if check is not None:
            check()
        document = map_rows_to_document(workspace_rows_get())
        prefix = change(document)
        try:
            return workspace_import(document=document, mode="replace", user=user)
        except WorkspaceValidationError as exc:
            raise EntryInvalid(exc.issues, prefix) from exc

"""The import of a workspace document: all-or-nothing, in bulk (``workspace_import``).

An import takes the writers' lock like every single-entry write, so two imports (or an import
and an edit) never interleave: the result is one of them applied after the other. Rows whose
values do not change are not written; the layers whose material changed get a new content
token, and the version is bumped explicitly once for the whole import.

The file is parsed and checked in ``profiles.import_export.documents``; the stored rows are
made equal to it, phase by phase, in ``profiles.import_export.synchronization``.
"""

from django.utils import timezone

from profiles.activity.records import activity_record_many
from profiles.import_export.documents import import_target, workspace_parse
from profiles.import_export.import_summary import ImportSummary
from profiles.import_export.synchronization import workspace_synchronize
from profiles.models import ActivityOrigin
from profiles.versioning.protection import protection_check
from profiles.versioning.versions import WriteOrigin, profile_versions_record
from profiles.workspace.bulk_writes import BulkWriter
from profiles.workspace.concurrency import workspace_write
from profiles.workspace.derived import Written
from profiles.workspace.entity_changes import workspace_entity_changes
from profiles.workspace.mappers import canonical_string, map_values_to_document
from profiles.workspace.origin import origin_of
from profiles.workspace.selectors import workspace_values_get
from profiles.workspace.writing import author, workspace_changed

IMPORT_MODES = ("merge", "replace")


def workspace_import(
    *,
    document: dict | None = None,
    text: str | None = None,
    mode: str = "merge",
    user=None,
    origin: WriteOrigin | None = None,
) -> ImportSummary:
    """Import a workspace document (or its YAML/JSON text) all-or-nothing, in one transaction.

    ``merge`` (default) upserts consumers, layers and profiles by key and items by path; a
    profile in the file gets exactly the file's rules. ``replace`` also deletes what the file
    does not contain. A document with any error writes nothing: WorkspaceImportError carries
    every issue with its path in the file. Rows whose values do not change are not written,
    so importing the same file twice changes nothing (no history entry, no version bump).
    The import holds the writers' lock from before it reads the stored rows until it commits.
    ``origin`` is on whose behalf its profile versions are written (None: the user's).
    """
    if mode not in IMPORT_MODES:
        raise ValueError(f"unknown import mode {mode!r} (use merge or replace)")
    if (document is None) == (text is None):
        raise ValueError("give either document or text")
    if text is not None:
        document = workspace_parse(text=text)

    summary = ImportSummary(mode=mode)
    origin = origin_of(origin, ActivityOrigin.IMPORT)
    with workspace_write():
        stored = workspace_values_get()
        target = import_target(stored, document, mode=mode)
        changes = workspace_entity_changes(map_values_to_document(stored), target)
        # Safe change: what can change a protected answer needs a change request (profiles
        # too are refused below, where their versions are recorded).
        protection_check(changes, user=user, origin=origin)
        writer = BulkWriter(user=author(origin.author or user), now=timezone.now())
        written: dict[tuple[int, str], Written] = {}
        changed_layers = workspace_synchronize(
            stored, target, writer=writer, summary=summary, written=written
        )
        if summary.changed:
            counts = summary.counts
            profiles_changed = any(
                counts[kind][action]
                for kind in ("consumers", "profiles", "rules")
                for action in ("created", "updated", "deleted")
            )
            workspace_changed(layers=changed_layers, profiles=profiles_changed, written=written)
            if profiles_changed:
                # Safe change: a version per changed profile; protected environments refuse.
                profile_versions_record(
                    keys=[profile.key for profile in stored.profiles]
                    + [canonical_string(entry["key"]) for entry in target.get("profiles") or []],
                    user=user,
                    origin=origin,
                )
            # Profiles are logged where their versions are recorded.
            activity_record_many(
                (change for change in changes if change.kind != "profile"),
                user=user,
                origin=origin,
            )
    return summary

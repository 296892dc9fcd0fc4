"""History's rows: what each version is (a save, an import, a restore, an applied change
request…), what it changed against the version before, and why (its message).

No ORM here: the history view reads a page of versions and the one before the page.
"""

import json

from profiles.models import ActivityOrigin, ProfileVersion
from profiles.versioning.versions import document_changes

# How many changes a row names before "and N more" (the diff above lists them all).
CHANGES_NAMED = 3

# A value longer than this is cut in a row (the diff above shows it whole).
VALUE_SHOWN = 60

# A write's door, as History says it ("Saved in the studio", "Created by a workspace import").
DOOR_WORDS = {
    ActivityOrigin.STUDIO: "in the studio",
    ActivityOrigin.API: "through the API",
    ActivityOrigin.ADMIN: "in the admin",
    ActivityOrigin.IMPORT: "by a workspace import",
    ActivityOrigin.BULK: "by a bulk ingest",
    ActivityOrigin.CLI: "from the command line",
}


def _shown(value) -> str:
    if value is None:
        return "default"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= VALUE_SHOWN else text[: VALUE_SHOWN - 1] + "…"


def _change_words(change: dict) -> str:
    """Return one change as History's row names it ("budget 1200 → 1500", "kb.maxItems 5 → 3",
    "rule for kb added")."""
    path = change["path"]
    if path.startswith("rules.") and path.count(".") == 1:
        layer = path.removeprefix("rules.")
        if change["from"] is None:
            return f"rule for {layer} added"
        if change["to"] is None:
            return f"rule for {layer} removed"
    return f"{path.removeprefix('rules.')} {_shown(change['from'])} → {_shown(change['to'])}"


def version_kind(version: ProfileVersion, previous: ProfileVersion | None) -> str:
    """Return what kind of version this is, in words (the change request's link and the
    approvers are the template's)."""
    if version.document is None:
        return "Deleted"
    if version.source == ProfileVersion.Source.CHANGE_REQUEST:
        # The template links "change request #N" after it, while the request exists.
        return "Applied" if version.change_request_id else "Applied a change request"
    if version.source == ProfileVersion.Source.RESTORE:
        return f"Restored from version {version.restored_from}"
    if version.source == ProfileVersion.Source.RESET:
        return "Reset by an operator (load_demo --reset)"
    if version.source == ProfileVersion.Source.MIGRATION:
        return "The profile as it was when versions began"
    created = previous is None or previous.document is None
    verb = "Created" if created else "Saved"
    door = DOOR_WORDS.get(version.door)
    return f"{verb} {door}" if door else verb


def version_rows(versions: list[ProfileVersion], before: ProfileVersion | None) -> list[dict]:
    """Return one row per version (newest first, as given): the version, its kind, the
    changes named (at most ``CHANGES_NAMED``) and how many more. ``before``: the version
    just before the oldest one given (None: that one is the first)."""
    rows = []
    for index, version in enumerate(versions):
        previous = versions[index + 1] if index + 1 < len(versions) else before
        changes = []
        if version.document is not None and version.source != ProfileVersion.Source.MIGRATION:
            changes = document_changes(previous.document if previous else None, version.document)
            if previous is None or previous.document is None:
                changes = []  # a creation: every field is new, the kind says it
        rows.append(
            {
                "version": version,
                "kind": version_kind(version, previous),
                "changes": [_change_words(change) for change in changes[:CHANGES_NAMED]],
                "more": max(0, len(changes) - CHANGES_NAMED),
            }
        )
    return rows

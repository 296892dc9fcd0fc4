"""An import's dry run and its proposal as a change set (issue 21).

The dry run answers what an import of a file would do, writing nothing: the entity changes
(each with its field diff, ``profiles.workspace.entity_changes``), their counts, the profiles
whose answer may change and the impact on every saved scenario of those profiles (the
workspace now against the workspace the import leaves). It reads the stored rows without the
writers' lock: it is what the import would do *now*, and the import itself checks again.

A file that touches protected profiles is refused by a plain import (``409
CHANGE_REQUEST_REQUIRED``); ``workspace_import_propose`` opens it as one change set instead
(``profiles.safechange.change_sets``), whose application leaves the workspace the import would
have.
"""

from dataclasses import dataclass, field

from profiles.import_export.documents import import_target, workspace_parse
from profiles.import_export.imports import IMPORT_MODES
from profiles.models import ChangeRequest
from profiles.safechange.change_set_documents import set_affected_profiles
from profiles.safechange.change_sets import change_set_create, change_set_from_entity_changes
from profiles.safechange.impact import impact_summary, workspace_impact
from profiles.versioning.protection import protected_profiles_affected
from profiles.workspace import cache
from profiles.workspace.entity_changes import KINDS, OPS, EntityChange, workspace_entity_changes
from profiles.workspace.mappers import map_values_to_document
from profiles.workspace.selectors import workspace_values_get
from resolver import WorkspaceError, compile_workspace

# One answer lists at most this many entity changes (``offset`` pages through the others;
# the counts are always exact).
DRY_RUN_CHANGES_LISTED = 500


@dataclass(frozen=True)
class ImportPreview:
    """What an import would change; ``protected``: the protected profiles it touches (a
    plain import of the file is refused: propose it as a change set)."""

    mode: str
    changes: list[EntityChange]
    affected: list[str]
    protected: list[str]
    impact: list[dict] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, dict[str, int]]:
        counts = {kind: dict.fromkeys(OPS, 0) for kind in KINDS}
        for change in self.changes:
            counts[change.kind][change.op] += 1
        return counts

    def as_dict(self, *, offset: int = 0, limit: int = DRY_RUN_CHANGES_LISTED) -> dict:
        """Return the dry run's answer with the changes from the ``offset``-th on."""
        listed = self.changes[offset : offset + limit]
        return {
            "mode": self.mode,
            "counts": self.counts,
            "changes": [change.as_dict() for change in listed],
            "offset": offset,
            "moreChanges": max(0, len(self.changes) - offset - len(listed)),
            "affectedProfiles": self.affected,
            "protectedProfiles": self.protected,
            "summary": impact_summary(self.impact).as_dict(),
            "impact": self.impact,
        }


def _document(document, text):
    if (document is None) == (text is None):
        raise ValueError("give either document or text")
    return workspace_parse(text=text) if text is not None else document


def _import_changes(document, mode: str) -> tuple[dict, dict, list[EntityChange]]:
    if mode not in IMPORT_MODES:
        raise ValueError(f"unknown import mode {mode!r} (use merge or replace)")
    values = workspace_values_get()
    stored = map_values_to_document(values)
    target = import_target(values, document, mode=mode)
    return stored, target, workspace_entity_changes(stored, target)


def _compiled(snapshot, target: dict, changes: list[EntityChange]):
    touched = {change.key for change in changes if change.kind in ("layer", "item")}
    tokens = {copy.key: copy.label for copy in snapshot.layers.values() if copy.key not in touched}
    return compile_workspace(target, previous=snapshot.compiled, tokens=tokens)


def workspace_import_preview(
    *, document=None, text=None, mode: str = "merge", impact_offset: int = 0
) -> ImportPreview:
    """Return what importing the document (or its YAML/JSON text) would do; write nothing.

    Raises WorkspaceImportError (every issue at its path in the file) as the import does.
    The impact resolves at most ``IMPACT_MAX_RESOLUTIONS`` times, from the
    ``impact_offset``-th scenario on.
    """
    document = _document(document, text)
    stored, target, changes = _import_changes(document, mode)
    affected = set_affected_profiles(stored, target, changes)
    impact = []
    if affected:
        snapshot = cache.workspace_get()
        try:
            after = _compiled(snapshot, target, changes)
        except WorkspaceError:  # import_target validated it: the engine agrees
            after = compile_workspace(target)
        impact = workspace_impact(
            profiles=affected, before=snapshot.compiled, after=after, offset=impact_offset
        )
    return ImportPreview(
        mode=mode,
        changes=changes,
        affected=affected,
        protected=protected_profiles_affected(changes),
        impact=impact,
    )


def workspace_import_propose(
    *, document=None, text=None, mode: str = "merge", user, title=None, description=""
) -> ChangeRequest:
    """Open the import of the document as one change set (creates with their whole entry,
    updates with the changed fields, deletes); its application leaves the workspace the
    import would have. Raises WorkspaceImportError, and ChangeSetInvalid for a file that
    changes nothing or more entities than a set holds."""
    document = _document(document, text)
    _, _, changes = _import_changes(document, mode)
    return change_set_create(
        title=title,
        description=description,
        changes=change_set_from_entity_changes(changes),
        user=user,
    )

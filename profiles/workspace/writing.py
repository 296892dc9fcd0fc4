"""The steps every single-entry write shares: errors in the wire shape, rows saved with their
history and author, database conflicts explained, and the content tokens bumped explicitly."""

from collections.abc import Iterable, Mapping

from django.db.models import F

from profiles.models import (
    Consumer,
    Item,
    ItemChange,
    Layer,
    Profile,
    Scenario,
    Tracked,
    WorkspaceVersion,
    new_token,
)
from profiles.workspace import replica
from profiles.workspace.derived import Written, derived_written, item_count_deltas
from profiles.workspace.item_change_log import item_changes_record
from profiles.workspace.selectors import entry_path
from profiles.workspace.served import request_reads_forget, served_layer
from profiles.workspace.validation import WorkspaceValidationError, duplicate_issues
from resolver import ValidationIssue


class Conflict(Exception):
    """The write conflicts with stored data (a key taken, a row still in use); nothing changed."""

    def __init__(self, message: str, path: str = ""):
        super().__init__(message)
        self.message = message
        self.path = path


class EntryInvalid(WorkspaceValidationError):
    """A single-entry write's validation issues, at their document paths (``layers[2].name``).

    ``prefix`` is the entry's own path; ``field_issues`` gives the paths relative to it.
    """

    def __init__(self, issues: list[ValidationIssue], prefix: str | None):
        super().__init__(issues)
        self.prefix = prefix

    @classmethod
    def at(cls, issues: list[ValidationIssue], row) -> "EntryInvalid":
        """Return the error of entry-relative ``issues`` of ``row`` (saved or about to be)."""
        prefix = entry_path(row)
        absolute = [
            ValidationIssue(
                prefix if not issue.path else f"{prefix}{_joiner(issue.path)}{issue.path}",
                issue.message,
            )
            for issue in issues
        ]
        return cls(absolute, prefix)

    def _relative(self, path: str) -> str | None:
        prefix = self.prefix
        if prefix and (path == prefix or path.startswith((prefix + ".", prefix + "["))):
            return path[len(prefix) :].lstrip(".")
        return None

    @property
    def field_issues(self) -> list[ValidationIssue]:
        """Return the issues with paths relative to the entry ("" = the entry as a whole)."""
        return [
            ValidationIssue(self._relative(issue.path) or "", issue.message)
            for issue in self.issues
        ]

    def as_dict(self) -> dict:
        body = super().as_dict()
        field = self._relative(body["error"]["path"])
        if field:
            body["error"]["field"] = field
        return body


def _joiner(path: str) -> str:
    return "" if path.startswith("[") else "."


def raise_if_invalid(issues: list[ValidationIssue], row) -> None:
    """Raise ``EntryInvalid`` for the entry-relative ``issues`` of ``row``, if any."""
    if issues:
        raise EntryInvalid.at(issues, row)


def author(user):
    """Return the user to record as author (None for anonymous or no user)."""
    return user if getattr(user, "is_authenticated", False) else None


def save_row(row, *, user) -> None:
    """Save one row with its author and a history record naming the user."""
    user = author(user)
    if isinstance(row, Tracked):
        if row._state.adding:
            row.created_by = user
        row.updated_by = user
    row._history_user = user
    row.save()


def delete_row(row, *, user) -> None:
    """Delete one row (and what cascades from it), recording the user in the history."""
    row._history_user = author(user)
    row.delete()


def assign(row, values: dict) -> list[str]:
    """Set the values that differ on the row; return the names of the fields changed."""
    changed = [name for name, value in values.items() if getattr(row, name) != value]
    for name in changed:
        setattr(row, name, values[name])
    return changed


def workspace_changed(
    *,
    layers: Iterable[Layer | int] = (),
    items: Iterable[tuple[int, str, str]] = (),
    profiles: bool = False,
    written: Mapping[tuple[int, str], Written] | None = None,
    moved: Iterable[tuple[int, str, str]] = (),
) -> None:
    """Bump the workspace version, the content token of ``layers`` and, with ``profiles``,
    the token of consumers, profiles and rules. Call inside the write's transaction.

    ``items`` are the (layer id, path, op) of single-item writes (``ItemChange.Op``): their
    layers' tokens are bumped too, and the item change log lets each worker re-read just
    those items. The items of ``layers`` count as rewritten: workers re-read those layers.
    What is derived from items (counts, analysed terms, filter keys) is written here too
    (``profiles.workspace.derived``), and after any layer write: a changed ``itemFilter``
    has its keys written again. ``written`` gives items as the write stored them, by
    (layer id, path), so that deriving does not read them back (``derived.Written``).

    ``moved`` are the (layer id, old path, new path) of items whose path changed in place: a
    worker holding such a layer reads it again (the item keeps its place, which the change
    log's item entries do not say), while the derived rows are written again for the two
    paths only, so a move in a served layer of a million items costs what the item costs.

    A write of served layers' items only (``profiles.workspace.served``) leaves the held
    token (``WorkspaceVersion.held_token``) as it was: no worker holds those items, so none
    catches up; each request reads the layer's count and its customer's keys instead.
    """
    request_reads_forget()
    rewritten = {layer.pk if isinstance(layer, Layer) else layer for layer in layers}
    items = list(items)
    moved = list(moved)
    reread = rewritten | {layer_id for layer_id, _, _ in moved}
    moves = [
        entry
        for layer_id, old, new in moved
        for entry in ((layer_id, old, ItemChange.Op.DELETE), (layer_id, new, ItemChange.Op.CREATE))
    ]
    # One update a layer: its token, and its item count where items came or went.
    deltas = item_count_deltas(items + moves, rewritten)
    for layer_id in reread | {layer_id for layer_id, _, _ in items}:
        moved_count = {"items_counted": F("items_counted") + deltas[layer_id]}
        Layer.objects.filter(pk=layer_id).update(
            content_token=new_token(), **(moved_count if deltas[layer_id] else {})
        )
    item_changes_record(items=items, layers=sorted(reread))
    filters = derived_written(items=items + moves, layers=rewritten, written=written)
    touched = {layer_id for layer_id, _, _ in items + moves}
    served = {layer_id for layer_id in touched if served_layer(filters.get(layer_id))}
    held = bool(profiles or rewritten or not touched or touched - served)
    WorkspaceVersion.bump(profiles=profiles, held=held)
    replica.write_recorded()


def conflict_for(row) -> Exception:
    """Return the error to raise when the database refused to store ``row`` (IntegrityError).

    Called after the write's transaction rolled back: it looks up which stored row conflicts.
    """
    duplicates = duplicate_issues(row)
    if not duplicates:
        return Conflict("the change conflicts with stored data")
    field, message = duplicates[0]
    if field is None:  # the profile selection is a validation error of the document
        return EntryInvalid.at([ValidationIssue("", message)], row)
    if isinstance(row, Item):
        return Conflict(
            f'path: item "{row.path}" already exists in layer "{row.layer.key}"', "path"
        )
    if isinstance(row, Consumer | Layer | Profile):
        kind = type(row)._meta.model_name
        return Conflict(f'key: {kind} "{row.key}" already exists', "key")
    if isinstance(row, Scenario):
        return Conflict(f'name: scenario "{row.name}" already exists', "name")
    return Conflict(message, field)

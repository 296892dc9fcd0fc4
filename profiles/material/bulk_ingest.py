"""Bulk ingest: many item upserts and deletes of one layer in one write (a helpdesk sync).

A batch is a list of operations, read from NDJSON (one JSON object a line; blank lines are
skipped) or from a JSON array (``bulk_ingest_parse``):

* ``{"op": "upsert", "item": {...}}`` — the item document as a single item write takes it
  (``path``, ``title``, ``body``, ``metadata``); it becomes the whole item at that path
  (created, or replaced like a ``PUT``: fields left out go back to their defaults). A plain item
  object (no ``op``) means the same;
* ``{"op": "delete", "path": "..."}`` — the item at that path is deleted (a path not stored
  is already deleted: nothing to do).

``items_bulk_ingest`` writes a batch all or nothing: every line is validated with the single
item write's own validation (``validate_item``) and a batch with any bad line writes nothing;
each issue names the operation (``[16].item.metadata.customer_id``), the line and the column.
It is idempotent by path: items whose stored values already equal the batch's are not
written, and sending the same batch again changes nothing, records nothing.

O(batch), never O(layer): one read of the batch's stored paths (per ``DELETE_BATCH`` paths),
then rows, history records, item change log entries and activity entries written in bulk
(``BulkWriter``, ``workspace_changed``, ``activity_record_many``). A governed layer that
protected profiles read is refused as its single item writes are (``protection_check``).
"""

import contextlib
from dataclasses import dataclass, field, replace

from django.conf import settings
from django.db import connection
from django.db.models import BooleanField
from django.db.models.expressions import RawSQL
from django.utils import timezone

from profiles.activity.records import activity_fields_encoded, activity_record_many
from profiles.models import ActivityOrigin, Item, ItemChange, Layer
from profiles.versioning.protection import protection_check
from profiles.workspace.bulk_writes import DELETE_BATCH, BulkWriter
from profiles.workspace.concurrency import WriteConflict, workspace_write
from profiles.workspace.derived import Written
from profiles.workspace.entity_changes import EntityChange
from profiles.workspace.mappers import map_item_columns_to_resolver, map_item_values
from profiles.workspace.origin import WriteOrigin, origin_of
from profiles.workspace.selectors import layer_get
from profiles.workspace.validation import WorkspaceValidationError, validate_item
from profiles.workspace.writing import author, workspace_changed
from resolver import RequestError, ValidationIssue
from resolver.analysis import item_terms, pack_terms
from resolver.documents import load_json
from resolver.limits import MAX_DOCUMENT_DEPTH
from resolver.locations import locate_issues

Op = ItemChange.Op

UPSERT = "upsert"
DELETE = "delete"
OPERATIONS = (UPSERT, DELETE)
# An operation's own fields (a line without ``op`` is an item document).
_FIELDS = {UPSERT: ("op", "item"), DELETE: ("op", "path")}
# Issues located in the text (line and column); the others keep the line only.
LOCATED_ISSUES = 100
# The item fields a bulk write compares and writes (``map_item_values``).
ITEM_VALUES = ("path", "title", "body", "metadata")


def bulk_ingest_max_lines() -> int:
    """Return the most operations one request may carry (``BULK_INGEST_MAX_LINES``)."""
    return settings.BULK_INGEST_MAX_LINES


class BatchInvalid(WorkspaceValidationError):
    """The batch has bad lines; nothing was written. Each issue names the operation
    (``[16].item.metadata.customer_id``), its line and column in the body."""


class BatchNotReadable(Exception):
    """The body is not a batch at all (not UTF-8, not a JSON array); nothing was written."""


class BatchTooLarge(Exception):
    """The batch has more operations than one request (or one background job) may carry;
    nothing was written."""

    def __init__(self, count: int, limit: int, *, job: bool = False):
        self.count, self.limit = count, limit
        if job:
            message = (
                f"the batch has {count:,} operations, more than the {limit:,} one background "
                f"job may carry (BULK_INGEST_JOB_MAX_LINES): split it into batches of at most "
                f"{limit:,}; nothing was written"
            )
        else:
            message = (
                f"the batch has {count:,} operations, more than the {limit:,} one request may "
                f"carry (BULK_INGEST_MAX_LINES): split it into batches of at most {limit:,} and "
                "send them one after another, or send it with background=true (a job with "
                "progress); nothing was written"
            )
        super().__init__(message)


@dataclass(frozen=True)
class Operation:
    """One operation of a batch: its position (``index``, 0-based) and line (1-based)."""

    index: int
    line: int | None  # None in a JSON array (found when an issue needs it)
    op: str
    path: str
    item: dict | None = None  # the item document of an upsert
    prefix: str = ""  # the document path of the item in the line: "[3].item" or "[3]"
    values: dict | None = None  # an upsert's stored values (``map_item_values``)


@dataclass
class IngestSummary:
    """What a batch did, counted per operation."""

    layer: str
    operations: int = 0
    created: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    changes: list[EntityChange] = field(default_factory=list, repr=False)

    @property
    def applied(self) -> int:
        """The operations counted so far (created, updated, deleted or unchanged)."""
        return self.created + self.updated + self.deleted + self.unchanged

    def as_dict(self) -> dict:
        return {
            "layer": self.layer,
            "operations": self.operations,
            "created": self.created,
            "updated": self.updated,
            "deleted": self.deleted,
            "unchanged": self.unchanged,
        }


# --- reading a batch ---------------------------------------------------------------------


def _joined(prefix: str, path: str) -> str:
    if not path:
        return prefix
    return f"{prefix}{path}" if path.startswith("[") else f"{prefix}.{path}"


def batch_is_ndjson(text: str) -> bool:
    """Return whether a batch file is NDJSON: a JSON array starts with "[" (after any blank
    space), an NDJSON line with "{". A file's name and content type are not asked (browsers
    send ``.ndjson`` files as ``application/octet-stream``): the studio's upload and
    ``manage.py import_workspace --items`` read a file by this rule."""
    return not text.lstrip().startswith("[")


def _raw_lines(
    text: str, *, ndjson: bool, limit: int, job: bool
) -> list[tuple[int | None, object]]:
    """Return the batch's (line, value) pairs; values the JSON reader refused are a
    ``RequestError`` (NDJSON: that line's). More than ``limit`` operations: ``BatchTooLarge``."""
    if ndjson:
        lines = [
            (number, line) for number, line in enumerate(text.split("\n"), start=1) if line.strip()
        ]
        if len(lines) > limit:  # counted before a line is read
            raise BatchTooLarge(len(lines), limit, job=job)
        values = []
        for number, line in lines:
            try:
                values.append((number, _load(line)))
            except RequestError as exc:
                values.append((number, exc))
        return values
    try:
        document = _load(text)
    except RequestError as exc:
        raise BatchNotReadable(str(exc)) from None
    if not isinstance(document, list):
        raise BatchNotReadable(
            "send a JSON array of operations (or NDJSON, application/x-ndjson: one a line)"
        )
    if len(document) > limit:
        raise BatchTooLarge(len(document), limit, job=job)
    return [(None, value) for value in document]  # located when an issue needs a line


def _load(text: str) -> object:
    return load_json(text, max_depth=MAX_DOCUMENT_DEPTH, allow_nan=False)


def _operation(index: int, line: int | None, value: object) -> tuple[Operation | None, list]:
    """Return the operation a line gives, or the issues that keep it from being one (paths
    from the batch: ``[index]…``)."""
    at = f"[{index}]"
    if isinstance(value, RequestError):
        return None, [ValidationIssue(at, str(value))]
    if not isinstance(value, dict):
        return None, [ValidationIssue(at, "must be an object (an operation or an item)")]
    if "op" not in value:  # a plain item: an upsert
        op, item, prefix = UPSERT, value, at
    else:
        op = value["op"]
        if op not in OPERATIONS:
            return None, [ValidationIssue(f"{at}.op", 'must be "upsert" or "delete"')]
        unknown = [name for name in value if name not in _FIELDS[op]]
        if unknown:
            message = f"unknown field (a {op} has " + " and ".join(_FIELDS[op]) + ")"
            return None, [ValidationIssue(_joined(at, str(name)), message) for name in unknown]
        if op == UPSERT:
            item, prefix = value.get("item"), f"{at}.item"
            if not isinstance(item, dict):
                return None, [ValidationIssue(prefix, "must be an object (the item)")]
        else:
            item, prefix = {"path": value.get("path")}, at
    issues = [
        ValidationIssue(_joined(prefix, issue.path), issue.message) for issue in validate_item(item)
    ]
    if issues:
        return None, issues
    values = map_item_values(item)
    if op == UPSERT:
        return Operation(index, line, op, values["path"], item, prefix, values), []
    return Operation(index, line, op, values["path"], None, prefix), []


def bulk_ingest_parse(
    *, text: str, ndjson: bool, layer: str = "", job: bool = False
) -> list[Operation]:
    """Return the operations of a batch (NDJSON, else a JSON array), each validated as a
    single item write validates its item; raise ``BatchNotReadable``, ``BatchTooLarge`` (more
    than ``BULK_INGEST_MAX_LINES``, or for a background ``job`` ``BULK_INGEST_JOB_MAX_LINES``)
    or ``BatchInvalid`` (every bad line, with its line and column; a path given twice is one).

    ``layer`` names the items in the issues (``item tickets/T-17``).
    """
    operations, issues = [], []
    lines_of: dict[str, tuple[int, int | None]] = {}
    limit = settings.BULK_INGEST_JOB_MAX_LINES if job else bulk_ingest_max_lines()
    for index, (line, value) in enumerate(_raw_lines(text, ndjson=ndjson, limit=limit, job=job)):
        operation, found = _operation(index, line, value)
        entry = _entry_name(value, layer)
        for issue in found:
            issues.append(replace(issue, line=line, entry=entry))
        if operation is None:
            continue
        if operation.path in lines_of:
            first, first_line = lines_of[operation.path]
            where = f"[{first}]" + (f", line {first_line}" if first_line else "")
            issues.append(
                ValidationIssue(
                    _joined(operation.prefix, "path"),
                    f"the batch gives this path twice (first at {where}): one operation a path",
                    entry=entry,
                    line=line,
                )
            )
            continue
        lines_of[operation.path] = (index, line)
        operations.append(operation)
    if issues:
        raise BatchInvalid(_located(issues, text, ndjson=ndjson))
    return operations


def _entry_name(value: object, layer: str) -> str | None:
    """Return the item a line concerns (``item tickets/T-17``), None when it names none."""
    if not isinstance(value, dict):
        return None
    item = value.get("item") if value.get("op") == UPSERT else value
    path = item.get("path") if isinstance(item, dict) else None
    # A path longer than any stored one is not repeated (its issue says it is too long).
    named = isinstance(path, str) and len(path) <= Item._meta.get_field("path").max_length
    return f"item {layer}/{path}" if named and layer else None


def _located(issues: list[ValidationIssue], text: str, *, ndjson: bool) -> list[ValidationIssue]:
    """Return the issues with their line and column in the text (the first
    ``LOCATED_ISSUES`` of them; the others keep the line they have)."""
    head, rest = issues[:LOCATED_ISSUES], issues[LOCATED_ISSUES:]
    if ndjson:
        lines = text.split("\n")
        located = []
        for issue in head:
            line = lines[issue.line - 1]
            # The issue's path inside its line: "[16].item.title" -> "item.title".
            inner = issue.path.partition("]")[2].removeprefix(".")
            column = None
            if inner:
                (found,) = locate_issues(line, [replace(issue, path=inner)])
                column = found.column
            located.append(replace(issue, column=column or len(line) - len(line.lstrip()) + 1))
    else:
        found = locate_issues(text, head)
        # The batch's paths are no workspace document's: keep the item each issue named.
        located = [
            replace(issue, entry=kept.entry) for issue, kept in zip(found, head, strict=True)
        ]
    return located + rest


# --- writing a batch -----------------------------------------------------------------------


def _stored(layer: Layer, paths: list[str]) -> dict[str, dict]:
    """Return the stored items of ``layer`` at ``paths`` (id and tracked values), by path:
    whatever the size of the layer, one query on PostgreSQL (the paths as one array
    parameter), one per ``DELETE_BATCH`` paths elsewhere (SQLite's limit of variables)."""
    tracked = [name.attname for name in Item.history.model.tracked_fields]
    stored = {}
    for rows in _at_paths(layer, paths):
        for row in rows.values(*tracked):
            stored[row["path"]] = row
    return stored


def _stored_paths(layer: Layer, paths: list[str]) -> set[str]:
    """Return which of ``paths`` the layer holds (as ``_stored``, reading the paths only)."""
    return {
        path for rows in _at_paths(layer, paths) for path in rows.values_list("path", flat=True)
    }


def _at_paths(layer: Layer, paths: list[str]) -> list:
    """Return the queries of the layer's items at ``paths``: one on PostgreSQL (the paths as
    one array parameter), one per ``DELETE_BATCH`` paths elsewhere (SQLite's limit of
    variables)."""
    items = Item.objects.filter(layer_id=layer.pk)
    if connection.vendor == "postgresql":
        # 10,000 placeholders cost more to send and plan than the lookups themselves.
        column = (
            f"{connection.ops.quote_name(Item._meta.db_table)}.{connection.ops.quote_name('path')}"
        )
        return [items.filter(RawSQL(f"{column} = ANY(%s)", [paths], BooleanField()))]
    return [
        items.filter(path__in=paths[start : start + DELETE_BATCH])
        for start in range(0, len(paths), DELETE_BATCH)
    ]


def _entry(values: dict) -> dict:
    """Return an item's SPEC §2 entry from its values."""
    return map_item_columns_to_resolver(
        values["path"], values["title"], values["body"], values["metadata"]
    )


def _prepared(
    layer: str, operations: list[Operation]
) -> tuple[dict[str, tuple[dict, bytes]], dict]:
    """Return each upsert's stored values and analysed terms, by path, and the activity
    fields of the items it would create (encoded, by activity key): the batch's costly work,
    done before the writers' lock is taken, so that two batches overlap it.

    Which upserts create is read here too, before the lock; the write decides again under
    it, and fields encoded for a create are used only for what is still a create there."""
    prepared = {}
    for operation in operations:
        if operation.op == UPSERT:
            values = operation.values or map_item_values(operation.item)
            terms = pack_terms(item_terms(values["title"], values["body"]))
            prepared[operation.path] = (values, terms)
    encoded = {}
    with contextlib.suppress(Layer.DoesNotExist):  # said again under the lock
        stored = _stored_paths(layer_get(key=layer), list(prepared))
        for path, (values, _) in prepared.items():
            if path not in stored:
                change = EntityChange("item", layer, None, _entry(values), path=path)
                encoded[("item", layer, path, change.op)] = activity_fields_encoded(change)
    return prepared, encoded


def items_bulk_ingest(
    *,
    layer: str,
    operations: list[Operation],
    user=None,
    origin: WriteOrigin | None = None,
) -> IngestSummary:
    """Apply a parsed batch (``bulk_ingest_parse``) to the layer ``layer`` (a key), all or
    nothing; return what it did. Raise ``Layer.DoesNotExist`` or ``ChangeRequestRequired``
    (a governed layer that protected profiles read, as for its single item writes).

    New items go at the end of the layer, in the batch's order; an updated item keeps its
    place. Items equal to the batch's are not written: no history, no activity, no change.
    """
    origin = origin_of(origin, ActivityOrigin.BULK)
    summary = IngestSummary(layer=layer, operations=len(operations))
    prepared, encoded = _prepared(layer, operations)
    with workspace_write():
        stored_layer = layer_get(key=layer)
        stored = _stored(stored_layer, [operation.path for operation in operations])
        created, updated, deleted, fields = [], [], [], set()
        for operation in operations:
            row = stored.get(operation.path)
            if operation.op == DELETE:
                if row is None:
                    summary.unchanged += 1
                    continue
                deleted.append(row)
                summary.changes.append(
                    EntityChange("item", layer, _entry(row), None, path=operation.path)
                )
                continue
            values = prepared[operation.path][0]
            if row is None:
                created.append(values)
                summary.changes.append(
                    EntityChange("item", layer, None, _entry(values), path=operation.path)
                )
                continue
            changed = [name for name in ITEM_VALUES if row[name] != values[name]]
            if not changed:
                summary.unchanged += 1
                continue
            fields.update(changed)
            updated.append(row | values)
            summary.changes.append(
                EntityChange("item", layer, _entry(row), _entry(values), path=operation.path)
            )
        summary.created, summary.updated, summary.deleted = len(created), len(updated), len(deleted)
        if not summary.changes:
            return summary
        if stored_layer.governed:
            protection_check(summary.changes, user=user, origin=origin)
        now = timezone.now()
        writer = BulkWriter(user=_author(origin, user), now=now)
        ids = []
        if created:
            start = Item(layer=stored_layer)._next_position(
                Item.objects.filter(layer_id=stored_layer.pk)
            )
            ids = writer.create(
                Item,
                [
                    {**values, "layer_id": stored_layer.pk, "position": start + offset}
                    for offset, values in enumerate(created)
                ],
            )
        writer.update(Item, updated, sorted(fields))
        writer.delete(Item, [row["id"] for row in deleted])
        # The stored items as written, with their terms: deriving reads none of them back.
        written = {
            (stored_layer.pk, values["path"]): Written(
                id=item_id,
                title=values["title"],
                body=values["body"],
                metadata=values["metadata"],
                updated_at=now,
                terms=prepared[values["path"]][1],
            )
            for item_id, values in [*zip(ids, created, strict=True), *_ids(updated)]
        }
        ops = {"create": Op.CREATE, "update": Op.UPDATE, "delete": Op.DELETE}
        workspace_changed(
            items=[(stored_layer.pk, change.path, ops[change.op]) for change in summary.changes],
            written=written,
        )
        activity_record_many(summary.changes, user=user, origin=origin, encoded=encoded)
    return summary


# Attempts at one part when another writer held the writers' lock too long (WriteConflict).
PART_ATTEMPTS = 3
# The counts of a summary that add up to the operations applied.
COUNTS = ("created", "updated", "deleted", "unchanged")


class IngestStopped(Exception):
    """A batch written in parts stopped at a part (``cause``); ``summary`` counts the
    operations of the parts written before it (``applied``)."""

    def __init__(self, cause: Exception, summary: IngestSummary):
        super().__init__(str(cause))
        self.cause, self.summary = cause, summary

    @property
    def applied(self) -> int:
        return self.summary.applied


def items_bulk_ingest_in_parts(
    *,
    layer: str,
    operations: list[Operation],
    user=None,
    origin: WriteOrigin | None = None,
    on_part=None,
) -> IngestSummary:
    """Apply a parsed batch of any size (a background job's, a file's) through
    ``items_bulk_ingest``, ``BULK_INGEST_MAX_LINES`` operations at a time, each part its own
    transaction: the writers' lock is never held for the whole batch. ``on_part(summary)``
    is called after each part with the counts so far. A part that fails raises
    ``IngestStopped`` with what the parts before it applied; the batch is idempotent by path,
    so applying it again finishes it."""
    summary = IngestSummary(layer=layer, operations=len(operations))
    size = bulk_ingest_max_lines()
    for start in range(0, len(operations), size):
        try:
            part = _part(layer, operations[start : start + size], user=user, origin=origin)
        except Exception as exc:
            raise IngestStopped(exc, summary) from exc
        for name in COUNTS:
            setattr(summary, name, getattr(summary, name) + getattr(part, name))
        if on_part is not None:
            on_part(summary)
    return summary


def _part(layer: str, operations: list[Operation], *, user, origin) -> IngestSummary:
    for attempt in range(1, PART_ATTEMPTS + 1):
        try:
            return items_bulk_ingest(layer=layer, operations=operations, user=user, origin=origin)
        except WriteConflict:
            if attempt == PART_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _ids(rows: list[dict]) -> list[tuple[int, dict]]:
    return [(row["id"], row) for row in rows]


def _author(origin: WriteOrigin, user):
    return author(origin.author or user)

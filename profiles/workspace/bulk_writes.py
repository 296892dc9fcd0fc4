"""Many rows of one model written at once, each with its history record (the import).

``bulk_create_with_history`` builds a model instance and a historical instance per row and
lets Django compile a parameter for every value: at 50,000 items that was most of an import.
Here rows are plain values and the history records are written next to them with the same
content django-simple-history gives them (every tracked field, ``history_type`` "+" or "~",
the date, the user, no change reason). On PostgreSQL both go through ``COPY`` (up to
``SMALL_INSERT`` rows, a single item's write: one ``INSERT``, one round trip where a ``COPY``
takes two); elsewhere through ``executemany``. Deletions of many items likewise: their
history records ("-") in one write, then one ``DELETE`` per batch of ids, instead of a history
``INSERT`` per row from django-simple-history's delete signal. Primary keys are taken before
the insert (the sequence on PostgreSQL), so the history rows name their rows without reading
them back.

Call inside the write's transaction, under the writers' lock. No model ``save()``, no
signals: exactly what ``bulk_create`` and ``bulk_update`` skip as well.
"""

import functools
import json
import time
from collections.abc import Sequence
from datetime import datetime
from operator import itemgetter
from typing import Any

from django.db import connection, models

from profiles.models import Item

# Ids per DELETE (and per read of the deleted rows): under SQLite's limit of variables.
DELETE_BATCH = 900
# Rows up to which an insert is one INSERT statement rather than a COPY (PostgreSQL).
SMALL_INSERT = 8


def _one_insert(count: int) -> bool:
    """Return whether ``count`` rows go in one ``INSERT`` (PostgreSQL, a few rows: a single
    item's write), which also returns their ids: one round trip where ``COPY`` takes two and
    numbering them first one more."""
    return _postgresql() and count <= SMALL_INSERT


class BulkWriter:
    """Write rows of the workspace models as one author at one moment (``now``)."""

    def __init__(self, *, user, now):
        self.user_id = user.pk if user is not None else None
        self.history_user_id = _history_user_id(user)
        self.at = now  # as given (a datetime): what derived rows record as the rows' date
        # Every date written is this one; SQLite gets it as Django writes it.
        self.now = now if _postgresql() else connection.ops.adapt_datetimefield_value(now)

    def create(self, model, rows: Sequence[dict]) -> list[int]:
        """Insert ``rows`` (field attname -> value); return their new primary keys in order.

        Fields a row does not give take the model's default; ``created_at``/``updated_at``
        are ``now`` and ``created_by``/``updated_by`` the author, as on every save.
        """
        if not rows:
            return []
        returning = _one_insert(len(rows))
        ids = [None] * len(rows) if returning else _new_ids(model, len(rows))
        stamps = self._stamps(model, creating=True)
        columns = [field.attname for field in model._meta.concrete_fields]
        defaults = [
            field
            for field in model._meta.concrete_fields
            if field.attname not in rows[0]
            and field.attname not in stamps
            and field.attname != "id"
        ]
        records = []
        for row_id, row in zip(ids, rows, strict=True):
            record = {"id": row_id, **row, **stamps}
            for field in defaults:
                record[field.attname] = field.get_default()
            records.append(record)
        _as_stored(model, records)
        if returning:
            ids = _insert(
                model, [name for name in columns if name != "id"], records, returning=True
            )
            for record, row_id in zip(records, ids, strict=True):
                record["id"] = row_id
        else:
            _insert(model, columns, records)
        self._history(model, records, "+")
        return ids

    def update(self, model, rows: Sequence[dict], fields: Sequence[str]) -> None:
        """Set ``fields`` of each row (``rows`` give ``id`` and every tracked field, as the
        row is after the change) and record the changed rows' history."""
        if not rows:
            return
        stamps = self._stamps(model, creating=False)
        records = [{**row, **stamps} for row in rows]
        _as_stored(model, records)
        _update(model, [*fields, *(name for name in stamps if name not in fields)], records)
        self._history(model, records, "~")

    def delete(self, model, ids: Sequence[int]) -> int:
        """Delete the rows ``ids`` with their history records ("-", the values as stored);
        return how many were deleted.

        For rows that nothing references but history (items): no cascade, no signal.
        """
        referencing = [
            relation
            for relation in model._meta.related_objects
            if relation.on_delete is not models.DO_NOTHING
        ]
        if referencing:
            raise ValueError(f"{model.__name__} rows are referenced: delete them with the ORM")
        tracked = [field.attname for field in model.history.model.tracked_fields]
        deleted = 0
        for start in range(0, len(ids), DELETE_BATCH):
            batch = list(ids[start : start + DELETE_BATCH])
            rows = model._base_manager.filter(pk__in=batch).order_by("pk").values(*tracked)
            records = list(rows)
            _as_stored(model, records)
            self._history(model, records, "-")
            deleted += _delete(model, batch)
        return deleted

    def _history(self, model, records: list[dict], history_type: str) -> None:
        """Record the rows as django-simple-history would (``records`` as stored)."""
        historical = model.history.model
        tracked = [field.attname for field in historical.tracked_fields]
        extra = {
            "history_date": _copy_value(self.now),
            "history_change_reason": None,
            "history_type": history_type,
            "history_user_id": self.history_user_id,
        }
        get = itemgetter(*tracked)
        entries = [(*get(record), *extra.values()) for record in records]
        _insert(historical, [*tracked, *extra], entries)

    def _stamps(self, model, *, creating: bool) -> dict[str, Any]:
        names = {field.attname for field in model._meta.concrete_fields}
        stamps = {}
        if "updated_at" in names:
            stamps["updated_at"] = self.now
        if creating and "created_at" in names:
            stamps["created_at"] = self.now
        if "updated_by_id" in names:
            stamps["updated_by_id"] = self.user_id
        if creating and "created_by_id" in names:
            stamps["created_by_id"] = self.user_id
        return stamps


def rows_insert(model, rows: Sequence[dict], *, numbered: bool = False) -> list[int]:
    """Insert plain rows (every concrete field but ``id``, by attname) of a model without
    history (the activity log): ``COPY`` on PostgreSQL, ``executemany`` elsewhere.

    With ``numbered`` the rows' primary keys are returned in the rows' order: taken first
    (``_new_ids``), or for a few rows on PostgreSQL returned by their one ``INSERT``;
    otherwise the database numbers them and nothing is returned."""
    if not rows:
        return []
    names = [field.attname for field in model._meta.concrete_fields if field.attname != "id"]
    records = [dict(row) for row in rows]
    ids = []
    if numbered and _one_insert(len(records)):
        # Their ids in the rows' order (the sequence numbers VALUES in order, as Django's
        # bulk_create relies on).
        _as_stored(model, records)
        return _insert(model, names, records, returning=True)
    if numbered:
        ids = _new_ids(model, len(records))
        for record, row_id in zip(records, ids, strict=True):
            record["id"] = row_id
        names.insert(0, "id")
    _as_stored(model, records)
    if not _postgresql():
        dates = [
            field.attname
            for field in model._meta.concrete_fields
            if isinstance(field, models.DateTimeField)
        ]
        for record in records:
            for name in dates:
                record[name] = connection.ops.adapt_datetimefield_value(record[name])
    _insert(model, names, records)
    return ids


def _history_user_id(user) -> int | None:
    """The history's user: the author, else the signed-in user of the current request (as
    django-simple-history's default user), else none."""
    if user is not None:
        return user.pk
    default = Item.history.model.get_default_history_user(None)
    return getattr(default, "pk", None) if getattr(default, "is_authenticated", False) else None


# --- SQL ----------------------------------------------------------------------------------


def _postgresql() -> bool:
    return connection.vendor == "postgresql"


def _new_ids(model, count: int) -> list[int]:
    table = model._meta.db_table
    with connection.cursor() as cursor:
        if _postgresql():
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
                [table, count],
            )
            return [row[0] for row in cursor.fetchall()]
        # SQLite (AUTOINCREMENT): after the largest id the table ever had.
        cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [table])
        found = cursor.fetchone()
        cursor.execute(f"SELECT MAX(id) FROM {connection.ops.quote_name(table)}")
        start = max(found[0] if found else 0, cursor.fetchone()[0] or 0) + 1
        return list(range(start, start + count))


class JsonText(str):
    """A JSON value already encoded (its text, as ``json.dumps`` with the field's encoder
    gives it): written as it is, for a value a writer encoded before taking the writers'
    lock."""


@functools.cache
def json_encoder(cls: type[json.JSONEncoder] | None) -> json.JSONEncoder:
    """Return one encoder of the class for a process: ``json.dumps(value, cls=cls)`` builds
    one for every value (a bulk write encodes a few a row), and an encoder keeps no state
    between values, so ``json_encoder(cls).encode(value)`` gives the same text."""
    return (cls or json.JSONEncoder)()


def _as_stored(model, records: list[dict]) -> None:
    """Replace JSON values in ``records`` by their text, as Django sends them (in place)."""
    for field in model._meta.concrete_fields:
        if isinstance(field, models.JSONField):
            name, encode = field.attname, json_encoder(field.encoder).encode
            for record in records:
                if name not in record:
                    continue  # not written (an update of other fields)
                value = record[name]
                if isinstance(value, JsonText):
                    record[name] = str(value)
                    continue
                # A nullable JSONField stores None as SQL NULL, as Django does.
                record[name] = None if value is None else encode(value)


def _copy_value(value):
    """Return a value as ``COPY`` is sent it: a date and time as its ISO text on PostgreSQL
    (the server reads it the same; psycopg formats each datetime anew, about a microsecond,
    and a bulk write sends the same moment several times an item)."""
    return value.isoformat() if isinstance(value, datetime) and _postgresql() else value


def _dates_as_text(model, names: Sequence[str], rows: list[dict]) -> None:
    """Replace the datetimes of the rows' date columns by their ISO text (in place), each
    distinct moment formatted once (``_copy_value``)."""
    dates = [
        field.attname
        for field in model._meta.concrete_fields
        if isinstance(field, models.DateTimeField) and field.attname in names
    ]
    texts: dict[datetime, str] = {}
    for name in dates:
        for row in rows:
            value = row[name]
            if isinstance(value, datetime):
                text = texts.get(value)
                if text is None:
                    text = texts[value] = value.isoformat()
                row[name] = text


def _typed_marks(model, names: Sequence[str]) -> list[str]:
    """Return a placeholder per column, cast where the value is sent as text (JSON, and the
    dates ``_dates_as_text`` wrote as text)."""
    fields = {field.attname: field for field in model._meta.concrete_fields}
    marks = []
    for name in names:
        field = fields.get(name)
        if isinstance(field, models.JSONField):
            marks.append("%s::jsonb")
        elif isinstance(field, models.DateTimeField):
            marks.append("%s::timestamptz")
        else:
            marks.append("%s")
    return marks


def _insert(model, names: Sequence[str], rows: Sequence, *, returning: bool = False) -> list[int]:
    """Insert ``rows`` (dicts, or tuples of the columns ``names``) into the model's table;
    with ``returning`` (a few rows, PostgreSQL: one ``INSERT``) return their new ids."""
    if rows and isinstance(rows[0], dict):
        if _postgresql():
            _dates_as_text(model, names, rows)
        get = itemgetter(*names)
        rows = [get(row) for row in rows]
    table = connection.ops.quote_name(model._meta.db_table)
    columns = ", ".join(map(connection.ops.quote_name, names))
    with connection.cursor() as cursor:
        if _one_insert(len(rows)):
            marks = ", ".join(_typed_marks(model, names))
            values = ", ".join([f"({marks})"] * len(rows))
            cursor.execute(
                f"INSERT INTO {table} ({columns}) VALUES {values}"
                + (" RETURNING id" if returning else ""),
                [value for row in rows for value in row],
            )
            if returning:
                return [row[0] for row in cursor.fetchall()]
        elif _postgresql():
            statement = f"COPY {table} ({columns}) FROM STDIN"
            started = time.monotonic()
            # As for any query: Django's exceptions (a lock timeout is an OperationalError
            # the writers' lock answers with "retry"), and the query log when it is kept.
            with connection.wrap_database_errors, cursor.cursor.copy(statement) as copy:
                for row in rows:
                    copy.write_row(row)
            if connection.queries_logged:
                connection.queries_log.append(
                    {
                        "sql": f"{statement} -- {len(rows)} rows",
                        "time": f"{time.monotonic() - started:.3f}",
                    }
                )
        else:
            marks = ", ".join(["%s"] * len(names))
            cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows)
    if returning:
        raise ValueError("returning: a few rows on PostgreSQL only")
    return []


def _delete(model, ids: list[int]) -> int:
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor:
        if _postgresql():
            cursor.execute(f"DELETE FROM {table} WHERE id = ANY(%s)", [ids])
        else:
            marks = ", ".join(["%s"] * len(ids))
            cursor.execute(f"DELETE FROM {table} WHERE id IN ({marks})", ids)
        return cursor.rowcount


def _update(model, names: Sequence[str], records: list[dict]) -> None:
    quote = connection.ops.quote_name
    json_names = {f.attname for f in model._meta.concrete_fields if isinstance(f, models.JSONField)}
    cast = "::jsonb" if _postgresql() else ""
    assignments = ", ".join(
        f"{quote(name)} = %s{cast if name in json_names else ''}" for name in names
    )
    get = itemgetter(*names, "id")
    with connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {quote(model._meta.db_table)} SET {assignments} WHERE id = %s",
            [get(record) for record in records],
        )

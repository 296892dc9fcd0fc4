"""Served layers: a filtered layer's items fetched per request from the database.

A layer with an ``itemFilter`` is not held by the workers (``profiles.workspace.cache``
compiles it served, ``resolver.served``): for each request the engine names the filter
values it needs, and ``DatabaseSource`` reads them with **one statement** for all the served
layers the request reads: the workspace's held token (``WorkspaceVersion.held_token``, so the
version check costs no query of its own), each served layer's item count, each customer's
change stamp, and the items (the ``ItemKey`` rows of each filter's first field, joined with
the items and their packed stored terms) of the customers this worker does not hold current. So a
request costs O(customer), not O(layer), and no worker holds the layer. The engine applies
the filter exactly to what is fetched: the keys need only find a superset. Terms stored by
another analyser version, or for an older write of the item, are not given to the engine (it
tokenizes those items).

**Candidates cache.** Each worker keeps the candidates it fetched, by (layer, keyed field,
value), with the value's change stamp: the number of its ``ItemKey`` rows and the highest of
their ids. Every write of an item writes its key rows again (deleted, then inserted with new,
ever higher ids, in the write's transaction; ``profiles.workspace.derived``), so any create,
edit, move or delete of an item with that value changes the stamp, and nothing else does: a
customer's new ticket changes that customer's stamp only. The stamp is read in the same
statement as the rows of the others (one snapshot), and a cached customer's rows come back
only when its stamp moved, so a write committed before the request's statement is always
seen. The cache is bounded in entries and estimated bytes (``SERVED_CACHE_ENTRIES``,
``SERVED_CACHE_BYTES``), least recently used first out. The engine reuses the layer index it
built for a cached customer (``resolver.served.Fetched.built``).

``SERVE_FILTERED_LAYERS`` (setting, default True) decides whether filtered layers are served;
False holds every layer in the workers as before (a comparison, and a way back).
"""

import contextvars
import dataclasses
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping

from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import connection
from django.dispatch import receiver

from profiles.models import Item, ItemKey, ItemTerms, Layer, WorkspaceVersion
from profiles.workspace import metrics, replica
from profiles.workspace.derived import filter_fields
from profiles.workspace.mappers import map_item_columns_to_resolver
from profiles.workspace.selectors import rows_read
from resolver.analysis import ANALYSER_VERSION
from resolver.served import Fetched, Need
from resolver.values import canonical_values

# How many fetches this process made, and how many items they returned (diagnostics, tests).
fetches = 0
fetched_items = 0

# The candidates cache's bounds (settings override them): customers held, estimated bytes.
CACHE_ENTRIES = 20_000
CACHE_BYTES = 64 * 2**20
# An item's estimated cost in a worker, in bytes: this beyond its texts (its entry, the
# engine's item and index slots), each text character twice (the entry's string and what the
# engine derives: summary, records), and each byte of its packed terms twice (the engine keeps
# their text in one search string and their counts in one array: no dict per item). Measured
# under gunicorn with the older JSON form, whose decoded dicts took ten times its characters:
# 50k cached tickets of the scale desk held ~280 MB, ~5.6 KB a ticket.
ITEM_OVERHEAD = 1_024
TEXT_FACTOR = 2
TERMS_FACTOR = 2

# The held token the last served read of this context saw (``cache.workspace_resolved``).
seen_version: contextvars.ContextVar = contextvars.ContextVar("seen_version", default=None)

# Within one request, the served reads it made, by compilation's layers and needs: a page that
# resolves one input several times (a draft beside its saved profile, an impact's before and
# after) reads once, and all its resolutions see one snapshot. None outside a request (a task,
# a command), and forgotten by any write (``request_reads_forget``, from
# ``writing.workspace_changed``), so a request that writes and then resolves reads anew.
REQUEST_READS = 16
_request_reads: contextvars.ContextVar = contextvars.ContextVar("request_reads", default=None)


@receiver(request_started)
def _request_reads_begin(sender, **kwargs):
    _request_reads.set(OrderedDict())


@receiver(request_finished)
def _request_reads_end(sender, **kwargs):
    _request_reads.set(None)


def request_reads_forget() -> None:
    """Forget this request's served reads (a write happened: what follows reads anew)."""
    reads = _request_reads.get()
    if reads is not None:
        reads.clear()


def serving_enabled() -> bool:
    return getattr(settings, "SERVE_FILTERED_LAYERS", True)


def served_layer(item_filter) -> bool:
    """Return whether a layer with this ``itemFilter`` is served (fetched per request)."""
    return bool(item_filter) and serving_enabled()


def held_token_sql() -> str:
    """The SQL expression of the held token (the token itself in a row from before it)."""
    return "COALESCE(NULLIF(held_token, ''), token)"


_COLUMNS = "i.path, i.title, i.body, i.metadata, t.packed"


def _tables() -> tuple[str, str, str]:
    quote = connection.ops.quote_name
    return tuple(quote(model._meta.db_table) for model in (Item, ItemTerms, ItemKey))


def _join_terms(terms: str) -> str:
    # The stored terms, when the analyser and the item's last write are theirs.
    return (
        f"LEFT JOIN {terms} t ON t.item_id = i.id AND t.analyser = %s "
        "AND t.item_updated_at = i.updated_at"
    )


def _entry(path, title, body, metadata) -> dict:
    """The item's SPEC §2 entry from a row (metadata as the driver gives it: text or JSON)."""
    if isinstance(metadata, str):
        metadata = json.loads(metadata)
    return map_item_columns_to_resolver(path, title, body, metadata)


def _entries(rows) -> list[dict]:
    """The rows' entries (``_entry`` of each): their metadata texts decoded in one call (a
    customer's hundred small JSON texts cost a third of decoding each on its own). Joined
    as one array, valid JSON texts decode to exactly their values, and each is valid: jsonb
    on PostgreSQL, a ``JSON_VALID`` check on SQLite's column."""
    texts = [row[3] for row in rows]
    if all(text.__class__ is str for text in texts):
        decoded = json.loads("[" + ",".join(texts) + "]") if texts else []
    else:
        decoded = [json.loads(text) if isinstance(text, str) else text for text in texts]
    return [
        map_item_columns_to_resolver(row[0], row[1], row[2], metadata)
        for row, metadata in zip(rows, decoded, strict=True)
    ]


def _matches(entry: dict, need: Need) -> bool:
    metadata = entry.get("metadata") or {}
    return all(want in canonical_values(metadata.get(name)) for name, want in need.filters)


def _counted(found: dict[str, Fetched]) -> None:
    global fetches, fetched_items
    items = sum(len(fetched.entries) for fetched in found.values())
    fetches += 1
    fetched_items += items
    metrics.served_items.inc(items)


def fetch_scanning(layer_id: int, need: Need) -> dict[str, Fetched]:
    """Return the items of a served layer matching a need by reading the whole layer: only
    for a filter field without keys (a proposed filter being previewed)."""
    item, terms, _ = _tables()
    sql = (
        f"SELECT {_COLUMNS} FROM {item} i {_join_terms(terms)} "
        "WHERE i.layer_id = %s ORDER BY i.position, i.id"
    )
    fetched = Fetched(entries=[], terms={})
    for path, title, body, metadata, stored in rows_read(sql, [ANALYSER_VERSION, layer_id]):
        entry = _entry(path, title, body, metadata)
        if _matches(entry, need):
            fetched.entries.append(entry)
            if stored is not None:
                fetched.terms[path] = stored
    found = {need.layer: fetched}
    _counted(found)
    return found


# --- the one statement ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Wanted:
    """One keyed need of a request: its layer's id, keyed field and (cut) value, and the
    stamp of the candidates this worker holds for it (None: none held)."""

    need: Need
    layer_id: int
    field: str
    value: str
    stamp: str | None


def _stamp_sql(key: str) -> str:
    # The value's change stamp: its key rows' count and highest id (see the module's doc).
    return (
        "(SELECT CAST(COUNT(*) AS VARCHAR(20)) || ':' || CAST(COALESCE(MAX(s.id), 0) AS "
        f"VARCHAR(20)) FROM {key} s WHERE s.layer_id = %s AND s.field = %s AND s.value = %s)"
    )


def served_statement(
    totals: list[int], wanted: list[Wanted], *, on_replica: bool = False
) -> tuple[str, list]:
    """Return the statement of one request's served read and its parameters: one row of
    (held token, each layer of ``totals``'s item count, each wanted value's stamp), joined
    with the rows (need number, path, title, body, metadata, packed terms) of the values not
    held current (every value without a stamp; one with a stamp only when it moved). For a
    read replica (``on_replica``) the row also has the replica's workspace counter and lag,
    from the same snapshot (``profiles.workspace.replica``), before the rows."""
    item, terms, key = _tables()
    quote = connection.ops.quote_name
    version = quote(WorkspaceVersion._meta.db_table)
    layer = quote(Layer._meta.db_table)
    heads = [f"(SELECT {held_token_sql()} FROM {version} WHERE id = 1) AS v"]
    params: list = []
    for n, layer_id in enumerate(totals):
        heads.append(f"(SELECT items_counted FROM {layer} WHERE id = %s) AS t{n}")
        params.append(layer_id)
    for n, want in enumerate(wanted):
        heads.append(f"{_stamp_sql(key)} AS s{n}")
        params += [want.layer_id, want.field, want.value]
    if on_replica:
        heads.append(f"(SELECT counter FROM {version} WHERE id = 1) AS c")
        heads.append(f"{replica.lag_sql()} AS g")
    branches, branch_params = [], []
    for n, want in enumerate(wanted):
        moved = f" AND (SELECT s{n} FROM h) <> %s" if want.stamp is not None else ""
        branches.append(
            f"SELECT {n} AS n, i.position AS p, i.id AS d, {_COLUMNS} FROM {key} k "
            f"JOIN {item} i ON i.id = k.item_id {_join_terms(terms)} "
            f"WHERE k.layer_id = %s AND k.field = %s AND k.value = %s{moved}"
        )
        branch_params += [ANALYSER_VERSION, want.layer_id, want.field, want.value]
        if want.stamp is not None:
            branch_params.append(want.stamp)
    sql = f"WITH h AS (SELECT {', '.join(heads)}) "
    if branches:
        sql += (
            "SELECT h.*, r.n, r.path, r.title, r.body, r.metadata, r.packed FROM h LEFT JOIN ("
            + " UNION ALL ".join(branches)
            + ") r ON 1 = 1 ORDER BY r.n, r.p, r.d"
        )
    else:
        sql += "SELECT h.* FROM h"
    return sql, params + branch_params


class CandidatesCache:
    """A worker's customers' candidates: (layer id, field, value) -> (stamp, ``Fetched``),
    least recently used out first beyond ``entries`` or an estimated ``size`` in bytes."""

    def __init__(self, entries: int | None = None, size: int | None = None):
        self.entries = entries
        self.size = size
        self._found: OrderedDict[tuple, tuple[str, Fetched, int]] = OrderedDict()
        self.bytes = 0
        self._lock = threading.Lock()

    def limits(self) -> tuple[int, int]:
        return (
            self.entries or getattr(settings, "SERVED_CACHE_ENTRIES", CACHE_ENTRIES),
            self.size or getattr(settings, "SERVED_CACHE_BYTES", CACHE_BYTES),
        )

    def get(self, key: tuple) -> tuple[str, Fetched] | None:
        with self._lock:
            found = self._found.get(key)
            if found is None:
                return None
            self._found.move_to_end(key)
            return found[0], found[1]

    def put(self, key: tuple, stamp: str, fetched: Fetched, cost: int) -> None:
        entries, size = self.limits()
        with self._lock:
            old = self._found.pop(key, None)
            if old is not None:
                self.bytes -= old[2]
            if cost > size:
                return
            self._found[key] = (stamp, fetched, cost)
            self.bytes += cost
            while len(self._found) > entries or self.bytes > size:
                _, (_, _, dropped) = self._found.popitem(last=False)
                self.bytes -= dropped

    def __len__(self) -> int:
        return len(self._found)

    def clear(self) -> None:
        with self._lock:
            self._found.clear()
            self.bytes = 0


candidates = CandidatesCache()
_hit = metrics.served_candidates.labels("hit")
_miss = metrics.served_candidates.labels("miss")


def _cost(rows) -> int:
    """The estimated bytes a customer's candidates hold (texts, terms and overhead)."""
    return sum(
        ITEM_OVERHEAD
        + TEXT_FACTOR * (len(path) + len(title or "") + len(body or ""))
        + TERMS_FACTOR * len(stored or b"")
        for path, title, body, _, stored in rows
    )


def served_read(totals: list[int], wanted: list[Wanted]) -> tuple[str | None, list, list]:
    """Run one request's served statement; return the held token, the totals (as
    ``totals``) and per wanted value its (stamp, rows or None when its stamp is the one
    held: path, title, body, metadata, stored terms)."""
    rows, extra = _replica_read(totals, wanted), 2
    if rows is None:
        sql, params = served_statement(totals, wanted)
        rows, extra = rows_read(sql, params, prepared=True), 0
    metrics.served_statements.inc()
    width = 1 + len(totals) + len(wanted)
    head = rows[0] if rows else (None,) * width
    counts = list(head[1 : 1 + len(totals)])
    stamps = head[1 + len(totals) : width]
    found: list[list | None] = [
        None if want.stamp is not None and want.stamp == stamp else []
        for want, stamp in zip(wanted, stamps, strict=True)
    ]
    width += extra
    for row in rows:
        if wanted and row[width] is not None:
            found[row[width]].append(row[width + 1 :])
    return head[0], counts, list(zip(stamps, found, strict=True))


def _replica_read(totals: list[int], wanted: list[Wanted]) -> list | None:
    """Run the served statement on the read replica; return its rows when the replica may
    answer (``replica.fresh``), else None (the primary answers). None at once without a
    replica, or inside a write's transaction."""
    if not replica.available():
        return None
    sql, params = served_statement(totals, wanted, on_replica=True)
    rows = replica.replica_rows(sql, params)
    if rows is None:
        return None
    width = 1 + len(totals) + len(wanted)
    outcome = replica.fresh(*rows[0][width : width + 2]) if rows else "primary_written"
    replica.count(outcome)
    return rows if outcome == "replica" else None


class DatabaseSource:
    """The engine's source of served layers' items (``resolver.served.MaterialSource``):
    layer keys mapped to their rows' ids and keyed fields, as of the compilation. One
    statement per request (``served_statement``), whatever the number of served layers it
    reads; it also gives every served layer's current total and the held token
    (``seen_version``)."""

    def __init__(
        self, layers: Mapping[str, tuple[int, list[str]]], cache: CandidatesCache | None = None
    ):
        self.layers = dict(layers)
        self.cache = cache if cache is not None else candidates
        # What identifies the reads of this source (two compilations of one workspace, a
        # draft's and its saved profile's, read the same).
        self._identity = tuple(
            (key, id_, tuple(keyed)) for key, (id_, keyed) in self.layers.items()
        )

    def __call__(self, needs: list[Need]) -> dict[str, Fetched]:
        reads = _request_reads.get()
        if reads is None:
            return self._read(needs)[1]
        key = (self._identity, tuple(needs))
        found = reads.get(key)
        if found is None:
            found = reads[key] = self._read(needs)
            while len(reads) > REQUEST_READS:
                reads.popitem(last=False)
        else:
            reads.move_to_end(key)
            seen_version.set(found[0])
        return found[1]

    def _read(self, needs: list[Need]) -> tuple[str | None, dict[str, Fetched]]:
        """Read the needs' candidates (one statement); return the held token it saw too."""
        wanted, out = [], {}
        for need in needs:
            layer_id, keyed = self.layers[need.layer]
            keyed_filter = next(
                ((field, value) for field, value in need.filters if field in keyed), None
            )
            if keyed_filter is None:
                out |= fetch_scanning(layer_id, need)
                continue
            field, value = keyed_filter[0], keyed_filter[1][: ItemKey.VALUE_CHARS]
            held = self.cache.get((layer_id, field, value))
            wanted.append((Wanted(need, layer_id, field, value, held[0] if held else None), held))
        keys = list(self.layers)
        version, counts, found = served_read(
            [self.layers[key][0] for key in keys], [want for want, _ in wanted]
        )
        seen_version.set(version)
        fresh: dict[str, Fetched] = {}
        for (want, held), (stamp, rows) in zip(wanted, found, strict=True):
            if rows is None:
                out[want.need.layer] = held[1]
                _hit.inc()
                continue
            _miss.inc()
            # The packed terms as stored: the engine reads them as they are.
            fetched = Fetched(
                entries=_entries(rows),
                terms={row[0]: row[4] for row in rows if row[4] is not None},
            )
            if stamp is not None:
                self.cache.put((want.layer_id, want.field, want.value), stamp, fetched, _cost(rows))
            out[want.need.layer] = fresh[want.need.layer] = fetched
        if fresh:
            _counted(fresh)
        totals = dict(zip(keys, counts, strict=True))
        return version, {
            key: dataclasses.replace(out.get(key) or Fetched(entries=()), total=totals[key] or 0)
            for key in keys
        }


def keyed_for(item_filter, keyed_fields) -> list[str]:
    """Return the filter's fields that have keys (normally all of them)."""
    return [field for field in filter_fields(item_filter) if field in (keyed_fields or [])]


# Items of a served layer the layer form looks at for its suggestions (metadata fields).
SAMPLE_ITEMS = 2_000


def served_items_sample(layer_key: str, limit: int = SAMPLE_ITEMS) -> list[dict]:
    """Return the entries of a served layer's first ``limit`` items (layer order)."""
    rows = (
        Item.objects.filter(layer__key=layer_key)
        .order_by("position", "id")
        .values_list("path", "title", "body", "metadata")[:limit]
    )
    return [_entry(*row) for row in rows]

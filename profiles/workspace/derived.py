"""What the write services derive from items in the transaction of every item write.

Called by ``profiles.workspace.writing.workspace_changed`` (so by every door that writes
items: the studio, the API, bulk ingest, imports, change requests, the admin, the CLI):

* **item counts** — ``Layer.items_counted`` moves by the items created and deleted
  (``item_count_deltas``, applied by ``workspace_changed`` in the update that bumps the
  layer's token); a layer whose items were rewritten wholesale is counted again.
* **analysed terms** — each written item's SPEC §5 term counts, computed by the engine
  (``resolver.analysis``) and stored packed as an ``ItemTerms`` row, so no worker start and no
  per-request fetch tokenizes text. Terms of an older analyser are recomputed in the
  background (``item_terms_recompute``).
* **filter keys** — the canonical values of the item's ``itemFilter`` fields as ``ItemKey``
  rows, the index a served layer's per-request fetch reads (``profiles.workspace.served``).
  When a layer's ``itemFilter`` names other fields, its keys are written again (the layer's
  items are read once; a governed change) and ``Layer.keyed_fields`` says which fields they
  cover.

Single-item writes cost their items (a few indexed queries). A write that gives the items
it stored (``Written``: a bulk ingest, with terms it counted before taking the writers'
lock) costs no read of them at all. A moved item is its old path deleted and its new one created
(two paths, whatever the size of its layer). A layer rewritten wholesale (an import) is
compared with its derived rows in SQL: only items written since their row was computed
(another ``updated_at``) are analysed again.
"""

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter

from django.db import connection
from django.db.models import Count, Exists, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.tasks import task
from django_tasks_db.models import DBTaskResult

from profiles.models import Item, ItemChange, ItemKey, ItemTerms, Layer
from profiles.workspace.bulk_writes import rows_insert
from profiles.workspace.concurrency import workspace_write
from resolver.analysis import ANALYSER_VERSION, item_terms, pack_terms
from resolver.values import canonical_values

Op = ItemChange.Op

# Paths per query (under SQLite's limit of variables) and rows per insert.
BATCH = 900
ITEM_COLUMNS = ("id", "path", "title", "body", "metadata", "updated_at")


@dataclass(frozen=True)
class Written:
    """An item as a write just stored it, so its derived rows need no read of it: the row's
    id, values and ``updated_at`` as stored, and its terms when the writer counted them
    (``pack_terms(item_terms(title, body))``, before taking the writers' lock)."""

    id: int
    title: str
    body: str
    metadata: object
    updated_at: datetime
    terms: bytes | None = None


def filter_fields(item_filter) -> list[str]:
    """Return the metadata fields of a layer's ``itemFilter``, sorted (the engine's order)."""
    return sorted(item_filter or {})


def item_keys(metadata, fields: Iterable[str]) -> set[tuple[str, str]]:
    """Return the (field, value) keys of an item's metadata for the fields: the canonical
    strings it matches (SPEC §4.2), cut to ``ItemKey.VALUE_CHARS``."""
    metadata = metadata if isinstance(metadata, dict) else {}
    return {
        (field, value[: ItemKey.VALUE_CHARS])
        for field in fields
        for value in canonical_values(metadata.get(field))
    }


def item_count_deltas(items: Iterable[tuple[int, str, str]], rewritten: set[int]) -> Counter:
    """Return how the item counts of layers move with ``items`` ((layer id, path, op) of
    single-item writes): +1 a create, -1 a delete; layers ``rewritten`` wholesale are
    counted again instead (``derived_written``)."""
    deltas: Counter = Counter()
    for layer_id, _, op in items:
        if layer_id not in rewritten:
            deltas[layer_id] += (op == Op.CREATE) - (op == Op.DELETE)
    return deltas


def derived_written(
    *,
    items: list[tuple[int, str, str]],
    layers: Iterable[int],
    written: Mapping[tuple[int, str], Written] | None = None,
) -> dict[int, object]:
    """Bring the derived rows up to date after a write: ``items`` are the (layer id, path,
    op) of single-item writes, ``layers`` the layers whose items were rewritten wholesale,
    ``written`` the items the write gives as it stored them, by (layer id, path): those are
    not read back. The caller moved the items' counts (``item_count_deltas``). Call inside
    the write's transaction, under the writers' lock (``workspace_changed``). Return every
    layer's ``itemFilter`` by id, as read here (the caller asks which layers are served)."""
    rewritten = set(layers)
    paths: dict[int, set[str]] = defaultdict(set)
    # Paths this write only created: a new row has no derived rows to delete.
    created: dict[int, set[str]] = defaultdict(set)
    changed: dict[int, set[str]] = defaultdict(set)
    for layer_id, path, op in items:
        if layer_id in rewritten:
            continue
        paths[layer_id].add(path)
        (created if op == Op.CREATE else changed)[layer_id].add(path)
    if rewritten:
        per_layer = Item.objects.filter(layer_id=OuterRef("pk")).order_by().values("layer_id")
        Layer.objects.filter(pk__in=rewritten).update(
            items_counted=Coalesce(Subquery(per_layer.annotate(n=Count("id")).values("n")), 0)
        )
    layer_rows = {
        row[0]: row[1:] for row in Layer.objects.values_list("id", "item_filter", "keyed_fields")
    }
    for layer_id, paths_written in paths.items():
        if layer_id in layer_rows:
            fresh = created[layer_id] - changed[layer_id]
            _refresh_paths(
                layer_id,
                sorted(paths_written),
                filter_fields(layer_rows[layer_id][0]),
                fresh=fresh,
                written=written or {},
            )
    for layer_id in rewritten:
        if layer_id in layer_rows:
            item_filter, keyed = layer_rows[layer_id]
            fields = filter_fields(item_filter)
            # A layer keyed for other fields has all its keys written again just below.
            _refresh_layer(layer_id, fields, written=written, keys=fields == keyed)
    for layer_id, (item_filter, keyed) in layer_rows.items():
        if filter_fields(item_filter) != keyed:
            _rekey_layer(layer_id, filter_fields(item_filter))
    return {layer_id: item_filter for layer_id, (item_filter, _) in layer_rows.items()}


def _rows_derived(layer_id: int, rows: Iterable, fields: list[str], *, terms=True, keys=True):
    """Insert the derived rows of some items: value rows of ``ITEM_COLUMNS``, optionally
    followed by the item's packed terms (counted here when not given)."""
    term_rows, key_rows = [], []
    for item_id, path, title, body, metadata, updated_at, *counted in rows:
        if terms:
            term_rows.append(
                {
                    "layer_id": layer_id,
                    "path": path,
                    "item_id": item_id,
                    "item_updated_at": updated_at,
                    "analyser": ANALYSER_VERSION,
                    "packed": (counted and counted[0]) or pack_terms(item_terms(title, body)),
                }
            )
        if keys:
            for field, value in item_keys(metadata, fields):
                key_rows.append(
                    {
                        "layer_id": layer_id,
                        "field": field,
                        "value": value,
                        "path": path,
                        "item_id": item_id,
                    }
                )
        if len(term_rows) >= BATCH or len(key_rows) >= BATCH:
            rows_insert(ItemTerms, term_rows)
            rows_insert(ItemKey, key_rows)
            term_rows, key_rows = [], []
    rows_insert(ItemTerms, term_rows)
    rows_insert(ItemKey, key_rows)


def _refresh_paths(
    layer_id: int,
    paths: list[str],
    fields: list[str],
    *,
    fresh: set[str] = frozenset(),
    written: Mapping[tuple[int, str], Written],
) -> None:
    """Write again the derived rows of the items at ``paths`` (deleted ones lose theirs);
    the ``fresh`` paths were only created by this write, so they have none to delete, and
    the ``written`` ones are taken as given rather than read."""
    rows = []
    for start in range(0, len(paths), BATCH):
        chunk = paths[start : start + BATCH]
        stale = [path for path in chunk if path not in fresh]
        if stale:
            ItemTerms.objects.filter(layer_id=layer_id, path__in=stale)._raw_delete(
                connection.alias
            )
            ItemKey.objects.filter(layer_id=layer_id, path__in=stale)._raw_delete(connection.alias)
        unread = []
        for path in chunk:
            item = written.get((layer_id, path))
            if item is None:
                unread.append(path)
                continue
            rows.append(
                (item.id, path, item.title, item.body, item.metadata, item.updated_at, item.terms)
            )
        if unread:
            stored = Item.objects.filter(layer_id=layer_id, path__in=unread)
            rows.extend(stored.values_list(*ITEM_COLUMNS))
    _rows_derived(layer_id, rows, fields)


def _refresh_layer(
    layer_id: int,
    fields: list[str],
    *,
    written: Mapping[tuple[int, str], Written] | None = None,
    keys: bool = True,
) -> None:
    """Bring a rewritten layer's derived rows up to date: rows whose item is gone or was
    written since go, and the items without rows get theirs. Those the write gives as it
    stored them (``written``, an import's) are not read back; without ``keys`` only their
    terms are written (the caller writes the layer's keys anew)."""
    current = Item.objects.filter(
        pk=OuterRef("item_id"),
        layer_id=layer_id,
        path=OuterRef("path"),
        updated_at=OuterRef("item_updated_at"),
    )
    ItemTerms.objects.filter(layer_id=layer_id).exclude(Exists(current))._raw_delete(
        connection.alias
    )
    # Keys of items that no longer have (valid) terms rows: gone, or written since.
    analysed = ItemTerms.objects.filter(layer_id=layer_id, item_id=OuterRef("item_id"))
    ItemKey.objects.filter(layer_id=layer_id).exclude(Exists(analysed))._raw_delete(
        connection.alias
    )
    missing = (
        Item.objects.filter(layer_id=layer_id)
        .exclude(pk__in=ItemTerms.objects.filter(layer_id=layer_id).values("item_id"))
        .order_by("pk")
        .values_list("pk", "path")
    )
    rows, unread = [], []
    written = written or {}
    for item_id, path in missing.iterator(chunk_size=2000):
        item = written.get((layer_id, path))
        if item is not None and item.id == item_id:
            rows.append(
                (item_id, path, item.title, item.body, item.metadata, item.updated_at, item.terms)
            )
        else:
            unread.append(item_id)
    for start in range(0, len(unread), BATCH):
        stored = Item.objects.filter(pk__in=unread[start : start + BATCH]).order_by("pk")
        rows.extend(stored.values_list(*ITEM_COLUMNS))
    rows.sort(key=itemgetter(0))
    _rows_derived(layer_id, rows, fields, keys=keys)


def _rekey_layer(layer_id: int, fields: list[str]) -> None:
    """Write the layer's filter keys again for the fields of its (changed) itemFilter."""
    ItemKey.objects.filter(layer_id=layer_id)._raw_delete(connection.alias)
    # Keys come from the metadata: the items' texts are not read.
    rows = (
        (item_id, path, None, None, metadata, None)
        for item_id, path, metadata in Item.objects.filter(layer_id=layer_id)
        .order_by("pk")
        .values_list("pk", "path", "metadata")
        .iterator(chunk_size=2000)
    )
    _rows_derived(layer_id, rows, fields, terms=False)
    Layer.objects.filter(pk=layer_id).update(keyed_fields=fields)


# --- another analyser ------------------------------------------------------------------------


def _stale_terms():
    """The stored terms counted by another analyser version."""
    return ItemTerms.objects.exclude(analyser=ANALYSER_VERSION)


def stale_terms_count() -> int:
    """Return how many items' stored terms come from another analyser version."""
    return _stale_terms().count()


def terms_recompute(*, batch: int = 2000) -> int:
    """Recompute the stored terms counted by another analyser version, a batch per
    transaction under the writers' lock; return how many were recomputed. Workers ignore
    such terms meanwhile (they tokenize those items), so answers never change."""
    done = 0
    while True:
        with workspace_write():
            rows = list(_stale_terms().order_by("pk").values_list("pk", "item_id")[:batch])
            if not rows:
                return done
            ids = [item_id for _, item_id in rows]
            items = {
                pk: (title, body)
                for pk, title, body in Item.objects.filter(pk__in=ids).values_list(
                    "pk", "title", "body"
                )
            }
            updates = []
            for pk, item_id in rows:
                text = items.get(item_id)
                if text is None:
                    ItemTerms.objects.filter(pk=pk)._raw_delete(connection.alias)
                    continue
                updates.append(
                    ItemTerms(
                        pk=pk, analyser=ANALYSER_VERSION, packed=pack_terms(item_terms(*text))
                    )
                )
            ItemTerms.objects.bulk_update(updates, ["analyser", "packed"], batch_size=500)
            done += len(updates)


@task()
def item_terms_recompute() -> int:
    """The background task of ``terms_recompute`` (enqueued when a worker finds stale terms)."""
    return terms_recompute()


def terms_recompute_enqueue() -> bool:
    """Enqueue ``item_terms_recompute`` when stored terms come from another analyser and no
    such task is waiting or running; return whether it enqueued one. A server calls it as it
    warms (after a deploy that changed the analyser)."""
    if not _stale_terms().exists():
        return False
    pending = DBTaskResult.objects.filter(
        task_path=item_terms_recompute.module_path, finished_at=None
    )
    if pending.exists():
        return False
    item_terms_recompute.enqueue()
    return True

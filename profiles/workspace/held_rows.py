"""The item rows a worker's compiled workspace holds, read in bulk (``profiles.workspace.cache``):
held layers' items as value rows, their texts mapped where their layer's are
(``profiles.workspace.held_texts``), short metadata strings shared, and their stored terms."""

import logging
from collections import defaultdict, namedtuple

from django.db.models import Q

from profiles.models import Item, ItemTerms
from profiles.workspace import held_texts
from profiles.workspace.mappers import map_item_to_resolver
from profiles.workspace.selectors import ITEM_COLUMNS
from resolver.analysis import ANALYSER_VERSION

logger = logging.getLogger("profiles.workspace.cache")


def item_rows(
    *, whole: set[int], paths: dict[int, set[str]], mapped: dict[int, str] | None = None
) -> tuple[dict[int, list], int]:
    """Return item rows by layer id, in document order, and how many: every item of the
    ``whole`` layers and the items at ``paths`` of others (those that no longer exist are absent).

    The whole layers of ``mapped`` (layer id -> content token) have their texts mapped
    (``profiles.workspace.held_texts``): their rows are read without their bodies, each body
    a reference into the file of that version of the layer (one query for them all; one
    more that writes the files no process has written yet, and one for the rows written
    since their layer's file, if any). When the files cannot be written or read, the texts
    are held as for any layer.
    """
    mapped = mapped or {}
    texts = {}
    if mapped:
        try:
            texts = held_texts.layers_texts(mapped)
        except OSError:
            logger.warning("could not map held texts; holding them", exc_info=True)
            mapped = {}
    unmapped = set(whole) - set(mapped)
    condition = Q(layer_id__in=sorted(unmapped)) if unmapped else Q()
    for layer_id, layer_paths in paths.items():
        condition |= Q(layer_id=layer_id, path__in=sorted(layer_paths))
    found: dict[int, list] = defaultdict(list)
    seen: dict[str, str] = {}
    count = 0
    if unmapped or paths:
        rows = (
            Item.objects.filter(condition)
            .order_by("layer_id", "position", "id")
            .values_list(*ITEM_COLUMNS, "updated_at", named=True)
            .iterator(chunk_size=2000)
        )
        for row in rows:
            if row.metadata:
                row = row._replace(metadata=_shared(row.metadata, seen))
            found[row.layer_id].append(row)
            count += 1
    if mapped:
        for layer_id, rows in _mapped_rows(texts, seen).items():
            found[layer_id] = rows
            count += len(rows)
    return found, count


_HeldRow = namedtuple("_HeldRow", [*ITEM_COLUMNS, "updated_at"])
_UNREAD = object()


def _mapped_rows(texts: dict[int, held_texts.LayerTexts], seen: dict[str, str]) -> dict[int, list]:
    """Return the mapped layers' rows by layer, in document order, each body a reference
    into the file of its layer's version (``texts``; or the text itself, for a row written
    since the file was)."""
    columns = [column for column in ITEM_COLUMNS if column != "body"]
    rows = (
        Item.objects.filter(layer_id__in=sorted(texts))
        .order_by("layer_id", "position", "id")
        .values_list("id", *columns, "updated_at", named=True)
        .iterator(chunk_size=2000)
    )
    found: dict[int, list] = {layer_id: [] for layer_id in texts}
    versions: dict[int, tuple[list, list]] = {layer_id: ([], []) for layer_id in texts}
    for row in rows:
        metadata = _shared(row.metadata, seen) if row.metadata else row.metadata
        found[row.layer_id].append(
            _HeldRow(row.layer_id, row.path, row.title, _UNREAD, metadata, row.updated_at)
        )
        ids, stamps = versions[row.layer_id]
        ids.append(row.id)
        stamps.append(held_texts.stamp(row.updated_at))
    unread = {}
    for layer_id, out in found.items():
        ids, stamps = versions[layer_id]
        for at, (row, body) in enumerate(
            zip(out, texts[layer_id].references(ids, stamps), strict=True)
        ):
            if body is None:
                unread[ids[at]] = (out, at)
            else:
                out[at] = row._replace(body=body)
    if unread:
        # Written since the layer's file: read whole (the row as it is now), texts held.
        wanted = sorted(unread)
        for start in range(0, len(wanted), 900):  # under SQLite's limit of variables
            again = Item.objects.filter(id__in=wanted[start : start + 900]).values_list(
                "id", *ITEM_COLUMNS, "updated_at", named=True
            )
            for row in again:
                out, at = unread[row.id]
                out[at] = _HeldRow(*row[1:])
        for layer_id, out in found.items():
            found[layer_id] = [row for row in out if row.body is not _UNREAD]  # deleted since
    return found


# Strings up to this length in items' metadata are shared between the items of one read.
SHARED_CHARS = 64


def _shared(value, seen: dict[str, str]):
    """Return a metadata value with its object keys and short strings replaced by equal ones
    met before in the same read (``seen``): a held layer's items name the same fields and
    repeat the same dates and statuses, and each row's JSON was decoded into strings of its
    own (~10 MB a worker for 100k articles). Equal values: the answers cannot change."""
    if isinstance(value, str):
        return seen.setdefault(value, value) if len(value) <= SHARED_CHARS else value
    if isinstance(value, dict):
        return {seen.setdefault(key, key): _shared(item, seen) for key, item in value.items()}
    if isinstance(value, list):
        return [_shared(item, seen) for item in value]
    return value


def stored_terms(layer_ids: set[int]) -> dict[int, dict[str, tuple]]:
    """Return the stored terms of this analyser version of the layers' items, as
    ``(item updated_at, packed terms)`` by layer id and path.

    Read before the items themselves (``_item_rows``): the terms, dropped once the postings
    are built, then lie together in memory rather than between the items' texts, which stay,
    so what they took can go back to the system (``ctxstudio.warmup``). Terms are used only
    for an item read with the same ``updated_at`` (``_analysed``): an item written between
    the two reads is tokenized instead.
    """
    found: dict[int, dict[str, tuple]] = defaultdict(dict)
    if not layer_ids:
        return found
    rows = (
        ItemTerms.objects.filter(layer_id__in=sorted(layer_ids), analyser=ANALYSER_VERSION)
        .values_list("layer_id", "path", "item_updated_at", "packed")
        .iterator(chunk_size=2000)
    )
    for layer_id, path, updated_at, terms in rows:
        found[layer_id][path] = (updated_at, terms)
    return found


def mapped_layers(layer_rows, whole: set[int]) -> dict[int, str]:
    """Return the whole layers whose texts are mapped, with their content tokens."""
    return {
        row.id: row.content_token
        for row in layer_rows
        if row.id in whole and held_texts.mapped(row.items_counted)
    }


def analysed_terms(
    rows: dict[int, list], keys: dict[int, str], terms: dict[int, dict]
) -> dict[str, dict]:
    """Return the stored terms of the layers read in full, by layer key and item path: those
    counted for the item as read (the same ``updated_at``)."""
    out = {}
    for layer_id, items in rows.items():
        key = keys.get(layer_id)
        stored = terms.get(layer_id)
        if key is not None and stored:
            # As stored (packed): the postings read them in bulk, no dict per item.
            kept = {}
            for row in items:
                found = stored.get(row.path)
                if found is not None and found[0] == row.updated_at:
                    kept[row.path] = found[1]
            out[key] = kept
    return out


def document_with_items(cached, layer_keys) -> dict:
    """Return the cached document with the items of those of ``layer_keys`` in place: a
    served layer's (held without items) read from the database, a held layer's with their
    mapped texts read (``held_texts``). What a change set or an import that touches such a
    layer is validated, compared and compiled against. Costs the layers' items (a governed,
    rare write); the cached document is left as it is."""
    layer_keys = set(layer_keys)
    wanted = {
        layer_id: copy.key
        for layer_id, copy in cached.layers.items()
        if copy.served and copy.key in layer_keys
    }
    items = {
        copy.key: held_texts.texts_in_place(copy.entry["items"])
        for copy in cached.layers.values()
        if not copy.served and copy.key in layer_keys
    }
    items |= {key: [] for key in wanted.values()}
    if wanted:
        for layer_id, rows in item_rows(whole=set(wanted), paths={})[0].items():
            items[wanted[layer_id]] = [map_item_to_resolver(row) for row in rows]
    if not items:
        return cached.document
    return {
        **cached.document,
        "layers": [
            {**layer, "items": items[layer["key"]]} if layer["key"] in items else layer
            for layer in cached.document["layers"]
        ],
    }

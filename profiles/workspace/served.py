"""Served layers: a filtered layer's items fetched per request from the database.

A layer with an ``itemFilter`` is not held by the workers (``profiles.workspace.cache``
compiles it served, ``resolver.served``): for each request the engine names the filter
values it needs, and ``DatabaseSource`` fetches that customer's items with one indexed query
for all the served layers the request reads (the ``ItemKey`` rows of each filter's first
field, joined with the items and their stored terms), so a request costs O(customer), not
O(layer), and no worker holds the layer. The engine applies the filter exactly to what is
fetched: the keys need only find a superset. Terms stored by another analyser version, or
for an older write of the item, are not given to the engine (it tokenizes those items).

``SERVE_FILTERED_LAYERS`` (setting, default True) decides whether filtered layers are served;
False holds every layer in the workers as before (a comparison, and a way back).
"""

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping

from django.conf import settings
from django.db import connection

from profiles.models import Item, ItemKey, ItemTerms
from profiles.workspace.derived import filter_fields
from profiles.workspace.mappers import map_item_columns_to_resolver
from resolver.analysis import ANALYSER_VERSION, decode_terms
from resolver.served import Fetched, Need
from resolver.values import canonical_values

# Fetches a source remembers (each one customer's items of the served layers a request reads).
RECENT_FETCHES = 16

# How many fetches this process made, and how many items they returned (diagnostics, tests).
fetches = 0
fetched_items = 0


def serving_enabled() -> bool:
    return getattr(settings, "SERVE_FILTERED_LAYERS", True)


def served_layer(item_filter) -> bool:
    """Return whether a layer with this ``itemFilter`` is served (fetched per request)."""
    return bool(item_filter) and serving_enabled()


_COLUMNS = "i.path, i.title, i.body, i.metadata, t.terms"


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


def _fetched(rows, needs_by_layer: dict[int, Need], *, check: bool) -> dict[str, Fetched]:
    """Group fetched rows ``(layer id, path, title, body, metadata, terms)`` by layer."""
    global fetches, fetched_items
    out: dict[str, Fetched] = {}
    for need in needs_by_layer.values():
        out[need.layer] = Fetched(entries=[], terms={})
    for layer_id, path, title, body, metadata, stored in rows:
        need = needs_by_layer[layer_id]
        entry = _entry(path, title, body, metadata)
        if check and not all(
            want in canonical_values((entry.get("metadata") or {}).get(name))
            for name, want in need.filters
        ):
            continue
        fetched = out[need.layer]
        fetched.entries.append(entry)
        if stored is not None:
            fetched.terms[path] = decode_terms(stored)
    fetches += 1
    fetched_items += sum(len(fetched.entries) for fetched in out.values())
    return out


def fetch_keyed(wanted: list[tuple[int, str, str, Need]]) -> dict[str, Fetched]:
    """Return the items of served layers that may match their needs, in one query:
    ``wanted`` holds (layer id, keyed field, its value, need) per layer."""
    item, terms, key = _tables()
    where = " OR ".join(["(k.layer_id = %s AND k.field = %s AND k.value = %s)"] * len(wanted))
    sql = (
        f"SELECT k.layer_id, {_COLUMNS} FROM {key} k JOIN {item} i ON i.id = k.item_id "
        f"{_join_terms(terms)} WHERE {where} ORDER BY k.layer_id, i.position, i.id"
    )
    params: list = [ANALYSER_VERSION]
    for layer_id, field, value, _ in wanted:
        params += [layer_id, field, value[: ItemKey.VALUE_CHARS]]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return _fetched(rows, {layer_id: need for layer_id, _, _, need in wanted}, check=False)


def fetch_scanning(layer_id: int, need: Need) -> dict[str, Fetched]:
    """Return the items of a served layer matching a need by reading the whole layer: only
    for a filter field without keys (a proposed filter being previewed)."""
    item, terms, _ = _tables()
    sql = (
        f"SELECT i.layer_id, {_COLUMNS} FROM {item} i {_join_terms(terms)} "
        "WHERE i.layer_id = %s ORDER BY i.position, i.id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [ANALYSER_VERSION, layer_id])
        rows = cursor.fetchall()
    return _fetched(rows, {layer_id: need}, check=True)


class DatabaseSource:
    """The engine's source of served layers' items (``resolver.served.MaterialSource``):
    layer keys mapped to their rows' ids and keyed fields, as of the compilation. One query
    per request, whatever the number of served layers it reads."""

    def __init__(self, layers: Mapping[str, tuple[int, list[str]]]):
        self.layers = dict(layers)
        # The last few fetches, by needs: a page that resolves one input several times (a
        # draft and its saved profile, an impact's before and after) fetches once. A source
        # lives as long as its compilation: any write to a served layer compiles anew (its
        # content token moves) with a new source, so nothing here outlives a change.
        self._recent: OrderedDict[tuple, dict[str, Fetched]] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, needs: list[Need]) -> dict[str, Fetched]:
        key = tuple(needs)
        with self._lock:
            found = self._recent.get(key)
            if found is not None:
                self._recent.move_to_end(key)
                return found
        found = self._fetch(needs)
        with self._lock:
            self._recent[key] = found
            while len(self._recent) > RECENT_FETCHES:
                self._recent.popitem(last=False)
        return found

    def _fetch(self, needs: list[Need]) -> dict[str, Fetched]:
        wanted, out = [], {}
        for need in needs:
            layer_id, keyed = self.layers[need.layer]
            keyed_filter = next(
                ((field, value) for field, value in need.filters if field in keyed), None
            )
            if keyed_filter is None:
                out |= fetch_scanning(layer_id, need)
            else:
                wanted.append((layer_id, *keyed_filter, need))
        if wanted:
            out |= fetch_keyed(wanted)
        return out


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

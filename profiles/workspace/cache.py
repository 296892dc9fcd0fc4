"""The compiled workspace, cached per process and kept current at the cost of each change.

Any write to a consumer, layer, item, profile or rule changes ``WorkspaceVersion.token`` in
the same transaction, so a cached compilation is reused exactly while the committed material
is unchanged: reading the token costs one query, and a hit costs nothing more.

When the token moved, the worker catches up with what changed, in a constant number of
queries whatever the size of the workspace:

* **items** — the item change log (``profiles.workspace.item_change_log``) names the items
  written since the last entry this worker applied. Only those rows are read (one query), and
  the compiled workspace is patched with ``CompiledWorkspace.with_layer_changes``: an item edit
  costs the item, not its layer. A layer whose items were rewritten wholesale (an import), a new
  layer, a layer with many changed items, or a log pruned past this worker's position make the
  worker read those layers (or everything) again, as value rows (``values_list``).
* **layers' own fields** — the layer rows are read on every catch-up (one small query); a
  layer whose fields changed keeps its items.
* **consumers, profiles and rules** — read again only when ``WorkspaceVersion.profiles_token``
  moved (three small queries).

**Served layers** (every layer with an ``itemFilter``, ``profiles.workspace.served``) hold no
items here: the compilation carries their fields, their item count (``Layer.items_counted``)
and a source that fetches one request's items. A write to one of their items costs a worker's
catch-up the layer rows only: no item is read, and the layer's new copy (its count) is
compiled anew from its fields. Held layers build their BM25 postings from the items' stored
terms (``ItemTerms``), read with the rows.

Whenever more than items changed, the document goes through
``compile_workspace(document, previous=, tokens=)``; each layer's token there is a label of
this process's copy of the layer (the layer's ``content_token`` and a serial number, new
whenever the copy changes), so the engine reuses exactly the layers this worker did not touch.

After the first compilation the surviving objects are frozen (``gc.freeze()``, once per
process; see ``_freeze_once``), so the collector does not walk the compiled workspace again.
A worker's memory stays flat over edits (``tests/profiles/workspace/test_cache_and_queries.py``
measures it with request-like reference cycles alive during each recompile; the web
benchmark measures the gunicorn worker's RSS).

Every writer must record what it changed through ``profiles.workspace.writing.workspace_changed``
(which writes the log); a write that changes items without it is not seen by this cache.
"""

import functools
import gc
import itertools
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

from django.db import connection

from profiles.models import Consumer, Layer, Profile, Rule, WorkspaceVersion
from profiles.workspace import held_rows, metrics, replica
from profiles.workspace.fields import RULE_MODEL_FIELDS
from profiles.workspace.item_change_log import Op, item_changes_last, item_changes_since
from profiles.workspace.mappers import (
    map_consumer_to_resolver,
    map_item_to_resolver,
    map_layer_to_resolver,
    map_profile_to_resolver,
)
from profiles.workspace.selectors import (
    CONSUMER_COLUMNS,
    LAYER_COLUMNS,
    PROFILE_COLUMNS,
)
from profiles.workspace.served import (
    DatabaseSource,
    held_token_sql,
    keyed_for,
    request_reads_forget,
    rows_read,
    seen_version,
    served_layer,
)
from profiles.workspace.served import candidates as served_candidates
from resolver import CompiledWorkspace, compile_workspace

# Log entries read in one catch-up; more than this and the worker reads everything again.
MAX_CHANGES = 2_000
# Changed items of one layer patched in place; more than this (or than a tenth of the
# layer) and the layer is read again in full.
MAX_PATCHED_ITEMS = 500


@dataclass(frozen=True)
class LayerCopy:
    """This process's copy of one stored layer."""

    key: str
    entry: dict  # the layer's document entry, items included
    fields: dict  # the entry without its items (to see a change of the layer's own fields)
    label: str  # the engine's token of this copy: new whenever the copy changes
    size: int
    # A served layer (profiles.workspace.served): its items are not held (``entry`` has
    # none); ``stamp`` is what its copy was made from (content token, item count, keys).
    served: bool = False
    stamp: tuple = ()


@dataclass(frozen=True)
class CachedWorkspace:
    token: str | None
    document: dict
    compiled: CompiledWorkspace
    # layer id -> LayerCopy, in document order, for the next catch-up.
    layers: dict = field(default_factory=dict, repr=False, compare=False)
    # Consumers, profiles and rules are read again only when this token moved.
    profiles_token: str | None = field(default=None, compare=False)
    # The last item change log entry applied (None: the log was empty).
    last_change: int | None = field(default=None, compare=False)
    # Profile key -> number of its version in this snapshot (read with the profile rows), so
    # a resolution names the version of the rules it resolved (profiles.versioning.versions).
    profile_versions: dict[str, int] = field(default_factory=dict, compare=False)


_lock = threading.Lock()
_cached: CachedWorkspace | None = None
_labels = itertools.count(1)
# How many times this process compiled or patched the workspace (observable, for tests and
# diagnostics).
compilations = 0
# How many layers the last catch-up read in full from the database (the others were reused
# or patched), and how many item rows it read.
layers_read = 0
items_read = 0
# Whether the last catch-up compiled the document (False: it only patched items).
compiled_document = False


# --- reading rows ------------------------------------------------------------------------------


@functools.cache
def _version_sql(column: str) -> str:
    quote = connection.ops.quote_name
    return (
        f"SELECT {column}, {quote('profiles_token')} "
        f"FROM {quote(WorkspaceVersion._meta.db_table)} WHERE {quote('id')} = 1"
    )


def _version() -> tuple[str, str] | None:
    """Return the workspace's (held token, profiles token), None before any write: what
    this cache compiles moves with the held token (a served layer's new item leaves it).

    Every request that resolves reads it (a request that reads served layers reads it in
    its served statement instead, ``workspace_resolved``), so the SQL is written once
    rather than compiled by the ORM each time (with a read replica, the write counter too).
    """
    rows = rows_read(_version_sql(held_token_sql() + replica.COUNTER_COLUMN), [], prepared=True)
    return (replica.marked(rows[0]) if replica.ENABLED else rows[0]) if rows else None


def _layer_rows() -> list:
    return list(
        Layer.objects.order_by("position", "id").values_list(
            *LAYER_COLUMNS, "content_token", "items_counted", "keyed_fields", named=True
        )
    )


def _profile_sections(layer_keys: dict[int, str]) -> tuple[list, list, dict]:
    """Return the consumers' and profiles' document entries and the profiles' versions
    (three queries)."""
    consumers = list(
        Consumer.objects.order_by("position", "id").values_list(*CONSUMER_COLUMNS, named=True)
    )
    profiles = list(
        Profile.objects.order_by("position", "id").values_list(*PROFILE_COLUMNS, named=True)
    )
    rules: dict[int, list] = defaultdict(list)
    for rule in Rule.objects.order_by("profile_id", "position", "id").values_list(
        "profile_id", "layer_id", *RULE_MODEL_FIELDS, named=True
    ):
        rules[rule.profile_id].append(rule)
    consumer_keys = {row.id: row.key for row in consumers}
    profile_entries = [
        map_profile_to_resolver(
            row,
            rules.get(row.id, []),
            consumer_key=consumer_keys.get(row.consumer_id, ""),
            layer_keys=layer_keys,
        )
        for row in profiles
    ]
    versions = {row.key: row.version for row in profiles}
    return [map_consumer_to_resolver(row) for row in consumers], profile_entries, versions


def _item_rows(
    *, whole: set[int], paths: dict[int, set[str]], mapped: dict[int, str] | None = None
) -> dict[int, list]:
    """Return item rows by layer id (``held_rows.item_rows``), counting them in
    ``items_read``."""
    global items_read
    found, items_read = held_rows.item_rows(whole=whole, paths=paths, mapped=mapped)
    return found


_stored_terms = held_rows.stored_terms
_mapped = held_rows.mapped_layers
document_with_items = held_rows.document_with_items
SHARED_CHARS = held_rows.SHARED_CHARS


def _layer_fields(row) -> dict:
    entry = map_layer_to_resolver(row, [])
    del entry["items"]
    return entry


def _label(row) -> str:
    """Return a new label for this process's copy of a layer (never given twice)."""
    return f"{row.content_token}.{next(_labels)}"


def _copy(row, fields: dict, items: list[dict], *, label: str | None = None) -> LayerCopy:
    return LayerCopy(
        key=fields["key"],
        entry={**fields, "items": items},
        fields=fields,
        label=label or _label(row),
        size=len(items),
    )


def _served_stamp(row) -> tuple:
    # Not its content token nor its count: its items' writes move those, and each request
    # reads the count (``DatabaseSource``); its own fields are compared apart.
    return (tuple(row.keyed_fields or ()),)


def _served_copy(row, fields: dict) -> LayerCopy:
    """A served layer's copy: its fields, no items (they are fetched per request); ``size``
    is its item count as of the copy (each request's own count replaces it)."""
    return LayerCopy(
        key=fields["key"],
        entry={**fields, "items": []},
        fields=fields,
        label=_label(row),
        size=row.items_counted,
        served=True,
        stamp=_served_stamp(row),
    )


def _analysed(rows: dict[int, list], copies: dict, terms: dict[int, dict]) -> dict[str, dict]:
    """Return the stored terms of the layers read in full, by layer key and item path
    (``held_rows.analysed_terms``)."""
    return held_rows.analysed_terms(rows, {key: copy.key for key, copy in copies.items()}, terms)


def _serving(copies: dict[int, LayerCopy], layer_rows) -> tuple[dict, DatabaseSource]:
    """Return the served layers' totals by key and the source that fetches their items."""
    rows = {row.id: row for row in layer_rows}
    served = {copy.key: copy.size for copy in copies.values() if copy.served}
    source = DatabaseSource(
        {
            copy.key: (layer_id, keyed_for(rows[layer_id].item_filter, rows[layer_id].keyed_fields))
            for layer_id, copy in copies.items()
            if copy.served
        }
    )
    return served, source


# --- the whole workspace, and catching up -------------------------------------------------------


def _load(version: tuple[str, str] | None) -> CachedWorkspace:
    """Read and compile the whole workspace (the first time, or when the log cannot tell)."""
    global layers_read, compiled_document
    last_change = item_changes_last()  # before the rows: later entries are applied again
    layer_rows = _layer_rows()
    consumers, profiles, versions = _profile_sections({row.id: row.key for row in layer_rows})
    held = {row.id for row in layer_rows if not served_layer(row.item_filter)}
    terms = _stored_terms(held)
    rows = _item_rows(whole=held, paths={}, mapped=_mapped(layer_rows, held)) if held else {}
    copies = {}
    for row in layer_rows:
        if row.id in held:
            copies[row.id] = _copy(
                row,
                _layer_fields(row),
                [map_item_to_resolver(item) for item in rows.get(row.id, ())],
            )
        else:
            copies[row.id] = _served_copy(row, _layer_fields(row))
    layers_read = len(held)
    document = _document(consumers, copies, profiles)
    served, source = _serving(copies, layer_rows)
    compiled = compile_workspace(
        document,
        tokens=_tokens(copies),
        served=served,
        source=source,
        analysed=_analysed(rows, copies, terms),
    )
    compiled_document = True
    return CachedWorkspace(
        token=version[0] if version else None,
        document=document,
        compiled=compiled,
        layers=copies,
        profiles_token=version[1] if version else None,
        last_change=last_change,
        profile_versions=versions,
    )


def _document(consumers: list, copies: dict[int, LayerCopy], profiles: list) -> dict:
    return {
        "version": 1,
        "consumers": consumers,
        "layers": [copy.entry for copy in copies.values()],
        "profiles": profiles,
    }


def _tokens(copies: dict[int, LayerCopy]) -> dict[str, str]:
    return {copy.key: copy.label for copy in copies.values()}


def _catch_up(cached: CachedWorkspace, version: tuple[str, str]) -> CachedWorkspace:
    """Return the cached workspace brought up to date by reading what changed only."""
    global layers_read, compiled_document
    # Entries of layers served until now need nothing: none of their items is held.
    changes, complete = item_changes_since(
        cached.last_change,
        limit=MAX_CHANGES,
        skip_layers=[layer_id for layer_id, copy in cached.layers.items() if copy.served],
    )
    if not complete:
        return _load(version)
    layer_rows = _layer_rows()
    # Which items each layer has to re-read, and which of them were created anew (a path
    # deleted and created again moves to the end of its layer).
    rewritten: set[int] = set()
    dirty: dict[int, dict[str, bool]] = defaultdict(dict)
    for change in changes:
        if change.op == Op.LAYER:
            rewritten.add(change.layer_id)
        else:
            created = dirty[change.layer_id].get(change.path, False)
            dirty[change.layer_id][change.path] = created or change.op == Op.CREATE

    whole: set[int] = set()
    patched: dict[int, dict[str, bool]] = {}
    fields_of: dict[int, dict] = {}
    for row in layer_rows:
        copy = cached.layers.get(row.id)
        fields_of[row.id] = fields = _layer_fields(row)
        if served_layer(row.item_filter):
            continue  # nothing of its items is held
        if copy is not None and copy.served:
            whole.add(row.id)  # served until now: its items are read
            continue
        paths = dirty.get(row.id)
        if not paths or copy is None or row.id in rewritten:
            if copy is None or row.id in rewritten:
                whole.add(row.id)
        elif len(paths) > min(MAX_PATCHED_ITEMS, max(16, copy.size // 10)):
            whole.add(row.id)  # many changed items: one read of the layer is cheaper
        elif fields != copy.fields:
            whole.add(row.id)  # rare: both at once; the engine re-indexes the layer anyway
        else:
            patched[row.id] = paths
    terms = _stored_terms(whole)
    rows = _item_rows(
        whole=whole,
        paths={layer_id: set(p) for layer_id, p in patched.items()},
        mapped=_mapped(layer_rows, whole),
    )
    layers_read = len(whole)

    compiled = cached.compiled
    copies: dict[int, LayerCopy] = {}
    for row in layer_rows:
        fields = fields_of[row.id]
        copy = cached.layers.get(row.id)
        if served_layer(row.item_filter):
            same = (
                copy is not None
                and copy.served
                and copy.fields == fields
                and copy.stamp == _served_stamp(row)
            )
            copies[row.id] = copy if same else _served_copy(row, fields)
            continue
        if row.id in whole:
            items = [map_item_to_resolver(item) for item in rows.get(row.id, ())]
            copies[row.id] = _copy(row, fields, items)
        elif row.id in patched:
            label = _label(row)
            compiled, items = _patch_layer(
                compiled, copy, patched[row.id], rows.get(row.id, ()), label=label
            )
            copies[row.id] = _copy(row, fields, items, label=label)
        elif fields != copy.fields:
            copies[row.id] = _copy(row, fields, copy.entry["items"])
        else:
            copies[row.id] = copy

    profiles_changed = version[1] != cached.profiles_token
    if profiles_changed:
        layer_keys = {row.id: row.key for row in layer_rows}
        consumers, profiles, versions = _profile_sections(layer_keys)
    else:
        consumers = cached.document["consumers"]
        profiles = cached.document["profiles"]
        versions = cached.profile_versions
    document = _document(consumers, copies, profiles)

    # Only items changed (patched above, with the layers' fields as they were): the patched
    # compilation is the whole answer, no document goes through the engine.
    only_items = (
        not profiles_changed
        and list(copies) == list(cached.layers)
        and all(copies[key] is cached.layers[key] or key in patched for key in copies)
    )
    compiled_document = not only_items
    if not only_items:
        served, source = _serving(copies, layer_rows)
        compiled = compile_workspace(
            document,
            previous=compiled,
            tokens=_tokens(copies),
            served=served,
            source=source,
            analysed=_analysed({key: rows[key] for key in whole if key in rows}, copies, terms),
        )
    return CachedWorkspace(
        token=version[0],
        document=document,
        compiled=compiled,
        layers=copies,
        profiles_token=version[1],
        last_change=changes[-1].id if changes else cached.last_change,
        profile_versions=versions,
    )


def _patch_layer(
    compiled: CompiledWorkspace, copy: LayerCopy, paths: dict[str, bool], rows, *, label: str
) -> tuple[CompiledWorkspace, list[dict]]:
    """Apply the current state of some items of one layer; return the compiled workspace
    and the layer's new items.

    ``paths`` maps each changed path to whether it was created since (then it goes to the
    end of its layer, as its new row's position says); ``rows`` are the rows found at those
    paths, in document order. A path without a row was deleted. One pass over the layer's
    entries (pointers; no item is mapped or validated but the changed ones).
    """
    items = copy.entry["items"]
    present = {item["path"] for item in items if item["path"] in paths}
    found = {row.path: map_item_to_resolver(row) for row in rows}
    gone = {path for path in present if path not in found or paths[path]}
    replace = {path: found[path] for path in present - gone}
    append = [document for path, document in found.items() if path not in replace]
    patched = compiled.with_layer_changes(
        copy.key, upsert=[*replace.values(), *append], delete=sorted(gone), token=label
    )
    new_items = []
    for item in items:
        path = item["path"]
        if path in paths:
            if path in gone:
                continue
            item = replace.get(path, item)
        new_items.append(item)
    new_items.extend(append)
    return patched, new_items


_frozen = False


def _freeze_once() -> None:
    """Freeze what survives the process's first compilation, once.

    The collector then never walks the bulk of the workspace (and Django's own long-lived
    objects) again; later compilations re-index only changed layers and reuse the frozen
    indexes of the others. Freezing is not repeated on each recompile: a freeze also catches
    the reference cycles of the request in flight, and a frozen cycle is never collected —
    freezing on every recompile leaked that much per edit (measured under gunicorn), and
    unfreezing to collect it costs a full collection per edit.
    """
    global _frozen
    if not _frozen:
        gc.collect()
        gc.freeze()
        _frozen = True


def workspace_get() -> CachedWorkspace:
    """Return the document and compiled workspace of the committed state (caught up if it
    changed).

    Raises ``resolver.WorkspaceError`` when the stored rows do not form a valid workspace.
    """
    global _cached, compilations
    # Read the token before the rows: a write that commits in between leaves a newer token
    # behind, so the next call catches up again rather than serving stale material.
    version = _version()
    token = version[0] if version else None
    cached = _cached
    if cached is not None and token is not None and cached.token == token:
        return cached
    with _lock:
        cached = _cached
        if cached is not None and token is not None and cached.token == token:
            return cached
        caught_up = cached is not None and version is not None
        started = time.perf_counter()
        fresh = _catch_up(cached, version) if caught_up else _load(version)
        compilations += 1
        kind = "catch_up" if caught_up else "load"
        metrics.compile_seconds.labels(kind).observe(time.perf_counter() - started)
        # Without a token (nothing written through the models yet) nothing can invalidate it.
        if token is not None:
            _cached = fresh
        _freeze_once()
        return fresh


def workspace_warm() -> CachedWorkspace:
    """Compile the committed workspace and build the indexes its profiles read
    (``CompiledWorkspace.prepare``): what a server process does before it serves, so that
    no request pays for it. Raises what ``workspace_get`` raises."""
    cached = workspace_get()
    cached.compiled.prepare()
    return cached


def workspace_held() -> CachedWorkspace | None:
    """Return the compilation this process holds (None before its first), with no query."""
    return _cached


def workspace_cache_clear() -> None:
    """Forget the cached compilation (the next call reads and compiles everything) and the
    served layers' cached candidates (a database restored or emptied can number rows anew)."""
    global _cached
    with _lock:
        _cached = None
    served_candidates.clear()


def workspace_resolved(resolve):
    """Return ``resolve(snapshot)`` and the snapshot, for a resolution of the committed
    state at no query of its own when the workspace has served layers.

    The cached compilation answers at once, and the served statement of its resolution reads
    the held token in the same round trip (``served.seen_version``): when that token is not
    the compilation's (or the resolution never read it: a bad request, an error), the
    workspace is caught up (``workspace_get``) and ``resolve`` runs again on it. So the
    answer is always the committed state's, as with ``workspace_get`` first.
    """
    cached = _cached
    if cached is None or cached.token is None or not cached.compiled.served:
        snapshot = workspace_get()
        return resolve(snapshot), snapshot
    reset = seen_version.set(None)
    try:
        try:
            result = resolve(cached)
        except Exception:
            if seen_version.get() != cached.token:
                result = None
            else:
                raise
        if seen_version.get() == cached.token:
            return result, cached
    finally:
        seen_version.reset(reset)
    request_reads_forget()  # read anew with the compilation caught up
    snapshot = workspace_get()
    return resolve(snapshot), snapshot


def content_version() -> str:
    """Return the committed content version token ("" before any write): one query, whatever
    the workspace's size (conditional reads of the export derive their ETag from it; it
    moves with served layers' items too)."""
    rows = rows_read(_version_sql("token"), [])
    return rows[0][0] if rows else ""


def held_version() -> str:
    """Return the committed token of what workers hold ("" before any write)."""
    rows = rows_read(_version_sql("held_token"), [])
    return rows[0][0] if rows else ""


def cached_token() -> str:
    """Return the held token of the compilation last served ("" if none)."""
    cached = _cached
    return (cached.token or "") if cached is not None else ""

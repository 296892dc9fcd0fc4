"""The compiled workspace, cached per process and keyed by the workspace version token.

Any write to a consumer, layer, item, profile or rule changes ``WorkspaceVersion.token`` in the
same transaction, so a cached compilation is reused exactly while the committed material is
unchanged: reading the token costs one query, and a hit costs nothing more.

When the token moved, the worker re-reads **only what changed** (a constant number of
queries, whatever the size):

* the small sections — consumers, layers' own fields, profiles, rules — as value rows;
* the items of the layers whose content token (``Layer.content_token``) changed (all of
  them the first time), as value rows (``values_list``), never model instances. A layer
  whose token did not move keeps the document entry it had, so the engine finds the same
  layer again and reuses its index.

After the first compilation the surviving objects are frozen (``gc.freeze()``, once per
process; see ``_freeze_once``), so the collector does not walk the compiled workspace again.
A worker's memory stays flat over edits (``tests/profiles/test_cache_and_queries.py``
measures it with request-like reference cycles alive during each recompile; the web
benchmark measures the gunicorn worker's RSS).
"""

import gc
import threading
from dataclasses import dataclass, field

from profiles.mappers import (
    map_consumer_to_resolver,
    map_layer_to_resolver,
    map_profile_to_resolver,
)
from profiles.models import Layer, WorkspaceVersion
from profiles.selectors import item_values_iterate, workspace_sections_get
from resolver import CompiledWorkspace, compile_workspace


@dataclass(frozen=True)
class CachedWorkspace:
    token: str | None
    document: dict
    compiled: CompiledWorkspace
    # layer id -> (content token, the layer's document entry) for the next incremental read.
    layer_entries: dict = field(default_factory=dict, repr=False, compare=False)
    # Profile key -> number of its version in this snapshot (read with the profile rows), so
    # a resolution names the version of the rules it resolved (profiles.versions).
    profile_versions: dict[str, int] = field(default_factory=dict, compare=False)


_lock = threading.Lock()
_cached: CachedWorkspace | None = None
# How many times this process compiled the workspace (observable, for tests and diagnostics).
compilations = 0
# How many layers the last compilation read from the database (the others were reused).
layers_read = 0


def _layer_tokens() -> dict[int, str]:
    """Return each layer's content token (changed in the transaction of any write to it)."""
    return dict(Layer.objects.values_list("id", "content_token"))


def _read_document(previous: CachedWorkspace | None) -> tuple[dict, dict, dict]:
    """Return the committed workspace document, reading the items of changed layers only."""
    global layers_read
    tokens = _layer_tokens()
    sections = workspace_sections_get()
    reusable = previous.layer_entries if previous is not None else {}
    stale = [
        row.id
        for row in sections.layers
        if row.id not in reusable or reusable[row.id][0] != tokens.get(row.id)
    ]
    items_by_layer: dict[int, list] = {layer_id: [] for layer_id in stale}
    if stale:
        # Every layer changed (the first read): no filter, one cursor reads them all.
        everything = len(stale) == len(sections.layers)
        for item in item_values_iterate(layer_ids=None if everything else stale):
            items_by_layer[item.layer_id].append(item)
    layers_read = len(stale)
    entries: dict[int, tuple[str | None, dict]] = {}
    layers = []
    for row in sections.layers:
        if row.id in items_by_layer:
            entry = map_layer_to_resolver(row, items_by_layer[row.id])
        else:
            entry = reusable[row.id][1]
        entries[row.id] = (tokens.get(row.id), entry)
        layers.append(entry)
    consumer_keys = {row.id: row.key for row in sections.consumers}
    layer_keys = {row.id: row.key for row in sections.layers}
    document = {
        "version": 1,
        "consumers": [map_consumer_to_resolver(row) for row in sections.consumers],
        "layers": layers,
        "profiles": [
            map_profile_to_resolver(
                row,
                sections.rules.get(row.id, []),
                consumer_key=consumer_keys.get(row.consumer_id, ""),
                layer_keys=layer_keys,
            )
            for row in sections.profiles
        ],
    }
    versions = {row.key: row.version for row in sections.profiles}
    return document, entries, versions


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
    """Return the document and compiled workspace of the committed state (compile if changed).

    Raises ``resolver.WorkspaceError`` when the stored rows do not form a valid workspace.
    """
    global _cached, compilations
    # Read the token before the rows: a write that commits in between leaves a newer token
    # behind, so the next call recompiles rather than serving stale material.
    token = WorkspaceVersion.current_token()
    cached = _cached
    if cached is not None and token is not None and cached.token == token:
        return cached
    with _lock:
        cached = _cached
        if cached is not None and token is not None and cached.token == token:
            return cached
        document, entries, versions = _read_document(cached)
        # Layers that did not change keep their indexes: an edit re-indexes one layer.
        previous = cached.compiled if cached is not None else None
        compiled = compile_workspace(document, previous=previous)
        compilations += 1
        fresh = CachedWorkspace(
            token=token,
            document=document,
            compiled=compiled,
            layer_entries=entries,
            profile_versions=versions,
        )
        # Without a token (nothing written through the models yet) nothing can invalidate it.
        if token is not None:
            _cached = fresh
        _freeze_once()
        return fresh


def workspace_cache_clear() -> None:
    """Forget the cached compilation (the next call recompiles)."""
    global _cached
    with _lock:
        _cached = None


def cached_token() -> str:
    """Return the content version token of the compilation last served ("" if none)."""
    cached = _cached
    return (cached.token or "") if cached is not None else ""

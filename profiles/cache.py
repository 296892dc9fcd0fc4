"""The compiled workspace, cached per process and keyed by the workspace version token.

Any write to a consumer, layer, item, profile or rule changes ``WorkspaceVersion.token`` in the
same transaction (``profiles.models``), so a cached compilation is reused exactly while the
committed material is unchanged. Reading the token costs one query; a hit costs nothing more.
"""

import threading
from dataclasses import dataclass

from profiles.mappers import map_rows_to_document
from profiles.models import WorkspaceVersion
from profiles.selectors import workspace_rows_get
from resolver import CompiledWorkspace, compile_workspace


@dataclass(frozen=True)
class CachedWorkspace:
    token: str | None
    document: dict
    compiled: CompiledWorkspace


_lock = threading.Lock()
_cached: CachedWorkspace | None = None
# How many times this process compiled the workspace (observable, for tests and diagnostics).
compilations = 0


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
        document = map_rows_to_document(workspace_rows_get())
        # Layers that did not change keep their indexes: an edit re-indexes one layer.
        previous = cached.compiled if cached is not None else None
        compiled = compile_workspace(document, previous=previous)
        compilations += 1
        fresh = CachedWorkspace(token=token, document=document, compiled=compiled)
        # Without a token (nothing written through the models yet) nothing can invalidate it.
        if token is not None:
            _cached = fresh
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

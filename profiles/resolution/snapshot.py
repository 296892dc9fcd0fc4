"""The snapshot an application evaluates locally: what a key may resolve, as a workspace
document the engine reads (SPEC §2), with the engine version that must read it.

``GET /api/v1/snapshot`` (``profiles.api.snapshot``) serves it; the Python client
(``clients/python``) keeps it fresh and resolves from it. It holds:

* ``workspace``: the consumers of the profiles the key may resolve, every layer, and those
  profiles (a key limited to environments: the profiles of those environments only). A
  layer without an ``itemFilter`` comes with its items; a layer with one (customer
  material, which the server serves per request) comes with its fields and no item, so
  that rules and ``availability`` naming it stay valid;
* ``served``: each served layer's item total, which the engine needs to say, for a request,
  whether it reads the layer (``CompiledWorkspace.needs``) and to answer the layer's
  ``available.items`` exactly when it does not;
* ``engine``: ``resolver.fingerprint.engine_version()``; ``version``: the content version
  it was made from.

It is built from the worker's compiled copy (no query beyond the version token when that
copy is current), encoded once per content version and key limit, and refused beyond
``SNAPSHOT_MAX_BYTES`` (``SnapshotTooLarge``), so a snapshot never costs more than its cap.
"""

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass

from django.conf import settings

from profiles.workspace import cache
from resolver.fingerprint import engine_version
from resolver.report import json_text

# The snapshot's own format (the client refuses one it does not know).
SNAPSHOT_FORMAT = 1
# Default cap of an encoded snapshot (setting SNAPSHOT_MAX_BYTES).
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
# Encoded snapshots kept per process (content version × key limit).
RECENT_SNAPSHOTS = 4


class SnapshotTooLarge(Exception):
    """The snapshot would be larger than ``SNAPSHOT_MAX_BYTES`` (``size`` bytes)."""

    def __init__(self, size: int, limit: int):
        super().__init__(
            f"the snapshot is {size} bytes, over the cap of {limit} bytes (SNAPSHOT_MAX_BYTES): "
            "resolve through the API"
        )
        self.size = size
        self.limit = limit


@dataclass(frozen=True)
class Snapshot:
    etag: str
    data: bytes  # the encoded snapshot (JSON)


_recent: OrderedDict[tuple, Snapshot] = OrderedDict()
_recent_lock = threading.Lock()


def snapshot_max_bytes() -> int:
    return int(getattr(settings, "SNAPSHOT_MAX_BYTES", DEFAULT_MAX_BYTES))


def snapshot_etag(token: str, environments: frozenset[str] | None) -> str:
    """Return the ETag of the snapshot of content version ``token`` for a key limited to
    ``environments`` (None: not limited): it names everything the snapshot is made of."""
    limit = "*" if environments is None else "\n".join(sorted(environments))
    digest = hashlib.blake2b(
        "\0".join((str(SNAPSHOT_FORMAT), engine_version(), token, limit)).encode(),
        digest_size=16,
    )
    return f'"{digest.hexdigest()}"'


def snapshot_current_etag(environments: frozenset[str] | None) -> str:
    """Return the ETag the snapshot would have now: one query (the content version), so that a
    poll that is current answers 304 without building anything."""
    return snapshot_etag(cache.content_version(), environments)


def snapshot_document(cached, environments: frozenset[str] | None) -> dict:
    """Return the snapshot of the cached workspace for a key limited to ``environments``."""
    document = cached.document
    profiles = [
        profile
        for profile in document["profiles"]
        if environments is None or profile.get("environment") in environments
    ]
    consumers_used = {profile["consumer"] for profile in profiles}
    # Every layer with an itemFilter is customer material: never in a snapshot, whether or
    # not this server serves it (SERVE_FILTERED_LAYERS) or holds it.
    served = {
        layer["key"]: cached.compiled.served.get(layer["key"], len(layer.get("items") or ()))
        for layer in document["layers"]
        if layer.get("itemFilter")
    }
    held = [layer["key"] for layer in document["layers"] if layer["key"] not in served]
    layers = cache.document_with_items(cached, held)["layers"] if held else document["layers"]
    return {
        "snapshot": SNAPSHOT_FORMAT,
        "engine": engine_version(),
        "version": cached.token or "",
        "served": served,
        "workspace": {
            "version": 1,
            "consumers": [c for c in document["consumers"] if c["key"] in consumers_used],
            "layers": [
                {**layer, "items": []} if layer["key"] in served else layer for layer in layers
            ],
            "profiles": profiles,
        },
    }


def snapshot_get(environments: frozenset[str] | None) -> Snapshot:
    """Return the current snapshot for a key limited to ``environments`` (None: every
    profile), encoded. Raises ``SnapshotTooLarge`` beyond the cap, and what
    ``cache.workspace_get`` raises."""
    cached = cache.workspace_get()
    key = (cached.token, environments)
    with _recent_lock:
        found = _recent.get(key)
    limit = snapshot_max_bytes()
    if found is None:
        data = json_text(snapshot_document(cached, environments)).encode()
        if len(data) > limit:
            raise SnapshotTooLarge(len(data), limit)  # not kept: a cap bounds the memory too
        found = Snapshot(etag=snapshot_etag(cached.token or "", environments), data=data)
        if cached.token is not None:
            with _recent_lock:
                _recent[key] = found
                while len(_recent) > RECENT_SNAPSHOTS:
                    _recent.popitem(last=False)
    elif len(found.data) > limit:
        raise SnapshotTooLarge(len(found.data), limit)
    return found

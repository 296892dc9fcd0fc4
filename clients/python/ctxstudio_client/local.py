"""Local evaluation: the snapshot resolved in this process with the engine package
``resolver`` (the distribution ``ctxstudio-engine``, ``clients/engine``; docs/client.md),
imported only when local evaluation is used.

A request is resolved locally only when the answer is the server's: the snapshot's engine
version is this process's (``resolver.fingerprint.engine_version``, a digest of the engine's
code), the request's profile is in the snapshot, and the request reads no served layer
(customer material, which the snapshot does not hold: ``CompiledWorkspace.needs``). Otherwise
``evaluate`` returns the reason, and the client asks the server (or raises, ``local="only"``).
With ``degraded=True`` a request that reads served layers is resolved with those layers
unavailable (SPEC §3 ``availability``), and the answer names them (``Resolution.degraded``).
"""

import importlib
import json

from ctxstudio_client.answers import Origin, Resolution
from ctxstudio_client.errors import ApiError
from ctxstudio_client.snapshot import LocalSnapshot

SNAPSHOT_FORMAT = 1
ENGINE_MISSING = (
    'the engine package "resolver" is not installed: install ctxstudio-engine built from '
    "the server's commit (clients/engine, docs/client.md)"
)


class _ServedNeeded(Exception):
    def __init__(self, needs):
        super().__init__("served layers needed")
        self.layers = tuple(need.layer for need in needs)


def _no_source(needs):
    """The source of a snapshot's served layers: none. The engine asks on every resolution
    (with no needs too, for the layers' totals, which the snapshot holds already)."""
    if needs:
        raise _ServedNeeded(needs)
    return {}


class LocalEngine:
    def __init__(self):
        self._modules = None
        self.missing = ""

    def modules(self):
        """Return (resolver, engine version) or None (``missing`` says why)."""
        if self._modules is None and not self.missing:
            try:
                resolver = importlib.import_module("resolver")
                fingerprint = importlib.import_module("resolver.fingerprint")
            except ImportError:
                self.missing = ENGINE_MISSING
                return None
            self._modules = (resolver, fingerprint.engine_version())
        return self._modules

    def prepare(
        self, data: bytes, etag: str, fetched_at: float, *, from_file: bool = False
    ) -> LocalSnapshot:
        """Compile a snapshot's bytes, or say why they cannot be evaluated here. Raises
        ``ValueError`` for bytes that are not a snapshot."""
        document = json.loads(data)
        if not isinstance(document, dict) or document.get("snapshot") != SNAPSHOT_FORMAT:
            raise ValueError(f"not a snapshot of format {SNAPSHOT_FORMAT}")
        engine = str(document.get("engine"))
        kept = dict(data=data, etag=etag, fetched_at=fetched_at, engine=engine, from_file=from_file)
        modules = self.modules()
        if modules is None:
            return LocalSnapshot(**kept, refusal=self.missing)
        resolver, local_engine = modules
        if engine != local_engine:
            return LocalSnapshot(
                **kept,
                refusal=(
                    f"the snapshot is for engine {engine} and this process has engine "
                    f"{local_engine}: install the engine of the server's version"
                ),
            )
        served = document["served"]
        compiled = resolver.compile_workspace(
            document["workspace"], served=served, source=_no_source
        )
        return LocalSnapshot(**kept, compiled=compiled, served=tuple(served))

    def evaluate(
        self, snapshot: LocalSnapshot | None, request: dict, *, degraded: bool = False
    ) -> Resolution | str:
        """Return the local resolution of ``request``, or why the server must answer it."""
        if snapshot is None:
            return self.missing or "no snapshot yet (it is being fetched)"
        if snapshot.refusal:
            return snapshot.refusal
        resolver = self._modules[0]
        compiled = snapshot.compiled
        try:
            try:
                return _resolution(compiled.resolve_json(request).data, ())
            except _ServedNeeded as needed:
                if not degraded:
                    names = ", ".join(needed.layers)
                    return f"the request reads served layers (customer material): {names}"
                availability = dict(request.get("availability") or {})
                availability.update(dict.fromkeys(needed.layers, "unavailable"))
                encoded = compiled.resolve_json({**request, "availability": availability})
                return _resolution(encoded.data, needed.layers)
        except resolver.RequestError as exc:
            # The server's answer may differ (a key limited to environments: 403), so an
            # error is the server's to give; ``local="only"`` raises this one.
            return LocalRequestError(exc)


class LocalRequestError(str):
    """The reason of a request the engine refused locally, with the error it gave."""

    def __new__(cls, exc):
        reason = super().__new__(cls, f"the engine refused the request locally: {exc.code}")
        body = exc.as_dict()
        status = 404 if exc.code == "PROFILE_NOT_FOUND" else 400
        error = body["error"]
        reason.error = ApiError(
            status,
            error["code"],
            error["message"],
            error.get("path", ""),
            body=body,
            origin="local",
        )
        return reason


def _resolution(data: bytes, degraded: tuple[str, ...]) -> Resolution:
    return Resolution(data=data, origin=Origin.LOCAL, degraded=degraded)

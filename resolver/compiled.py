"""The compiled workspace: a workspace validated once, with its layer indexes (SPEC §4).

``compile_workspace(document)`` validates a workspace document and builds a
``CompiledWorkspace``, whose ``resolve`` runs the stages (``resolver.engine``) for a request;
``resolve(document, request)`` does both for a one-off.

Keeping a compiled workspace current (a long-lived process, e.g. a web worker):

* ``compile_workspace(document, previous=compiled, tokens={layer_key: token, ...})``
  recompiles a changed document. ``tokens`` are the caller's per-layer content tokens (a
  version bumped in the transaction that changes the layer): a layer whose token equals its
  token in ``previous`` keeps its earlier ``Layer`` object and index, and its entry is not
  validated or read again (only its key takes part in the checks between entries). So a
  compile after a change of profiles or consumers costs those, whatever the size of the
  layers. Other layers are built again, but items exactly equal to earlier ones (types
  included) are taken as the earlier objects without validation, and the earlier index is
  patched for the rest: a one-item change costs reading the layer's entries once, not
  re-tokenizing it. A matching token for a changed entry is the caller's error: the change
  is not seen.
* ``compiled.with_layer_changes(layer_key, upsert=[item documents], delete=[paths],
  token=new_token)`` applies a single-item (or few-item) change without a document: the
  upserted items are validated alone, the layer's index is patched (only the changed and
  deleted items are tokenized; postings, lengths, dates, filters and shared records are
  copied with the changed slots rebuilt), and every other layer, its index and the
  profiles are shared as the same objects. A deleted item leaves an empty slot in the index
  (nothing is renumbered) until a quarter of the slots are empty, when they are compacted.
  Cost: the changed items plus copying the layer's per-item arrays. The earlier compiled
  workspace stays valid and unchanged.
* ``with_profile_draft`` shares every layer object and index, so a draft costs its profile.
* After (re)compiling in a process that keeps the result, ``gc.collect(); gc.freeze()``
  moves the compiled workspace (millions of small objects for a large workspace) out of
  the cyclic collector's reach, so later collections do not walk it; it is freed by
  reference counting as usual once dropped (a compiled workspace holds no cycles). A
  resolution pauses the collector while it builds its records for the same reason.
"""

import bisect
import dataclasses
import gc
from collections.abc import Iterable, Mapping
from contextlib import contextmanager

import numpy as np

from resolver.clock import system_clock
from resolver.engine import recency_field, run_stages
from resolver.errors import PROFILE_NOT_FOUND, RequestError, WorkspaceError
from resolver.index import LayerIndex
from resolver.model import Item, Profile, Rule
from resolver.patching import ItemChanges, item_changes, patched_index
from resolver.report import (
    EncodedResolution,
    encoded_resolution,
    layer_ranking,
    layer_reference_counts,
    resolution_json,
)
from resolver.request import Request, parse_request
from resolver.served import Fetched, MaterialSource, Need
from resolver.trace import Context, LayerTrace
from resolver.validation import Workspace, build_workspace, merge_rule
from resolver.validation.entries import _Builder
from resolver.validation.primitives import _Stop
from resolver.values import canonical


class CompiledWorkspace:
    """A validated workspace with its per-layer indexes; resolving never changes it."""

    def __init__(
        self,
        workspace: Workspace,
        indexes: dict[str, LayerIndex] | None = None,
        *,
        tokens: dict[str, object] | None = None,
        served: dict[str, int] | None = None,
        source: MaterialSource | None = None,
        analysed: dict[str, dict] | None = None,
    ):
        self.workspace = workspace
        self.consumers = {c.key: c for c in workspace.consumers}
        self.profiles = {p.key: p for p in workspace.profiles}
        self.layer_keys = frozenset(layer.key for layer in workspace.layers)
        # The caller's content tokens of the layers (see ``compile_workspace``).
        self.layer_tokens = {
            key: token
            for key, token in (tokens or {}).items()
            if key in self.layer_keys and token is not None
        }
        # Served layers (resolver.served): key -> item total; their items come per request
        # from ``source``.
        self.served = {
            key: total for key, total in (served or {}).items() if key in self.layer_keys
        }
        self.source = source
        shared = indexes or {}
        analysed = analysed or {}
        self.indexes = []
        for layer in workspace.layers:
            index = shared.get(layer.key)
            # An index serves the very layer object it was built or derived for.
            if index is None or index.layer is not layer:
                index = LayerIndex(layer, analysed.get(layer.key))
            self.indexes.append(index)
        self._by_selection = {
            (p.consumer, p.objective, p.environment): p for p in workspace.profiles
        }

    def prepare(self) -> int:
        """Build now what the profiles' first resolutions would build on first use, and
        return how many layers it prepared: per layer a profile reads (not excluded by its
        rule, in scope by ``appliesTo``), its ``itemFilter`` lookups, and per reading rule
        the BM25 postings (``retrieve`` or relevance order), the currentness dates and the
        recency dates. A server calls it before it serves, so that no request pays for
        tokenizing a layer; resolving never needs it and gives the same answers either way.
        """
        prepared = 0
        for index in self.indexes:
            layer = index.layer
            if layer.key in self.served:
                continue  # its items come with each request
            rules = [
                profile.rule_for(layer.key)
                for profile in self.workspace.profiles
                if profile.rule_for(layer.key).participation != "exclude"
                and (not layer.objectives or profile.objective in layer.objectives)
                and (not layer.consumers or profile.consumer in layer.consumers)
            ]
            if not rules:
                continue
            prepared += 1
            for name, _ in layer.item_filter:
                index.filter_lookup(name)
            for rule in rules:
                if rule.mode == "retrieve" or rule.effective_order == "relevance":
                    index.postings  # noqa: B018 (built on first use)
                if rule.currentness is not None:
                    index.field_dates(rule.currentness.field)
                if rule.effective_order == "recency":
                    index.recency_dates(recency_field(rule))
        return prepared

    def select_profile(self, request: Request) -> Profile:
        """Return the requested profile (by key, or by consumer + objective + environment)."""
        if request.profile is not None:
            profile = self.profiles.get(request.profile)
            if profile is None:
                raise RequestError(
                    f'no profile "{request.profile}"', path="profile", code=PROFILE_NOT_FOUND
                )
            return profile
        pair = (request.consumer, request.objective)
        profile = None
        if request.environment is not None:
            profile = self._by_selection.get((*pair, request.environment))
        if profile is None:
            profile = self._by_selection.get((*pair, None))
        if profile is None:
            where = f' in environment "{request.environment}"' if request.environment else ""
            raise RequestError(
                f'no profile for consumer "{request.consumer}" and objective '
                f'"{request.objective}"{where}',
                path="consumer",
                code=PROFILE_NOT_FOUND,
            )
        return profile

    def resolve(self, request: dict, *, clock=system_clock) -> dict:
        """Resolve a SPEC §3 request and return the SPEC §7 resolution JSON.

        The resolution is **read-only**: its reference and materialized records are shared
        with the layer indexes and with other resolutions (prepared once per layer, so a
        resolution does not build one dict per item). Serialize it as it is (``json_text``
        never copies); a caller that wants to change one must copy what it changes.
        """
        with _collector_paused():
            return self._resolve(request, clock)

    def resolve_json(self, request: dict, *, clock=system_clock) -> EncodedResolution:
        """Resolve a SPEC §3 request and return the resolution as the API and CLI write it.

        ``result.data`` is exactly ``json_text(self.resolve(request)).encode()`` (compact
        JSON, UTF-8, final newline), written without building the resolution's long lists:
        they are joined from JSON fragments each layer index prepares once per item.
        ``result.head`` holds the top-level fields other than ``layers``, ``references`` and
        ``currentnessExcluded`` (status, profile, budget, blockers, warnings, output…).
        Raises what ``resolve`` raises.
        """
        with _collector_paused():
            return encoded_resolution(*self._run(request, clock))

    def ranking(
        self, request: dict, layer_key: str, *, paths=None, clock=system_clock
    ) -> list[dict]:
        """Return how one layer ranked its retrieved items for a request (full detail).

        A list in rank order of every content unit and overflow reference of the layer,
        each ``{"item", "rank", "score", "matchedTerms"}`` (``resolver.report.layer_ranking``);
        with ``paths``, only the entries of those items. Empty when the layer is omitted or
        unknown. Not part of the resolution JSON: the studio shows it beside the references,
        which carry no score (SPEC §7). Raises what ``resolve`` raises.
        """
        with _collector_paused():
            traces, ctx, _ = self._run({**request, "detail": "full"}, clock)
        trace = next((t for t in traces if t.layer.key == layer_key), None)
        return layer_ranking(trace, ctx, paths) if trace is not None else []

    def resolve_with_reference_counts(
        self, request: dict, *, clock=system_clock
    ) -> tuple[dict, dict[str, dict[str, int]]]:
        """Resolve a request as ``resolve`` does; return the resolution and, by layer key,
        the number of the layer's references per reason (``report.layer_reference_counts``).

        From the same run: a summary (SPEC §7.1) gives a layer's references as one number,
        which the studio's timeline tells apart (overflow offered, items not retrieved).
        Not part of the resolution JSON. Raises what ``resolve`` raises.
        """
        with _collector_paused():
            traces, ctx, text = self._run(request, clock)
            resolution = resolution_json(traces, ctx, text)
        return resolution, {trace.layer.key: layer_reference_counts(trace) for trace in traces}

    def _resolve(self, request: dict, clock) -> dict:
        return resolution_json(*self._run(request, clock))

    def _run(self, request: dict, clock) -> tuple[list[LayerTrace], Context, str]:
        """Run the stages; return the traces in render order, the context and the text."""
        parsed = parse_request(request, layer_keys=self.layer_keys, clock=clock)
        profile = self.select_profile(parsed)
        material = self.for_request(parsed)
        return run_stages(material.indexes, profile, parsed, self.consumers[profile.consumer])

    # -- served layers (resolver.served) ---------------------------------------------------

    def needs(self, request: dict, *, clock=system_clock) -> list[Need]:
        """Return what resolving ``request`` needs of the served layers (``resolver.served``):
        per served layer the request can read, its filter values. Raises what ``resolve``
        raises for a bad request."""
        return self._needs(parse_request(request, layer_keys=self.layer_keys, clock=clock))

    def _needs(self, request: Request) -> list[Need]:
        needs = []
        for layer in self.workspace.layers:
            # A served layer's total comes with each request's material (``Fetched.total``):
            # an empty one at compilation may hold items now, so it is asked for regardless.
            if layer.key not in self.served:
                continue
            if request.availability.get(layer.key, layer.availability) != "auto":
                continue
            values = []
            for field_name, key in layer.item_filter:
                value = request.inputs.get(key)
                if value is None:
                    break  # no item participates: nothing to fetch (SPEC §4.2)
                values.append((field_name, value))
            else:
                needs.append(Need(layer.key, tuple(values)))
        return needs

    def with_material(self, fetched: Mapping[str, Fetched]) -> "CompiledWorkspace":
        """Return this workspace with the served layers holding the items ``fetched`` (layer
        key -> ``Fetched``; a served layer not given holds none), their totals those fetched
        (else unchanged); every other layer and index is shared. Each fetched entry is built
        as the document's would be; an invalid one raises ``WorkspaceError``. A ``Fetched``
        given again reuses the layer index built for it (``Fetched.built``)."""
        layers = list(self.workspace.layers)
        shared = {ix.layer.key: ix for ix in self.indexes}
        for position, layer in enumerate(layers):
            if layer.key not in self.served:
                continue
            got = fetched.get(layer.key)
            index = _material_index(layer, position, got)
            layers[position] = index.layer
            shared[layer.key] = index
        workspace = dataclasses.replace(self.workspace, layers=tuple(layers))
        return CompiledWorkspace(workspace, shared, tokens=None)

    def for_request(self, request: Request) -> "CompiledWorkspace":
        """Return the workspace a parsed request resolves against: this one, or with the
        served layers' items it needs fetched from ``source`` (called even with no needs:
        it gives the served layers' totals)."""
        if not self.served:
            return self
        if self.source is None:
            raise RuntimeError("a compiled workspace with served layers needs a source")
        return self.with_material(self.source(self._needs(request)))

    def with_profile_draft(
        self, profile_key: str, *, rules: dict | None = None, budget: int | None = None
    ) -> "CompiledWorkspace":
        """Return a workspace whose profile carries unsaved edits; layer indexes are shared.

        ``rules`` maps a layer key to a partial rule whose fields replace the saved rule's
        (None restores the default rule); ``budget`` replaces the budget. Raises
        ``WorkspaceError`` (path under ``profiles[i]``) when the draft is invalid.
        """
        position = next(
            (n for n, p in enumerate(self.workspace.profiles) if p.key == profile_key), None
        )
        if position is None:
            raise RequestError(
                f'no profile "{profile_key}"', path="profile", code=PROFILE_NOT_FOUND
            )
        saved = self.workspace.profiles[position]
        path = f"profiles[{position}]"
        builder = _Builder(None, first_only=True)
        builder.layer_keys = self.layer_keys
        builder.consumer_keys = set(self.consumers)
        new_budget = saved.budget
        new_rules = dict(saved.rules)
        try:
            if budget is not None:
                new_budget = builder.integer(budget, f"{path}.budget", minimum=1, required=True)
            if rules is not None:
                if not isinstance(rules, dict):
                    builder.error(f"{path}.rules", "must be an object")
                for layer_key, partial in rules.items():
                    rpath = f"{path}.rules.{layer_key}"
                    layer_key = builder.rule_layer(layer_key, f"{path}.rules")
                    merged = merge_rule(rule_document(new_rules.get(layer_key)), partial)
                    if merged is None:
                        new_rules.pop(layer_key, None)
                    else:
                        new_rules[layer_key] = builder.rule(merged, rpath)
        except _Stop:
            issue = builder.issues[0]
            raise WorkspaceError(issue.message, path=issue.path, issues=builder.issues) from None
        draft = dataclasses.replace(saved, budget=new_budget, rules=new_rules)
        profiles = list(self.workspace.profiles)
        profiles[position] = draft
        workspace = dataclasses.replace(self.workspace, profiles=tuple(profiles))
        return CompiledWorkspace(
            workspace,
            {ix.layer.key: ix for ix in self.indexes},
            tokens=self.layer_tokens,
            served=self.served,
            source=self.source,
        )

    def with_layer_changes(
        self,
        layer_key: str,
        *,
        upsert: Iterable[dict] = (),
        delete: Iterable[str] = (),
        token: object = None,
    ) -> "CompiledWorkspace":
        """Return a workspace where one layer's items changed; everything else is shared.

        ``upsert`` holds item documents (SPEC §2 ``items[]`` entries): an item whose path
        the layer has replaces it in place, any other is added after the layer's items.
        ``delete`` holds paths to remove (applied before the upserts). ``token`` is the
        caller's new content token of the layer (see ``compile_workspace``; None: the layer
        has no token). Each upserted item is validated as ``validate_workspace`` would
        (SPEC §2 and §2.2, path ``layers[i].items[j]…``); a problem raises ``WorkspaceError``
        and changes nothing. This workspace is left as it was. Cost: the changed items (and
        the deleted ones, whose terms leave the postings), plus copying the layer's per-item
        arrays; a deletion leaves an empty slot in the index instead of renumbering it.
        Other layers' objects and indexes are reused as they are.
        """
        position = next(
            (n for n, layer in enumerate(self.workspace.layers) if layer.key == layer_key), None
        )
        if position is None:
            raise WorkspaceError(f'layer "{layer_key}" does not exist', path="layers")
        if layer_key in self.served:
            raise ValueError(f'layer "{layer_key}" is served: its items are not held here')
        layer = self.workspace.layers[position]
        index = self.indexes[position]
        removed: dict[int, None] = {}  # slots, in the order given
        for path in delete:
            slot = index.position(path)
            if slot is None:
                raise WorkspaceError(
                    f'no item "{path}" in layer "{layer_key}"', path=f"layers[{position}].items"
                )
            removed[slot] = None
        items = list(layer.items)
        layer_slots = index.layer_slots
        gone: list[int] = []  # layer positions of the deleted items, ascending
        if removed:
            gone = sorted(index.layer_positions()[list(removed)].tolist())
            for at in reversed(gone):
                del items[at]
            layer_slots = np.delete(layer_slots, gone)
        replaced: dict[int, Item] = {}
        added: dict[str, Item] = {}
        builder = _Builder(None, first_only=True)
        for raw in upsert:
            path = canonical(raw.get("path")) if isinstance(raw, dict) else None
            slot = at = None
            if path in added:
                at = len(items) + list(added).index(path)
            elif path is not None:
                slot = index.position(path)
                if slot is None or slot in removed:
                    slot = None
                else:
                    at = int(index.layer_positions()[slot])
                    at -= bisect.bisect_left(gone, at)
            if at is None:
                at = len(items) + len(added)
            try:
                item = builder.item(raw, f"layers[{position}].items[{at}]")
            except _Stop:
                first = builder.issues[0]
                raise WorkspaceError(
                    first.message, path=first.path, issues=builder.issues
                ) from None
            if slot is not None:
                items[at] = replaced[slot] = item
            else:
                added[item.path] = item
        items += added.values()
        new_slots = np.arange(index.size, index.size + len(added), dtype=np.intp)
        changes = ItemChanges(
            replaced,
            tuple(added.values()),
            tuple(removed),
            np.concatenate((layer_slots, new_slots)),
        )
        new_layer = dataclasses.replace(layer, items=tuple(items))
        layers = list(self.workspace.layers)
        layers[position] = new_layer
        workspace = dataclasses.replace(self.workspace, layers=tuple(layers))
        shared = {ix.layer.key: ix for ix in self.indexes}
        shared[layer_key] = patched_index(index, new_layer, changes)
        tokens = {**self.layer_tokens, layer_key: token}
        return CompiledWorkspace(
            workspace, shared, tokens=tokens, served=self.served, source=self.source
        )


def _material_index(layer, position: int, got: Fetched | None) -> LayerIndex:
    """Return the index of a served layer holding the items ``got`` fetched (none without),
    with ``got``'s total: the one built for the same entries and compiled layer before,
    else a new one (each entry validated as the document's would be)."""
    total = got.total if got is not None and got.total is not None else layer.total
    built = got.built.get("index") if got is not None else None
    if built is not None and built[0] is layer:
        index = built[1]
        if index.layer.total != total:
            index = index.with_layer(dataclasses.replace(index.layer, total=total))
            got.built["index"] = (layer, index)
        return index
    builder = _Builder(None, first_only=True)
    items = []
    seen: dict = {}
    if got is not None:
        try:
            for n, entry in enumerate(got.entries):
                item = builder.item(entry, f"layers[{position}].items[{n}]", seen)
                if item is not None:
                    items.append(item)
        except _Stop:
            first = builder.issues[0]
            raise WorkspaceError(first.message, path=first.path, issues=builder.issues) from None
    fetched_layer = dataclasses.replace(layer, items=tuple(items), total=total)
    index = LayerIndex(fetched_layer, got.terms if got is not None else None, fetched=True)
    if got is not None:
        got.built["index"] = (layer, index)
    return index


@contextmanager
def _collector_paused():
    """Pause the cyclic garbage collector while a resolution allocates its records.

    A resolution creates no reference cycles, so reference counting frees all of it; without
    the pause, the many small records it builds trigger collections that walk the whole heap
    (the compiled workspace included), which makes large resolutions grow faster than linearly.
    """
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def rule_document(rule: Rule | None) -> dict:
    """Return the document form of a profile's rule (only what it gives), {} for none."""
    if rule is None:
        return {}
    doc = {
        "participation": rule.participation,
        "mode": rule.mode,
        "required": rule.required,
        "priority": rule.priority,
        "maxItems": rule.max_items,
        "maxTokens": rule.max_tokens,
        "order": rule.order,
        "facets": list(rule.facets),
    }
    if rule.currentness is not None:
        c = rule.currentness
        doc["currentness"] = {
            "maxAgeDays": c.max_age_days,
            "field": c.field,
            "onStale": c.on_stale,
            "onUnknown": c.on_unknown,
        }
    return doc


def compile_workspace(
    document: dict,
    *,
    previous: CompiledWorkspace | None = None,
    tokens: dict[str, object] | None = None,
    served: dict[str, int] | None = None,
    source: MaterialSource | None = None,
    analysed: dict[str, dict] | None = None,
) -> CompiledWorkspace:
    """Validate a workspace document (first error raised as ``WorkspaceError``) and compile it.

    With ``previous`` (an earlier compilation), layers that did not change keep their
    ``Layer`` objects and indexes, so an edit re-indexes only the layer it touched and drafts
    (``with_profile_draft``) compare layers by identity. ``tokens`` maps layer keys to the
    caller's content tokens (anything comparable and not None, e.g. a version bumped in the
    transaction that changes the layer's fields or items). A layer whose token equals its
    token in ``previous`` is **neither validated nor built again**: its document entry is
    not read beyond its key, which still counts in the checks between entries (duplicate
    layer keys, rules naming layers). The cost of such a compile is the consumers, the
    profiles and the layers whose token moved.

    Other layers (a new token, or none) are built again, but an item entry exactly equal to
    the earlier item with its path (types included) is taken as that item without being
    validated again, and the earlier index is patched for the items that did change (as
    ``with_layer_changes`` does) rather than rebuilt, so the first resolution after the edit
    does not re-tokenize the layer. A layer that comes out the same is the earlier object.

    A token is the caller's promise: when it matches but the layer's entry did change, the
    earlier layer is used as it was (the change is not seen, and not validated). Give a
    layer a new token in the same transaction as any change to it, or none at all.

    ``served`` maps the keys of layers to hold served (``resolver.served``) to their item
    totals: their entries' ``items`` are not read, and ``source`` fetches their items per
    request. Without ``served``, the layers ``previous`` served and this compile reuses
    unchanged (matching tokens) stay served, with ``previous``'s source unless ``source`` is
    given. ``analysed`` maps layer keys to their items' stored term counts by path
    (``resolver.analysis``: packed by ``pack_terms``, or dicts): a layer indexed anew builds
    its postings from them (a damaged packed value's item is tokenized).
    """
    tokens = {key: token for key, token in (tokens or {}).items() if token is not None}
    earlier = {ix.layer.key: ix for ix in previous.indexes} if previous is not None else {}
    unchanged = {
        key: index.layer
        for key, index in earlier.items()
        if key in tokens and previous.layer_tokens.get(key) == tokens[key]
    }
    if served is None:
        served = (
            {key: n for key, n in previous.served.items() if key in unchanged} if previous else {}
        )
    if source is None and previous is not None:
        source = previous.source
    for key, total in served.items():
        if key in unchanged and unchanged[key].total != total:
            del unchanged[key]
    workspace, issues = build_workspace(
        document,
        first_only=True,
        unchanged_layers=unchanged,
        earlier_layers={
            key: ix.layer
            for key, ix in earlier.items()
            if key not in unchanged and key not in served and ix.layer.total is None
        },
        served_layers=served,
    )
    if issues:
        first = issues[0]
        raise WorkspaceError(first.message, path=first.path, issues=issues)
    for layer in workspace.layers:
        index = earlier.get(layer.key)
        if index is None or index.layer is layer:
            continue
        if layer.key in served or index.layer.total is not None:
            del earlier[layer.key]  # nothing of a served layer's index to patch
            continue
        # An edited layer: its unchanged items are the earlier objects, so the earlier
        # index is patched for the others (unless most of them changed).
        changes = item_changes(index, layer)
        if changes is None:
            del earlier[layer.key]
        else:
            earlier[layer.key] = patched_index(index, layer, changes)
    return CompiledWorkspace(
        workspace, earlier, tokens=tokens, served=served, source=source, analysed=analysed
    )


def resolve(document: dict, request: dict, *, clock=system_clock) -> dict:
    """Compile a workspace document and resolve one request against it."""
    return compile_workspace(document).resolve(request, clock=clock)

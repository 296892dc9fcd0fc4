"""Resolutions of the stored workspace: resolve, resolve a draft, expand a reference (no writes).

Every door resolves through these: the API, the studio, the admin and the ``resolve`` command.
"""

from profiles.models import Profile
from profiles.workspace import cache
from profiles.workspace.mappers import json_safe
from resolver import CompiledWorkspace, EncodedResolution
from resolver.clock import system_clock
from resolver.request import DETAILS, parse_request

# The response header of a resolution that names the profile version that answered.
PROFILE_VERSION_HEADER = "X-Profile-Version"


def profile_resolve(
    *,
    profile: Profile | str,
    request: dict,
    rule_overrides: dict | None = None,
    budget_override: int | None = None,
    compiled: CompiledWorkspace | None = None,
    encoded: bool = False,
) -> dict | EncodedResolution:
    """Resolve a request for one profile against the stored workspace; return SPEC §7 JSON.

    ``profile`` is a Profile or its key; it replaces any profile selection of ``request``
    (a SPEC §3 dict). ``rule_overrides`` (layer key -> partial rule, None for the default
    rule) and ``budget_override`` resolve unsaved edits without writing them. Raises
    ``resolver.RequestError`` (bad request, unknown profile) and ``resolver.WorkspaceError``
    (invalid overrides, or stored rows that do not form a valid workspace). Never writes.
    ``compiled`` resolves against a compilation the caller already holds (one version read
    per request instead of one per call). With ``encoded`` the result is a
    ``resolver.EncodedResolution`` (the response bytes and the small top-level fields), as
    the API writes it.
    """
    draft = (profile, request, rule_overrides, budget_override, compiled)
    return _drafted(
        draft,
        lambda drafted, request: (
            drafted.resolve_json(request) if encoded else drafted.resolve(request)
        ),
    )


def profile_resolve_with_reference_counts(
    *,
    profile: Profile | str,
    request: dict,
    rule_overrides: dict | None = None,
    budget_override: int | None = None,
    compiled: CompiledWorkspace | None = None,
) -> tuple[dict, dict[str, dict[str, int]]]:
    """Resolve as ``profile_resolve`` does; return the resolution and, by layer key, the
    number of the layer's references per reason
    (``CompiledWorkspace.resolve_with_reference_counts``), which a summary gives for the
    whole resolution only. Raises what ``profile_resolve`` raises.
    """
    draft = (profile, request, rule_overrides, budget_override, compiled)
    return _drafted(draft, lambda drafted, request: drafted.resolve_with_reference_counts(request))


def profile_layer_ranking(
    *,
    profile: Profile | str,
    request: dict,
    layer_key: str,
    paths=None,
    rule_overrides: dict | None = None,
    budget_override: int | None = None,
    compiled: CompiledWorkspace | None = None,
) -> list[dict]:
    """Return how one layer ranked its retrieved items (``CompiledWorkspace.ranking``): rank,
    score and matched terms of every content unit and overflow reference, for the request
    ``profile_resolve`` would resolve with the same arguments; with ``paths``, only those
    items' entries. Raises what it raises.
    """
    draft = (profile, request, rule_overrides, budget_override, compiled)
    return _drafted(
        draft, lambda drafted, request: drafted.ranking(request, layer_key, paths=paths)
    )


def _drafted(draft: tuple, run):
    """Return ``run(compilation with the draft, request)`` for one profile (``draft``: the
    arguments of ``profile_draft_request``): against the compilation it names, else the
    committed state with its version checked by the served layers' statement
    (``cache.workspace_resolved``: one round trip at most)."""
    profile, request, rule_overrides, budget_override, compiled = draft
    if compiled is not None:
        return run(*profile_draft_request(*draft))
    return cache.workspace_resolved(
        lambda snapshot: run(
            *profile_draft_request(
                profile, request, rule_overrides, budget_override, snapshot.compiled
            )
        )
    )[0]


def profile_draft_request(
    profile, request, rule_overrides=None, budget_override=None, compiled=None
):
    """Return the compilation (with the draft's edits, if any) and the request for one
    profile: its selection replaced by the profile (shared by every resolution of one
    profile: resolve, ranking, the budget sweep)."""
    profile_key = profile.key if isinstance(profile, Profile) else str(profile)
    request = {
        key: value
        for key, value in (request or {}).items()
        if key not in ("profile", "consumer", "objective", "environment")
    }
    request["profile"] = profile_key
    if compiled is None:
        compiled = cache.workspace_get().compiled
    if rule_overrides is not None or budget_override is not None:
        compiled = compiled.with_profile_draft(
            profile_key, rules=rule_overrides, budget=budget_override
        )
    return compiled, request


def profile_draft_compilations(
    *,
    profile_key: str,
    rules: dict | None = None,
    budget: int | None = None,
    compiled: CompiledWorkspace | None = None,
) -> tuple[CompiledWorkspace, CompiledWorkspace]:
    """Return the compilation (``compiled``, default the current one) and the same with one
    profile's draft (``rules`` and ``budget`` as ``with_profile_draft`` takes them): the two
    sides an impact or a text diff resolves. Raises ``WorkspaceError`` for an invalid draft
    and ``RequestError`` for an unknown profile."""
    if compiled is None:
        compiled = cache.workspace_get().compiled
    return compiled, compiled.with_profile_draft(profile_key, rules=rules, budget=budget)


def workspace_resolve(*, request: dict, compiled: CompiledWorkspace | None = None) -> dict:
    """Resolve a SPEC §3 request (selection by profile key or consumer + objective) as is.

    ``compiled`` resolves against a compilation the caller already holds.
    """
    if compiled is not None:
        return compiled.resolve(request)
    return cache.workspace_resolved(lambda snapshot: snapshot.compiled.resolve(request))[0]


def workspace_resolve_versioned(
    *, request: dict, encoded: bool = False
) -> tuple[dict | EncodedResolution, int | None]:
    """Resolve a SPEC §3 request; return the resolution and the answering profile's version.

    The version comes from the same snapshot as the rules that were resolved, so it names
    exactly the rules that produced the answer (None for a profile that has no version).
    With ``encoded`` the resolution is a ``resolver.EncodedResolution``: the response bytes
    and the small top-level fields (``CompiledWorkspace.resolve_json``).
    """

    def answer(snapshot):
        if encoded:
            resolution = snapshot.compiled.resolve_json(request)
            return resolution, resolution.head["profile"]["key"]
        resolution = snapshot.compiled.resolve(request)
        return resolution, resolution["profile"]["key"]

    # The version check rides on the served layers' statement (one round trip at most).
    (resolution, key), snapshot = cache.workspace_resolved(answer)
    version = snapshot.profile_versions.get(key)
    return resolution, version or None


def request_profile_environment(*, request: dict) -> tuple[str, str | None]:
    """Return the key and environment of the profile a SPEC §3 request selects, without
    resolving it (a key limited to environments is checked before an expand). Raises
    ``resolver.RequestError`` as resolving the request would."""
    compiled = cache.workspace_get().compiled
    parsed = parse_request(request, layer_keys=compiled.layer_keys, clock=system_clock)
    profile = compiled.select_profile(parsed)
    return profile.key, profile.environment


class RefNotAvailable(Exception):
    """The reference is not offered to this request (it never says why)."""


def resolution_refs(resolution: dict) -> set[tuple[str, str]]:
    """Return (layer key, item path) of every item a resolution offers to its request."""
    refs = set()
    for layer in resolution["layers"]:
        if layer["decision"]["kind"] == "omitted":
            continue
        materialized = layer["materialized"]
        for entry in (*materialized["items"], *materialized["references"]):
            refs.add((layer["layer"], entry["item"]))
    for reference in resolution["references"]:
        refs.add((reference["layer"], reference["item"]))
    return refs


def ref_expand(*, request: dict, ref: str) -> dict:
    """Return the item ``ref`` names when the resolution of ``request`` offers it.

    Privacy rule: a ref is available only when the resolution of the same request, on the
    same snapshot of the workspace, lists it for a selected layer (inline, a reference of
    any reason, or trimmed by the budget). Those are the layer's candidates after its
    itemFilter, so another customer's item is never among them. Raises ``RequestError`` for a
    bad request and ``RefNotAvailable`` for everything else, existing item or not.
    The offer is always read from the full resolution: a summary (SPEC §7.1) leaves out refs
    that are legitimately offered (not retrieved, beyond the bounds, trimmed).
    """
    if request.get("detail") in DETAILS:
        request = {**request, "detail": "full"}  # a bad value still answers INVALID_REQUEST
    snapshot = cache.workspace_get()
    compiled = snapshot.compiled
    if compiled.served:
        # The served layers' items this request reads, fetched once: the resolution runs on
        # them and the offered item is one of them.
        parsed = parse_request(request, layer_keys=compiled.layer_keys, clock=system_clock)
        compiled = compiled.for_request(parsed)
    resolution = compiled.resolve(request)
    layer_key, separator, path = ref.partition("/")
    if not separator or (layer_key, path) not in resolution_refs(resolution):
        raise RefNotAvailable(ref)
    layer = next(layer for layer in compiled.workspace.layers if layer.key == layer_key)
    item = next(item for item in layer.items if item.path == path)
    return {
        "ref": ref,
        "layer": layer_key,
        "item": path,
        "title": item.title,
        "body": item.body_text,
        "metadata": json_safe(item.metadata),
    }

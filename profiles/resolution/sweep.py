"""The budget sweep and the playground: one input at every budget, one input against every profile.

Both resolve through the same compiled workspace as ``profile_resolve`` (the request's
itemFilter applies as in any resolution); neither writes.
"""

from profiles.resolution.services import profile_draft_request, profile_resolve
from profiles.workspace import cache
from resolver import CompiledWorkspace, ResolverError
from resolver.sweep import BudgetSweep, budget_sweep, default_ceiling

# A page of the playground resolves at most this many profiles.
PLAYGROUND_PAGE = 50


def profile_budget_sweep(
    *,
    profile_key: str,
    request: dict,
    rule_overrides: dict | None = None,
    budget_override: int | None = None,
    compiled: CompiledWorkspace | None = None,
) -> BudgetSweep:
    """Return what the request admits at every budget up to the studio's ceiling (twice the
    budget, at least 1,000 tokens): one pass of the stages, not one resolution per budget.

    The request's profile selection is replaced by ``profile_key``; the overrides are the
    unsaved edits (see ``profile_resolve``). Raises what ``profile_resolve`` raises.
    """
    compiled, request = profile_draft_request(
        profile_key, request, rule_overrides, budget_override, compiled
    )
    budget = compiled.profiles[profile_key].budget
    return budget_sweep(compiled, request, ceiling=default_ceiling(budget))


def playground_resolve(
    *, profile_keys: list[str], request: dict, compiled: CompiledWorkspace | None = None
) -> list[dict]:
    """Resolve one request (a summary) for each profile; return, per profile in order, the
    resolution or ``{"error": …}`` for a request that profile refuses."""
    return playground_resolve_each(
        requests=[(key, request) for key in profile_keys], compiled=compiled
    )


def playground_resolve_each(
    *, requests: list[tuple[str, dict]], compiled: CompiledWorkspace | None = None
) -> list[dict]:
    """Resolve each ``(profile key, request)`` pair (a summary: the playground opened without
    an input resolves each profile's own default scenario); return, in order, the resolution
    or ``{"error": …}`` for a request that profile refuses."""
    if len(requests) > PLAYGROUND_PAGE:
        raise ValueError(f"at most {PLAYGROUND_PAGE} profiles at a time")
    if compiled is None:
        compiled = cache.workspace_get().compiled
    out = []
    for key, request in requests:
        try:
            out.append(
                profile_resolve(
                    profile=key, request={**request, "detail": "summary"}, compiled=compiled
                )
            )
        except ResolverError as exc:  # this profile refuses the request: say so in its row
            out.append({"error": {"code": exc.code, "message": exc.message, "path": exc.path}})
    return out

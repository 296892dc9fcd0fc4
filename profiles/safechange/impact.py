"""What a draft of a profile does to the resolution of each of its saved scenarios.

Both sides resolve against the same compiled workspace: the saved profile, and the profile
with the draft (``CompiledWorkspace.with_profile_draft``). Nothing is written. A scenario
without ``now`` resolves both sides at one moment, so time passing is never a change.

One impact resolves at most ``IMPACT_MAX_RESOLUTIONS`` times (two per scenario), whoever
asks (the dry run, a change request, the studio's Save): the scenarios beyond are listed as
``skipped``, and the dry run's ``offset`` resolves the next ones.

Every door that computes an impact counts it in the ``impact`` scope of the hall's
throttle: the dry runs, and opening, editing (new changes), rebasing and promoting a change
request (``IMPACT_SCOPE``).
"""

import datetime as dt
from dataclasses import dataclass

from django.conf import settings

from profiles.models import Scenario
from profiles.resolution.services import profile_draft_compilations, workspace_resolve
from profiles.versioning.environments import SafeChangeError
from profiles.workspace.throttling import user_throttle_wait
from resolver import CompiledWorkspace, ResolverError

#: The throttle's scope of every door that computes an impact.
IMPACT_SCOPE = "impact"


class ImpactThrottled(SafeChangeError):
    """Too many impacts computed by one user just now (the ``impact`` scope's rate)."""

    status_code = 429
    code = "THROTTLED"

    def __init__(self, wait: int):
        super().__init__(f"too many impact checks just now: try again in {wait} seconds")
        self.wait = wait


def impact_throttle_check(user) -> None:
    """Count one impact of ``user`` in the ``impact`` scope; raise ImpactThrottled beyond its
    rate (for a door that answers refusals in words, e.g. a studio form)."""
    wait = user_throttle_wait(scope=IMPACT_SCOPE, user=user)
    if wait is not None:
        raise ImpactThrottled(wait)


def resolution_summary(resolution: dict) -> dict:
    """Return what a reviewer compares: status, estimated tokens and the admitted refs."""
    return {
        "status": resolution["status"],
        "estimatedTokens": resolution["budget"]["estimatedTokens"],
        "admitted": [
            f"{layer['layer']}/{unit}"
            for layer in resolution["layers"]
            for unit in layer["rendered"]["items"]
        ],
    }


def _output_text(resolution: dict) -> str | None:
    output = resolution.get("output")
    return None if output is None else output["text"]


def impact_max_scenarios() -> int:
    """Return how many scenarios one impact resolves (two resolutions each)."""
    return max(1, settings.IMPACT_MAX_RESOLUTIONS // 2)


@dataclass(frozen=True)
class ImpactSummary:
    """``changed`` of ``scenarios`` scenarios answer differently under the draft; ``skipped``
    of them were not resolved (beyond the bound of one impact)."""

    scenarios: int
    changed: int
    skipped: int = 0

    def as_dict(self) -> dict:
        return {"scenarios": self.scenarios, "changed": self.changed, "skipped": self.skipped}

    def __str__(self) -> str:
        if not self.scenarios:
            return "this profile has no saved scenarios"
        noun = "scenario" if self.scenarios == 1 else "scenarios"
        text = f"this change alters {self.changed} of {self.scenarios} {noun}"
        if self.skipped:
            text += (
                f" ({self.skipped:,} not resolved: one impact resolves at most "
                f"{impact_max_scenarios():,} scenarios)"
            )
        return text


def impact_summary(impact: list[dict]) -> ImpactSummary:
    return ImpactSummary(
        scenarios=len(impact),
        changed=sum(1 for entry in impact if entry["changed"]),
        skipped=sum(1 for entry in impact if entry.get("skipped")),
    )


def _skipped(scenario: Scenario) -> dict:
    """Return the entry of a scenario beyond the bound: named, not resolved."""
    return {
        "scenario": scenario.name,
        "before": None,
        "after": None,
        "changed": False,
        "skipped": True,
    }


def _scenario_impact(
    scenario: Scenario, saved: CompiledWorkspace, draft: CompiledWorkspace, now: str
) -> dict:
    request = scenario.as_request()
    request.setdefault("now", now)
    try:
        before = workspace_resolve(request=request, compiled=saved)
        after = workspace_resolve(request=request, compiled=draft)
    except ResolverError as exc:
        # The scenario no longer fits the workspace (e.g. a layer it names was removed).
        return {
            "scenario": scenario.name,
            "before": None,
            "after": None,
            "changed": False,
            "error": exc.as_dict()["error"],
        }
    before_summary = resolution_summary(before)
    after_summary = resolution_summary(after)
    return {
        "scenario": scenario.name,
        "before": before_summary,
        "after": after_summary,
        "changed": before_summary != after_summary or _output_text(before) != _output_text(after),
    }


def profile_impact(
    *,
    profile_key: str,
    rules: dict | None = None,
    budget: int | None = None,
    compiled: CompiledWorkspace | None = None,
    now: str | None = None,
    offset: int = 0,
) -> list[dict]:
    """Return one entry per saved scenario of the profile, in the scenarios' order.

    Each entry is ``{"scenario", "before", "after", "changed"}`` where before/after are
    ``{"status", "estimatedTokens", "admitted": [refs]}`` and ``changed`` tells whether the
    answer differs at all (status, tokens, admitted refs or the output text). ``rules`` and
    ``budget`` are a draft as ``with_profile_draft`` takes it. Only ``impact_max_scenarios()``
    scenarios from the ``offset``-th on are resolved; the others' entries have ``"skipped":
    true`` and no before/after. Raises ``WorkspaceError`` (path under ``profiles[i]``) for an
    invalid draft and ``RequestError`` for an unknown profile. Writes nothing.
    """
    compiled, draft = profile_draft_compilations(
        profile_key=profile_key, rules=rules, budget=budget, compiled=compiled
    )
    if now is None:
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    scenarios = Scenario.objects.filter(profile__key=profile_key).select_related("profile")
    end = offset + impact_max_scenarios()
    return [
        _scenario_impact(scenario, compiled, draft, now)
        if offset <= position < end
        else _skipped(scenario)
        for position, scenario in enumerate(scenarios.order_by("-is_default", "name"))
    ]


def impact_gained_lost(entry: dict) -> tuple[list[str], list[str]]:
    """Return the refs an impact entry gains and loses, in their order of admission."""
    if entry.get("before") is None:
        return [], []
    before = entry["before"]["admitted"]
    after = entry["after"]["admitted"]
    return [ref for ref in after if ref not in before], [ref for ref in before if ref not in after]


def workspace_impact(
    *,
    profiles: list[str],
    before: CompiledWorkspace,
    after: CompiledWorkspace,
    now: str | None = None,
    offset: int = 0,
) -> list[dict]:
    """Return one entry per saved scenario of each of these profiles (by profile key, then as
    ``profile_impact`` orders them), resolved against two compiled workspaces (a change set or
    an import's dry run: the workspace now and the one it leaves).

    Entries are ``profile_impact``'s with ``"profile"`` first; the same bound applies across
    all the profiles (``impact_max_scenarios()`` from the ``offset``-th on). A scenario whose
    profile the change removes answers with its ``error``. Writes nothing.
    """
    if not profiles:
        return []
    if now is None:
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    scenarios = (
        Scenario.objects.filter(profile__key__in=list(profiles))
        .select_related("profile")
        .order_by("profile__key", "-is_default", "name")
    )
    end = offset + impact_max_scenarios()
    return [
        {
            "profile": scenario.profile.key,
            **(
                _scenario_impact(scenario, before, after, now)
                if offset <= position < end
                else _skipped(scenario)
            ),
        }
        for position, scenario in enumerate(scenarios)
    ]

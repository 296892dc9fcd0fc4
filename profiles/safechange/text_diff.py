"""The rendered text diff: what a change does to the text a consumer receives, for one saved
scenario (issue 21: "version diffs and the compare view also show the rendered text diff").

``text_diff`` compares two rendered texts line by line (difflib's unified diff, bounded).
``version_text_diff`` resolves one scenario of a profile twice, as two of its versions would
answer it today: each version's budget and rules on the current workspace's material (the
profile's consumer, objective and environment are the current ones; a version records no
material). The texts are the resolver's ``output.text``, which applied every layer's
itemFilter to the scenario's input: nothing else is read, so a diff shows no customer's item
the resolution itself would not show.
"""

import datetime as dt
import difflib
from dataclasses import dataclass

from profiles.models import Scenario
from profiles.resolution.services import profile_draft_compilations, workspace_resolve
from profiles.safechange.change_requests import changes_to_reach
from profiles.workspace import cache
from resolver import CompiledWorkspace, ResolverError

#: Lines of a unified diff kept; beyond, the diff says how many more there were.
TEXT_DIFF_MAX_LINES = 2_000
#: Lines of context around each change.
TEXT_DIFF_CONTEXT = 3


class ScenarioNotFound(Exception):
    """The profile has no saved scenario of this name."""

    def __init__(self, profile_key: str, name: str):
        super().__init__(f'profile "{profile_key}" has no saved scenario "{name}"')
        self.profile_key = profile_key
        self.name = name


@dataclass(frozen=True)
class DiffLine:
    """One line of a unified diff: ``kind`` is "added", "removed", "context" or "hunk"."""

    kind: str
    text: str


@dataclass(frozen=True)
class TextDiff:
    """The two rendered texts of one scenario and their unified diff.

    A side's text is None when it has none: the resolution was blocked (no ``output``), or it
    could not be resolved (``before_error``/``after_error`` say why).
    """

    scenario: str
    before: str | None
    after: str | None
    diff: str
    lines: tuple[DiffLine, ...]
    truncated: int = 0  # diff lines left out beyond TEXT_DIFF_MAX_LINES
    before_label: str = "before"
    after_label: str = "after"
    before_error: str = ""
    after_error: str = ""

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def as_dict(self) -> dict:
        """Return the diff as the API shows it."""
        record = {
            "scenario": self.scenario,
            "before": self.before,
            "after": self.after,
            "diff": self.diff,
            "truncated": self.truncated,
        }
        if self.before_error:
            record["beforeError"] = self.before_error
        if self.after_error:
            record["afterError"] = self.after_error
        return record


def _kind(line: str) -> str:
    if line.startswith("@@"):
        return "hunk"
    return {"+": "added", "-": "removed"}.get(line[:1], "context")


def text_diff(
    before: str | None,
    after: str | None,
    *,
    scenario: str,
    before_label: str = "before",
    after_label: str = "after",
    before_error: str = "",
    after_error: str = "",
) -> TextDiff:
    """Return the unified diff of two rendered texts (None: no text), at most
    ``TEXT_DIFF_MAX_LINES`` lines of it."""
    lines = list(
        difflib.unified_diff(
            (before or "").splitlines(),
            (after or "").splitlines(),
            fromfile=before_label,
            tofile=after_label,
            n=TEXT_DIFF_CONTEXT,
            lineterm="",
        )
    )
    truncated = max(0, len(lines) - TEXT_DIFF_MAX_LINES)
    lines = lines[:TEXT_DIFF_MAX_LINES]
    body = lines[2:]  # the ---/+++ header names the sides; the page names them itself
    return TextDiff(
        scenario=scenario,
        before=before,
        after=after,
        diff="\n".join(lines) + ("\n" if lines else ""),
        lines=tuple(DiffLine(_kind(line), line) for line in body),
        truncated=truncated,
        before_label=before_label,
        after_label=after_label,
        before_error=before_error,
        after_error=after_error,
    )


def output_text(resolution: dict) -> str | None:
    """Return the rendered text of a resolution (None: it was blocked)."""
    output = resolution.get("output")
    return None if output is None else output["text"]


def scenario_of_profile_named(*, profile_key: str, name: str) -> Scenario:
    """Return the profile's saved scenario of this name; raise ``ScenarioNotFound``."""
    scenario = (
        Scenario.objects.select_related("profile")
        .filter(profile__key=profile_key, name=name)
        .first()
    )
    if scenario is None:
        raise ScenarioNotFound(profile_key, name)
    return scenario


def _version_text(
    compiled: CompiledWorkspace,
    current: dict,
    version: dict | None,
    number: int,
    request: dict,
) -> tuple[str | None, str]:
    """Return (text, why there is none) of one version for the request."""
    if version is None:
        return None, f"version {number} records the profile's deletion"
    changes = changes_to_reach(current, version, fields=("budget", "rules"))
    try:
        if changes:
            _, compiled = profile_draft_compilations(
                profile_key=current["key"],
                rules=changes.get("rules"),
                budget=changes.get("budget"),
                compiled=compiled,
            )
        return output_text(workspace_resolve(request=request, compiled=compiled)), ""
    except ResolverError as exc:  # e.g. a rule for a layer that no longer exists
        return None, f"version {number} cannot be resolved on today's workspace: {exc}"


def version_text_diff(
    *,
    profile_key: str,
    scenario_name: str,
    before: dict | None,
    after: dict | None,
    before_number: int,
    after_number: int,
    now: str | None = None,
) -> TextDiff:
    """Return the rendered text diff of one saved scenario between two versions' documents
    (``before``/``after``; None: a version that records the deletion), both resolved on the
    current workspace. Raise ``ScenarioNotFound``. Writes nothing; resolves twice.

    A scenario without ``now`` resolves both sides at one moment (``now``, default the
    current time), so time passing is never a change.
    """
    scenario = scenario_of_profile_named(profile_key=profile_key, name=scenario_name)
    snapshot = cache.workspace_get()
    current = next(
        (entry for entry in snapshot.document["profiles"] if entry["key"] == profile_key), None
    )
    if current is None:  # scenarios go with their profile: not reached
        raise ScenarioNotFound(profile_key, scenario_name)
    request = scenario.as_request()
    request.setdefault("now", now or dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    before_text, before_error = _version_text(
        snapshot.compiled, current, before, before_number, request
    )
    after_text, after_error = _version_text(
        snapshot.compiled, current, after, after_number, request
    )
    return text_diff(
        before_text,
        after_text,
        scenario=scenario.name,
        before_label=f"version {before_number}",
        after_label=f"version {after_number}",
        before_error=before_error,
        after_error=after_error,
    )

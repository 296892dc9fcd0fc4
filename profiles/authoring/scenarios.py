"""Writes of saved scenarios: a named SPEC §3 request of one profile.

Scenario names are unique across the workspace (the API and ``resolve {"scenario": …}`` name a
scenario by its name alone). A save never moves another profile's scenario: the editor's
"save as" with the name of another profile's scenario is refused (``ScenarioNameTaken``), and
only an explicit update of that scenario (its own URL, with If-Match) can change it. Scenario
writes take the writers' lock like every other write, but do not change the workspace version.
"""

from django.db import IntegrityError

from profiles.activity.records import activity_record
from profiles.models import Profile, Scenario
from profiles.workspace.concurrency import check_if_match, scenario_etag, workspace_write
from profiles.workspace.mappers import (
    canonical_string,
    map_scenario_to_document,
    map_scenario_values,
)
from profiles.workspace.origin import WriteOrigin
from profiles.workspace.selectors import layer_keys_list, scenario_get
from profiles.workspace.validation import WorkspaceValidationError, validate_scenario
from profiles.workspace.writing import Conflict, assign, conflict_for, delete_row, save_row
from resolver import ValidationIssue


class ScenarioInvalid(WorkspaceValidationError):
    """A scenario that cannot be saved; paths relative to the scenario (``input.x``, ``now``)."""

    def as_dict(self) -> dict:
        body = super().as_dict()
        body["error"]["code"] = "INVALID_REQUEST"
        return body


class ScenarioNameTaken(Conflict):
    """The name belongs to another profile's scenario (it is never moved or overwritten)."""


def _canonical(document):
    """Return the entry with YAML scalars of ``name``, ``profile`` and ``now`` as strings."""
    if not isinstance(document, dict):
        return document
    result = dict(document)
    for name in ("name", "profile", "now"):
        value = result.get(name)
        if value is not None and not isinstance(value, str | dict | list):
            result[name] = canonical_string(value)
    return result


def _checked(document, *, layer_keys, prefix: str = "") -> tuple[dict, Profile]:
    """Validate a scenario entry; return its field values and its profile."""
    issues = validate_scenario(document, layer_keys=layer_keys)
    profile = None
    if not issues:
        profile = Profile.objects.filter(key=document["profile"]).first()
        if profile is None:
            issues = [ValidationIssue("profile", f'no profile "{document["profile"]}"')]
    if issues:
        raise ScenarioInvalid(
            [
                ValidationIssue(f"{prefix}.{issue.path}".rstrip("."), issue.message)
                if prefix
                else issue
                for issue in issues
            ]
        )
    return map_scenario_values(document), profile


def _save(
    scenario: Scenario, values: dict, profile: Profile, *, user, origin: WriteOrigin | None = None
) -> bool:
    """Write the scenario if anything changed (one default per profile); return whether so."""
    before = map_scenario_to_document(scenario) if scenario.pk is not None else None
    if values["is_default"]:
        others = Scenario.objects.filter(profile=profile, is_default=True)
        if scenario.pk is not None:
            others = others.exclude(pk=scenario.pk)
        others.update(is_default=False)
    changed = assign(scenario, values)
    if scenario.profile_id != profile.pk:
        scenario.profile = profile
        changed.append("profile")
    else:
        scenario.profile = profile
    if changed or scenario.pk is None:
        save_row(scenario, user=user)
        activity_record(
            kind="scenario",
            key=scenario.name,
            before=before,
            after=map_scenario_to_document(scenario),
            user=user,
            origin=origin,
        )
        return True
    return False


def scenario_create(*, document: dict, user=None, origin: WriteOrigin | None = None) -> Scenario:
    """Create a scenario; raise ``ScenarioInvalid`` or ``Conflict`` (the name is taken)."""
    scenario = Scenario()
    document = _canonical(document)
    try:
        with workspace_write():
            values, profile = _checked(document, layer_keys=layer_keys_list())
            scenario.name = values["name"]
            _save(scenario, values, profile, user=user, origin=origin)
    except IntegrityError as exc:
        raise conflict_for(scenario) from exc
    return scenario


def scenario_update(
    *,
    name: str,
    changes: dict,
    replace: bool = False,
    user=None,
    if_match: str | None = None,
    origin: WriteOrigin | None = None,
) -> Scenario:
    """Change a scenario: ``changes`` replace its fields (None: back to the default); with
    ``replace`` they are the whole entry. Raise ``Scenario.DoesNotExist``,
    ``PreconditionFailed``, ``ScenarioInvalid`` or ``Conflict`` (renamed to a taken name)."""
    scenario = None
    try:
        with workspace_write():
            scenario = scenario_get(name=name, lock=True)
            check_if_match(if_match, scenario_etag(scenario))
            entry = {"name": name} if replace else map_scenario_to_document(scenario)
            document = {
                key: value for key, value in {**entry, **changes}.items() if value is not None
            }
            values, profile = _checked(_canonical(document), layer_keys=layer_keys_list())
            _save(scenario, values, profile, user=user, origin=origin)
    except IntegrityError as exc:
        raise conflict_for(scenario) from exc
    return scenario


def scenario_delete(
    *, name: str, user=None, if_match: str | None = None, origin: WriteOrigin | None = None
) -> None:
    """Delete a scenario; raise ``Scenario.DoesNotExist`` or ``PreconditionFailed``."""
    with workspace_write():
        scenario = scenario_get(name=name, lock=True)
        check_if_match(if_match, scenario_etag(scenario))
        before = map_scenario_to_document(scenario)
        delete_row(scenario, user=user)
        activity_record(
            kind="scenario", key=name, before=before, after=None, user=user, origin=origin
        )


def scenario_save(
    *,
    profile: Profile | str,
    name: str,
    request: dict,
    user=None,
    origin: WriteOrigin | None = None,
) -> Scenario:
    """Save a request (input, now, format, availability) as the profile's scenario ``name``.

    A new name creates the scenario; the name of one of this profile's scenarios overwrites
    it (it stays the default if it was). The name of another profile's scenario is refused
    with ``ScenarioNameTaken``: nothing is moved or overwritten.
    """
    profile_key = profile.key if isinstance(profile, Profile) else str(profile)
    scenario = None
    try:
        with workspace_write():
            scenario = Scenario.objects.select_for_update().filter(name=name).first()
            if scenario is not None and scenario.profile.key != profile_key:
                raise ScenarioNameTaken(
                    f'name: "{name}" is a scenario of profile "{scenario.profile.key}"; '
                    "choose another name",
                    "name",
                )
            document = {
                "name": name,
                "profile": profile_key,
                **{key: request[key] for key in ("input", "now", "format") if key in request},
                "availability": request.get("availability") or {},
                "default": bool(scenario and scenario.is_default),
            }
            document = {key: value for key, value in document.items() if value is not None}
            values, stored_profile = _checked(document, layer_keys=layer_keys_list())
            scenario = scenario or Scenario()
            if scenario.pk is not None:
                values["description"] = scenario.description
            _save(scenario, values, stored_profile, user=user, origin=origin)
    except IntegrityError as exc:
        raise conflict_for(scenario or Scenario(name=name)) from exc
    return scenario


def scenarios_upsert(
    *, scenarios: list, user=None, origin: WriteOrigin | None = None
) -> dict[str, int]:
    """Create or update saved scenarios by name (a scenario file, e.g. the demo's).

    Each entry is ``{name, profile, input, now, description?, format?, availability?,
    default?}``; the file decides each scenario's profile. Nothing is written unless every
    entry is valid; errors carry the path ``scenarios[i].<field>``. Return how many were
    created, updated and unchanged.
    """
    counts = {"created": 0, "updated": 0, "unchanged": 0}
    if not isinstance(scenarios, list):
        raise ScenarioInvalid([ValidationIssue("scenarios", "must be a list")])
    with workspace_write():
        layer_keys = layer_keys_list()
        wanted = [
            _checked(_canonical(entry), layer_keys=layer_keys, prefix=f"scenarios[{index}]")
            for index, entry in enumerate(scenarios)
        ]
        stored = {
            scenario.name: scenario
            for scenario in Scenario.objects.filter(
                name__in=[values["name"] for values, _ in wanted]
            )
        }
        for values, profile in wanted:
            scenario = stored.get(values["name"]) or Scenario()
            created = scenario.pk is None
            if not _save(scenario, values, profile, user=user, origin=origin):
                counts["unchanged"] += 1
            else:
                counts["created" if created else "updated"] += 1
            stored[values["name"]] = scenario
    return counts

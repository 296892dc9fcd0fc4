"""Which writes can change a protected answer, and the refusal they get without a change request.

A profile's answer depends on more than its own fields and rules: on the layers it reads, its
consumer's render settings and, for governed layers, their items. A write of any of these that
can change the answer of a profile in a protected environment needs a change request, at
every door: the write services call ``protection_check`` inside their transaction, after
reading what they change and before writing, so the API, studio, admin, import and bulk paths
all get the same ``409 CHANGE_REQUEST_REQUIRED`` naming the profiles affected.

**A profile reads a layer** when its rule for the layer (its own, or the default rule of SPEC
§2) does not say ``participation: exclude`` and the layer applies to it by ``appliesTo``
(empty or absent lists apply to every objective and consumer). Availability and input do not
enter: an ``unavailable`` layer a profile reads becomes material the moment it is available.

What needs a change request (``profiles_affected``), for the protected profiles that read:
* creating a layer: those that would read it (on their default rule, typically);
* changing a layer's ``key``, ``name`` (rendered as the layer's heading), ``availability``,
  ``appliesTo``, ``requiresInput`` or ``itemFilter``: those that read it before or after;
  its ``description`` alone changes no answer;
* deleting a layer: those that read it;
* changing a consumer's ``key`` or ``render`` settings: the profiles of that consumer;
* creating, changing or deleting an item of a **governed** layer: those that read the layer;
  items of other layers (tickets, a fast-moving knowledge base) write directly;
* a profile's own fields and rules: the profile (checked where its versions are recorded,
  ``profiles.versioning.versions``).
"""

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from profiles.models import Environment, Layer, Profile
from profiles.versioning.environments import (
    ChangeRequestRequired,
    SafeChangeError,
    staff_may_bypass,
)
from profiles.versioning.versions import profile_documents_get
from profiles.workspace.entity_changes import EntityChange
from profiles.workspace.origin import WriteOrigin
from profiles.workspace.permissions import governance_refusal, key_scopes

logger = logging.getLogger("profiles.safechange")

# The fields of an entry that an answer depends on (SPEC §2 names).
ANSWER_LAYER_FIELDS = ("key", "name", "availability", "appliesTo", "requiresInput", "itemFilter")
ANSWER_CONSUMER_FIELDS = ("key", "render")


class GovernedByStaff(SafeChangeError):
    """Only staff mark a layer governed or not (like an environment's protection)."""

    status_code = 403
    code = "PERMISSION_DENIED"
    path = "governed"


def governed_change_check(*, user, key=None) -> None:
    """Refuse a change of a layer's ``governed`` flag by anyone but staff, and by any scoped
    API key (``profiles.workspace.permissions.governance_refusal``; every door calls the layer
    services, which call this; an operator's command, with no user, may)."""
    refusal = governance_refusal(user, key)
    if refusal is None:
        return
    error = GovernedByStaff(refusal)
    if key_scopes(key) is not None:
        error.code = "FORBIDDEN"  # a key's refusal, as the API's other refusals of a key
    raise error


# --- the rule, on documents ----------------------------------------------------------------


def layer_applies(profile: dict, layer: dict) -> bool:
    """Return whether the layer applies to the profile by ``appliesTo`` (SPEC §4.2)."""
    applies = layer.get("appliesTo") or {}
    objectives = applies.get("objectives") or []
    consumers = applies.get("consumers") or []
    return (not objectives or profile.get("objective") in objectives) and (
        not consumers or profile.get("consumer") in consumers
    )


def profile_reads(profile: dict, layer: dict | None) -> bool:
    """Return whether the profile reads the layer (its rule does not exclude it, and the layer
    applies to it)."""
    if layer is None:
        return False
    rule = (profile.get("rules") or {}).get(layer["key"]) or {}
    return rule.get("participation") != "exclude" and layer_applies(profile, layer)


def answer_fields_changed(change: EntityChange) -> list[str]:
    """Return the answer's fields the change touches (all of them for a create or delete)."""
    fields = ANSWER_LAYER_FIELDS if change.kind == "layer" else ANSWER_CONSUMER_FIELDS
    before, after = change.before or {}, change.after or {}
    return [name for name in fields if before.get(name) != after.get(name)]


def profiles_affected(
    changes: Iterable[EntityChange],
    *,
    profiles: dict[str, dict],
    layers: dict[str, dict] | None = None,
    governed: set[str] | None = None,
) -> set[str]:
    """Return the keys of ``profiles`` (documents by key) whose answer the changes can change.

    ``layers``: the entries of the layers whose items change (by key); ``governed``: the
    layers whose item writes count (None: every layer's, as an impact wants). A profile
    changed itself counts when it is in ``profiles``.
    """
    layers = layers or {}
    affected: set[str] = set()
    for change in changes:
        if change.kind == "profile":
            if change.key in profiles:
                affected.add(change.key)
        elif change.kind == "consumer":
            if change.before is not None and answer_fields_changed(change):
                affected |= {
                    key for key, profile in profiles.items() if profile["consumer"] == change.key
                }
        elif change.kind == "layer":
            if change.op == "update" and not answer_fields_changed(change):
                continue
            for side in (change.before, change.after):
                affected |= {
                    key for key, profile in profiles.items() if profile_reads(profile, side)
                }
        elif change.kind == "item":
            if governed is not None and change.key not in governed:
                continue
            layer = layers.get(change.key)
            affected |= {key for key, profile in profiles.items() if profile_reads(profile, layer)}
    return affected


# --- the check, against the stored workspace -------------------------------------------------


def protected_environment_keys() -> set[str]:
    """Return the environments that require change requests (one query)."""
    return set(
        Environment.objects.filter(requires_change_request=True).values_list("key", flat=True)
    )


def protected_profile_documents(environments: set[str] | None = None) -> dict[str, dict]:
    """Return the documents of the profiles in protected environments (three queries; one
    when none is protected)."""
    environments = protected_environment_keys() if environments is None else environments
    if not environments:
        return {}
    keys = Profile.objects.filter(environment__in=environments).values_list("key", flat=True)
    return profile_documents_get(list(keys))


@dataclass(frozen=True)
class NewLayerJoiners:
    """The profiles of one environment that a new layer joins on their default rule."""

    environment: str  # "" for the profiles without one
    protected: bool
    approvals: int
    profiles: tuple[str, ...]


def new_layer_joiners() -> list[NewLayerJoiners]:
    """Return, by environment, the profiles a new layer joins on their default rule (two
    queries): every profile, since no rule names a layer not yet created and a layer applies
    to every objective and consumer until its ``appliesTo`` says otherwise. Protected
    environments come first, then the others by key, the profiles without one last."""
    approvals = dict(
        Environment.objects.filter(requires_change_request=True).values_list("key", "approvals")
    )
    by_environment: dict[str, list[str]] = {}
    for key, environment in Profile.objects.order_by("key").values_list("key", "environment"):
        by_environment.setdefault(environment or "", []).append(key)
    joiners = [
        NewLayerJoiners(
            environment=environment,
            protected=environment in approvals,
            approvals=approvals.get(environment, 0),
            profiles=tuple(keys),
        )
        for environment, keys in by_environment.items()
    ]
    return sorted(
        joiners, key=lambda group: (not group.protected, not group.environment, group.environment)
    )


def _governed_layers(changes: list[EntityChange]) -> tuple[set[str], dict[str, dict]]:
    keys = {change.key for change in changes if change.kind == "item"}
    if not keys:
        return set(), {}
    rows = Layer.objects.filter(key__in=keys, governed=True)
    entries = {}
    for layer in rows:
        entries[layer.key] = {
            "key": layer.key,
            "appliesTo": {
                "objectives": layer.applies_to_objectives,
                "consumers": layer.applies_to_consumers,
            },
        }
    return set(entries), entries


def protected_profiles_affected(
    changes: Iterable[EntityChange], *, environments: set[str] | None = None
) -> list[str]:
    """Return, sorted, the protected profiles whose answer the changes can change (counting
    items of governed layers only, and a changed profile when it was or will be protected)."""
    changes = list(changes)
    environments = protected_environment_keys() if environments is None else environments
    if not environments or not changes:
        return []
    profiles = protected_profile_documents(environments)
    governed, layers = _governed_layers(changes)
    affected = profiles_affected(changes, profiles=profiles, layers=layers, governed=governed)
    for change in changes:
        if change.kind == "profile" and (change.after or {}).get("environment") in environments:
            affected.add(change.key)
    return sorted(affected)


def protection_check(
    changes: Iterable[EntityChange], *, user, origin: WriteOrigin | None = None
) -> bool:
    """Allow or refuse writes that may change protected answers; call it in the write's
    transaction, under the writers' lock, before writing.

    Return whether they go through as a logged bypass (staff with the bypass setting, or an
    operator's explicit action); raise ``ChangeRequestRequired`` naming the protected profiles
    affected when they need a change request. Applying an approved change request
    (``origin.change_request``) is the sanctioned way in. Costs one query when no environment
    is protected.
    """
    origin = origin or WriteOrigin()
    if origin.change_request is not None:
        return False
    changes = list(changes)
    affected = protected_profiles_affected(changes)
    if not affected:
        return False
    if origin.operator_action:
        logger.warning(
            "protected write bypassed: %s changed what %s read", origin.operator_action, affected
        )
        return True
    if staff_may_bypass(user):
        logger.warning(
            "protected write bypassed: %s changed what %s read directly",
            user.get_username(),
            ", ".join(affected),
        )
        return True
    first = changes[0]
    fields = answer_fields_changed(first) if first.kind in ("layer", "consumer") else []
    path = fields[0] if len(changes) == 1 and first.op == "update" and fields else ""
    raise ChangeRequestRequired.for_changes(changes, affected, path=path)

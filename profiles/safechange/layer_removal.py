"""Deleting a layer that profiles use: "remove its rules and delete" (issue 38 item 18).

A layer with rules in profiles cannot be deleted as it is (``layer_delete`` refuses it, 409):
a profile's rule would name a layer that no longer exists. ``layer_delete_removing_rules``
does what the user would otherwise do profile by profile: it puts the layer back on the
default rule in every profile that has a rule for it (``profile_update``, each profile one
new version) and deletes the layer with its items (``layer_delete``), all in one transaction
through the ordinary write services, so versions, activity and protection are theirs.

Where protection asks for a change request (a profile with a rule for the layer is in a
protected environment, or a protected profile reads the layer on its default rule), nothing
is written: with a ``proposal`` the same writes are opened as one change set (the rule
removals and the deletion), applied once approved; without one, ``ChangeRequestRequired``
is raised (the API's 409).
"""

from dataclasses import dataclass

from profiles.authoring.profiles import profile_update
from profiles.material.layers import layer_delete
from profiles.material.selectors import layer_rule_profiles_list
from profiles.models import ChangeRequest
from profiles.safechange.change_sets import change_set_create
from profiles.safechange.impact import impact_throttle_check
from profiles.safechange.reviews import change_request_open
from profiles.versioning.environments import ChangeRequestRequired
from profiles.versioning.protection import protected_environment_keys
from profiles.workspace.concurrency import PreconditionFailed, workspace_write
from profiles.workspace.origin import WriteOrigin, origin_of


@dataclass(frozen=True)
class LayerRuleUser:
    """A profile with a rule for the layer: its environment and whether it is protected."""

    key: str
    environment: str | None
    protected: bool


@dataclass(frozen=True)
class LayerRemoval:
    """What ``layer_delete_removing_rules`` did: the profiles whose rule it removed (or would
    remove), and the change request it opened instead of writing (None: written)."""

    layer: str
    profiles: list[str]
    change_request: ChangeRequest | None = None

    @property
    def applied(self) -> bool:
        return self.change_request is None


def layer_rule_users_list(*, key: str) -> list[LayerRuleUser]:
    """Return the profiles with a rule for the layer ``key``, sorted (two queries)."""
    rows = layer_rule_profiles_list(key=key)
    protected = protected_environment_keys() if rows else set()
    return [
        LayerRuleUser(profile, environment, environment in protected)
        for profile, environment in rows
    ]


def layer_removal_changes(*, key: str, profiles: list[str]) -> list[dict]:
    """Return the change set removing the layer's rule from ``profiles`` and deleting it."""
    return [
        *(
            {"kind": "profile", "op": "update", "key": profile, "value": {"rules": {key: None}}}
            for profile in profiles
        ),
        {"kind": "layer", "op": "delete", "key": key},
    ]


def layer_removal_title(key: str, profiles: list[str]) -> str:
    count = len(profiles)
    return f"Delete layer {key} and its rule in {count} profile{'' if count == 1 else 's'}"


def _check_users(key: str, expected: list[str] | None) -> list[str]:
    """Return the profiles with a rule for the layer now; raise ``PreconditionFailed`` when
    they are not those the caller showed (``expected``; None: not checked)."""
    users = [profile for profile, _ in layer_rule_profiles_list(key=key)]
    if expected is not None and sorted(expected) != users:
        raise PreconditionFailed("")
    return users


def layer_delete_removing_rules(
    *,
    key: str,
    user=None,
    origin: WriteOrigin | None = None,
    if_match: str | None = None,
    profiles: list[str] | None = None,
    proposal: dict | None = None,
) -> LayerRemoval:
    """Remove the layer's rule from every profile that has one and delete the layer, in one
    transaction; return what was done.

    ``if_match``: the layer's ETag the caller read; ``profiles``: the profiles with a rule
    the caller showed (None: not checked). Either stale raises ``PreconditionFailed``, and
    nothing is written. Raise ``Layer.DoesNotExist``, and what the write services raise
    (nothing is written then either).

    When protection asks for a change request: without a ``proposal``, raise
    ``ChangeRequestRequired``; with one (``{"title", "description", "reviewers"}``, each
    optional), open a change set with the rule removals and the deletion (its impact counted
    in the user's ``impact`` scope; ``ImpactThrottled`` beyond) and return it, nothing
    written.
    """
    origin = origin_of(origin)
    try:
        with workspace_write():
            users = _check_users(key, profiles)
            for profile in users:
                profile_update(
                    key=profile, changes={"rules": {key: None}}, user=user, origin=origin
                )
            # The layer's own ETag is checked here, on the layer as the caller read it (the
            # profile writes do not change it); refusing rolls back the profile writes.
            layer_delete(key=key, user=user, if_match=if_match, origin=origin)
    except ChangeRequestRequired:
        if proposal is None:
            raise
        # Nothing was written (the transaction rolled back): propose the same writes.
        users = _check_users(key, profiles)
        impact_throttle_check(user)
        change_request = change_request_open(
            opener=change_set_create,
            user=user,
            reviewers=proposal.get("reviewers") or [],
            title=proposal.get("title") or layer_removal_title(key, users),
            description=proposal.get("description") or "",
            changes=layer_removal_changes(key=key, profiles=users),
        )
        return LayerRemoval(key, users, change_request)
    return LayerRemoval(key, users)

"""Promotion: a profile's budget and rules proposed, as a change request, to its counterpart in
another environment (created on apply when it does not exist)."""

from profiles.models import (
    ChangeRequest,
    Profile,
    key_validator,
)
from profiles.safechange.change_requests import change_request_create, changes_to_reach
from profiles.safechange.errors import NothingToChange
from profiles.versioning.environments import SafeChangeError
from profiles.versioning.versions import (
    profile_documents_get,
)
from profiles.workspace.mappers import canonical_string


def _promoted_key(source_key: str, source_environment: str | None, to: str) -> str:
    if source_environment and source_key.endswith("-" + source_environment):
        return source_key[: -len(source_environment)] + to
    return f"{source_key}-{to}"[:64]


def promotion_planned(*, profile_key: str, to, key=None) -> dict:
    """Return what promoting the profile to environment ``to`` would propose, writing nothing:
    ``{"target", "changes", "creates"}`` (``creates``: the profile created on apply, None when
    the target exists). Raises what ``profile_promote`` raises before it opens the request."""
    source = profile_documents_get([profile_key]).get(profile_key)
    if source is None:
        raise Profile.DoesNotExist(profile_key)
    if not isinstance(to, str):
        raise SafeChangeError("to: must be an environment key", path="to")
    try:
        key_validator(to)
    except Exception:
        raise SafeChangeError(
            "to: must be an environment key (lowercase letters, digits, '-' and '_')", path="to"
        ) from None
    if to == source.get("environment"):
        raise SafeChangeError(f'to: profile "{profile_key}" is already in "{to}"', path="to")
    target = (
        Profile.objects.filter(
            consumer__key=source["consumer"], objective=source["objective"], environment=to
        )
        .values_list("key", flat=True)
        .first()
    )
    carried = {"budget": source["budget"], "rules": source.get("rules") or {}}
    if target is not None:
        current = profile_documents_get([target])[target]
        changes = changes_to_reach(current, carried, fields=("budget", "rules"))
        if not changes:
            raise NothingToChange(
                f'profile "{target}" in "{to}" already has the budget and rules of "{profile_key}"'
            )
        creates = None
    else:
        target = (
            canonical_string(key)
            if key is not None
            else _promoted_key(profile_key, source.get("environment"), to)
        )
        try:
            key_validator(target)
        except Exception:
            raise SafeChangeError("key: must be a profile key", path="key") from None
        if Profile.objects.filter(key=target).exists():
            raise SafeChangeError(
                f'key: profile "{target}" already exists (in another environment); give "key"',
                path="key",
            )
        creates = {
            "key": target,
            **({"name": source["name"]} if source.get("name") else {}),
            "consumer": source["consumer"],
            "objective": source["objective"],
            "environment": to,
        }
        changes = {"budget": carried["budget"]}
        if carried["rules"]:
            changes["rules"] = carried["rules"]
    return {"target": target, "changes": changes, "creates": creates}


def profile_promote(
    *, profile_key: str, to, user, title=None, description="", key=None
) -> ChangeRequest:
    """Open a change request that gives the profile of the same consumer and objective in
    environment ``to`` this profile's budget and rules (creating that profile on apply when
    it does not exist, under ``key`` or a key derived from this one)."""
    plan = promotion_planned(profile_key=profile_key, to=to, key=key)
    target, changes, creates = plan["target"], plan["changes"], plan["creates"]
    title = title or f"Promote {profile_key} to {to}"
    return change_request_create(
        profile_key=target,
        title=title,
        description=description,
        changes=changes,
        user=user,
        creates=creates,
        promoted_from=profile_key,
    )

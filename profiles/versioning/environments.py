"""Environments and their protection.

An environment is a value of ``Profile.environment`` (``production``, ``staging``…). It is
unprotected unless an ``Environment`` row says ``requires_change_request``; then a profile in
it (or moving into or out of it) changes only by applying an approved change request. The
check runs in one place, ``profiles.versioning.versions.profile_versions_record``, which
every write of a profile or its rules calls inside its transaction, so no door (API, studio,
admin, import) can skip it. ``profile_write_refusal`` lets a door refuse early, before it
writes anything.
"""

import logging
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from profiles.activity.records import activity_record
from profiles.models import ENVIRONMENT_MAX_APPROVALS, Environment, Profile, key_validator

logger = logging.getLogger("profiles.safechange")

MAX_APPROVALS = ENVIRONMENT_MAX_APPROVALS


class SafeChangeError(Exception):
    """A refusal of safe change, answered by the API as ``{"error": {code, message, path}}``."""

    status_code = 400
    code = "INVALID_REQUEST"
    path = ""

    def __init__(self, message: str, *, path: str | None = None, **extra):
        super().__init__(message)
        self.message = message
        if path is not None:
            self.path = path
        self.extra = extra


class ChangeRequestRequired(SafeChangeError):
    """A direct write that can change the answer of a profile in a protected environment (API
    answer: 409, naming the protected ``profiles`` affected)."""

    status_code = 409
    code = "CHANGE_REQUEST_REQUIRED"
    path = "environment"

    def __init__(
        self,
        profile_key: str,
        environment: str,
        *,
        profiles: list[str] | None = None,
        message: str | None = None,
        path: str | None = None,
    ):
        self.profile_key = profile_key
        self.environment = environment
        self.profiles = profiles if profiles is not None else [profile_key]
        super().__init__(
            message
            or f'environment "{environment}" requires a change request: profile "{profile_key}" '
            "changes only by applying an approved change request",
            path=path,
            profiles=self.profiles,
        )

    @classmethod
    def for_changes(cls, changes, profiles: list[str], path: str = "") -> "ChangeRequestRequired":
        """Return the refusal of material changes (``EntityChange``s) that can change the
        answers of these protected profiles (``path``: the field that does, if one)."""
        first = changes[0]
        what = {
            ("layer", "create"): f'a new layer "{first.key}" would be read by',
            ("layer", "delete"): f'deleting layer "{first.key}" changes',
            ("consumer", "update"): f'consumer "{first.key}" renders',
        }.get((first.kind, first.op))
        if what is None:
            what = {
                "layer": f'layer "{first.key}" is read by',
                "item": f'layer "{first.key}" is governed and read by',
                "consumer": f'consumer "{first.key}" renders',
                "profile": "the change touches",
            }[first.kind]
        if len(changes) > 1:
            what = f"{len(changes)} changes touch what is read by"
        named = ", ".join(f'"{key}"' for key in profiles[:10])
        more = f" and {len(profiles) - 10} more" if len(profiles) > 10 else ""
        return cls(
            profiles[0],
            "",
            profiles=profiles,
            path=path,
            message=(
                f"{what} protected profile{'s' if len(profiles) > 1 else ''} {named}{more}: "
                "this change requires a change request (propose it; it applies once approved)"
            ),
        )


@dataclass(frozen=True)
class EnvironmentSettings:
    """An environment as the API shows it (``configured`` is False for the defaults)."""

    key: str
    requires_change_request: bool = False
    approvals: int = 1
    configured: bool = False
    profile_count: int = 0

    def as_dict(self) -> dict:
        return {
            "key": self.key,
            "requiresChangeRequest": self.requires_change_request,
            "approvals": self.approvals,
        }


def _settings_of(row: Environment | None, key: str, profile_count: int = 0) -> EnvironmentSettings:
    if row is None:
        return EnvironmentSettings(key=key, profile_count=profile_count)
    return EnvironmentSettings(
        key=row.key,
        requires_change_request=row.requires_change_request,
        approvals=row.approvals,
        configured=True,
        profile_count=profile_count,
    )


def environment_list() -> list[EnvironmentSettings]:
    """Return every environment that profiles use or that has settings, by key."""
    counts: dict[str, int] = {}
    for environment in Profile.objects.exclude(environment=None).values_list(
        "environment", flat=True
    ):
        counts[environment] = counts.get(environment, 0) + 1
    rows = {row.key: row for row in Environment.objects.all()}
    return [
        _settings_of(rows.get(key), key, counts.get(key, 0)) for key in sorted({*counts, *rows})
    ]


def environment_get(*, key: str) -> EnvironmentSettings | None:
    """Return an environment's settings; None when no profile uses it and it has none."""
    row = Environment.objects.filter(key=key).first()
    count = Profile.objects.filter(environment=key).count()
    if row is None and not count:
        return None
    return _settings_of(row, key, count)


def environment_update(
    *, key: str, requires_change_request: bool, approvals: int, user, origin=None
) -> EnvironmentSettings:
    """Create or change an environment's protection. Raises ValidationError naming the field."""
    try:
        key_validator(key)
    except ValidationError as exc:
        raise ValidationError({"key": exc.messages}) from None
    if not isinstance(requires_change_request, bool):
        raise ValidationError({"requiresChangeRequest": ["must be true or false"]})
    if (
        isinstance(approvals, bool)
        or not isinstance(approvals, int)
        or not 0 <= approvals <= MAX_APPROVALS
    ):
        raise ValidationError({"approvals": [f"must be an integer from 0 to {MAX_APPROVALS}"]})
    with transaction.atomic():
        row, created = Environment.objects.select_for_update().get_or_create(key=key)
        before = None if created else _settings_of(row, key).as_dict()
        row.requires_change_request = requires_change_request
        row.approvals = approvals
        row.updated_by = user if getattr(user, "is_authenticated", False) else None
        row.save()
        activity_record(
            kind="environment",
            key=key,
            before=before,
            after=_settings_of(row, key).as_dict(),
            user=user,
            origin=origin,
        )
    return environment_get(key=key)


def protected_environments(keys) -> dict[str, Environment]:
    """Return the rows of the given environments that require change requests."""
    wanted = {key for key in keys if key}
    if not wanted:
        return {}
    return {
        row.key: row
        for row in Environment.objects.filter(key__in=wanted, requires_change_request=True)
    }


def staff_may_bypass(user) -> bool:
    """Return whether ``user`` may write directly in a protected environment (setting + staff)."""
    return bool(settings.SAFE_CHANGE_STAFF_BYPASS and getattr(user, "is_staff", False))


def protected_write_check(
    *,
    profile_key: str,
    environments,
    protected: dict[str, Environment],
    user,
    change_request=None,
    operator_action: str = "",
) -> bool:
    """Allow or refuse a write of one profile whose environments (before, after) are given.

    Return whether the write goes through as a logged bypass (staff, or an operator's
    explicit ``operator_action`` such as ``load_demo --reset``); raise
    ``ChangeRequestRequired`` when it may not happen. Applying a change request of this
    profile is the one sanctioned way in.
    """
    hit = sorted(key for key in environments if key in protected)
    if not hit:
        return False
    if change_request is not None and change_request.authorizes_profile(profile_key):
        return False
    if operator_action:
        logger.warning(
            "protected write bypassed: %s wrote profile %s in environment %s",
            operator_action,
            profile_key,
            hit[0],
        )
        return True
    if staff_may_bypass(user):
        logger.warning(
            "protected write bypassed: %s wrote profile %s in environment %s directly",
            user.get_username(),
            profile_key,
            hit[0],
        )
        return True
    raise ChangeRequestRequired(profile_key, hit[0])


def profile_write_refusal(
    *, user, environments, profile_key: str = ""
) -> ChangeRequestRequired | None:
    """Return the refusal a direct write in these environments would get (None: allowed).

    Doors call it before writing, to answer early and to offer "Propose change" instead of
    Save; the write itself is checked again in its transaction.
    """
    protected = protected_environments(environments)
    if not protected or staff_may_bypass(user):
        return None
    return ChangeRequestRequired(profile_key, sorted(protected)[0])

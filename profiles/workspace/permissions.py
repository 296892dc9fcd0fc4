"""Who may do what in Context Studio — the permission model, defined once.

A user has one **role**; a role grants a set of **capabilities**; every door (studio views and
templates, the API, the admin) asks ``user_can(user, capability)`` and nothing else. Django's
per-model permissions (``add_profile``…) are not consulted.

| role      | who                                               | capabilities            |
|-----------|---------------------------------------------------|-------------------------|
| anonymous | not signed in, or an inactive account             | none                    |
| reader    | any other signed-in user                          | RESOLVE, READ_CONFIG    |
| editor    | a member of the ``editors`` group                 | all but ADMINISTER and  |
|           |                                                   | MANAGE_WEBHOOKS         |
| staff     | ``is_staff`` or ``is_superuser``                  | all                     |

A request signed with a **scoped API key** has its owner's capabilities **and** its scopes'
(``SCOPE_CAPABILITIES``): ``request_capabilities`` is the one rule, which the API's permission
classes apply. A user token, a session and the studio carry the whole role.

Item material (titles, bodies, metadata) is customer data: a reader sees it only as a
resolution shows it, with each layer's itemFilter applied to the request. Lists of items, item
pages and the workspace export show every customer's material, so they need READ_MATERIAL.
"""

from collections.abc import Callable, Iterable
from enum import StrEnum
from functools import cache, wraps

from django.contrib.auth import get_user_model
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import ObjectDoesNotExist, PermissionDenied
from django.db.models import Q
from django.utils.functional import SimpleLazyObject
from rest_framework.exceptions import PermissionDenied as ApiPermissionDenied
from rest_framework.permissions import SAFE_METHODS, BasePermission

from profiles.workspace import selectors

EDITORS_GROUP = "editors"


class Capability(StrEnum):
    """What a user may do; each names the doors it opens."""

    #: resolve, preview, expand; see the decision timeline of a resolution
    RESOLVE = "resolve"
    #: read consumers, layers' own fields, profiles, rules, scenarios
    READ_CONFIG = "read_config"
    #: read items outside a resolution: item lists and pages, the workspace export
    READ_MATERIAL = "read_material"
    #: create, change, delete profiles, rules, scenarios
    WRITE_RULES = "write_rules"
    #: create, change, delete consumers, layers, items
    WRITE_MATERIAL = "write_material"
    #: upload/import a workspace, download/export it (an export also needs READ_MATERIAL)
    IMPORT_EXPORT = "import_export"
    #: create, list and revoke one's own scoped API keys (everyone's also needs ADMINISTER)
    MANAGE_KEYS = "manage_keys"
    #: the admin site, the decision log, other users' API tokens and keys
    ADMINISTER = "administer"
    #: create, change, delete and test outgoing webhooks, read their delivery logs (each one
    #: makes the server send requests to a URL of its choosing, with workspace events)
    MANAGE_WEBHOOKS = "manage_webhooks"


RESOLVE = Capability.RESOLVE
READ_CONFIG = Capability.READ_CONFIG
READ_MATERIAL = Capability.READ_MATERIAL
WRITE_RULES = Capability.WRITE_RULES
WRITE_MATERIAL = Capability.WRITE_MATERIAL
IMPORT_EXPORT = Capability.IMPORT_EXPORT
MANAGE_KEYS = Capability.MANAGE_KEYS
ADMINISTER = Capability.ADMINISTER
MANAGE_WEBHOOKS = Capability.MANAGE_WEBHOOKS


class Role(StrEnum):
    ANONYMOUS = "anonymous"
    READER = "reader"
    EDITOR = "editor"
    STAFF = "staff"


ROLE_CAPABILITIES: dict[Role, frozenset[Capability]] = {
    Role.ANONYMOUS: frozenset(),
    Role.READER: frozenset({RESOLVE, READ_CONFIG}),
    Role.EDITOR: frozenset(Capability) - {ADMINISTER, MANAGE_WEBHOOKS},
    Role.STAFF: frozenset(Capability),
}

# The role is stored on the user object: one request (one user object) asks the database at
# most once, however many checks its views, templates and serializers make.
_ROLE_ATTRIBUTE = "_ctxstudio_role"


def user_role(user) -> Role:
    """Return the user's role (at most one query per user object, none for staff)."""
    if user is None or not user.is_authenticated or not user.is_active:
        return Role.ANONYMOUS
    role = getattr(user, _ROLE_ATTRIBUTE, None)
    if role is None:
        role = account_role(user)
        setattr(user, _ROLE_ATTRIBUTE, role)
    return role


def user_role_forget(user) -> None:
    """Forget the role ``user_role`` holds on this user object (after the role changed)."""
    user.__dict__.pop(_ROLE_ATTRIBUTE, None)


def account_role(user) -> Role:
    """Return the role the account holds, active or not (one query unless staff, not cached):
    staff (``is_staff``/``is_superuser``), editor (the ``editors`` group), else reader."""
    if user.is_staff or user.is_superuser:
        return Role.STAFF
    if user.groups.filter(name=EDITORS_GROUP).exists():
        return Role.EDITOR
    return Role.READER


def user_capabilities(user) -> frozenset[Capability]:
    """Return every capability the user has."""
    return ROLE_CAPABILITIES[user_role(user)]


def user_can(user, capability: Capability) -> bool:
    """Return whether the user has the capability."""
    return Capability(capability) in user_capabilities(user)


def users_with(capability: Capability):
    """Return the active users who have the capability now, as a queryset (the same roles as
    ``user_role``)."""
    roles = {role for role, granted in ROLE_CAPABILITIES.items() if capability in granted}
    users = get_user_model().objects.filter(is_active=True)
    if Role.READER not in roles:
        holds = Q(pk__in=[])
        if Role.STAFF in roles:
            holds |= Q(is_staff=True) | Q(is_superuser=True)
        if Role.EDITOR in roles:
            holds |= Q(groups__name=EDITORS_GROUP)
        users = users.filter(holds)
    return users.distinct()


def users_who_can(capability: Capability, user_ids: Iterable[int]) -> set[int]:
    """Return the ids among ``user_ids`` of the users who have the capability now (one query).

    The same roles as ``user_role``, asked of many users at once (e.g. which approvals of a
    change request still count).
    """
    ids = set(user_ids)
    if not ids:
        return set()
    return set(users_with(capability).filter(pk__in=ids).values_list("pk", flat=True))


def _as_tuple(capabilities: Capability | Iterable[Capability]) -> tuple[Capability, ...]:
    if isinstance(capabilities, str):
        return (Capability(capabilities),)
    return tuple(Capability(capability) for capability in capabilities)


def _missing(
    user, capabilities: Iterable[Capability], key=None, *, safe: bool = True
) -> list[Capability]:
    granted = request_capabilities(user, key, safe=safe)
    return [capability for capability in capabilities if capability not in granted]


def _refusal(missing: Iterable[Capability], key=None) -> str:
    names = ", ".join(capability.name for capability in missing)
    if key_scopes(key) is not None and not set(missing) - user_capabilities(key.owner):
        scopes = ", ".join(key.scopes)
        return (
            f"this needs the {names} permission, which this API key's scopes ({scopes}) "
            "do not grant"
        )
    return f"this needs the {names} permission ({explain_roles(missing)})"


def explain_roles(capabilities: Iterable[Capability]) -> str:
    """Return which roles hold all the capabilities, in words ("editors or staff")."""
    wanted = set(capabilities)
    roles = [role for role, granted in ROLE_CAPABILITIES.items() if wanted <= granted]
    names = {Role.READER: "any signed-in user", Role.EDITOR: "editors", Role.STAFF: "staff"}
    return " or ".join(names[role] for role in roles if role in names) or "nobody"


def require(user, *capabilities: Capability) -> None:
    """Raise ``PermissionDenied`` (403) unless the user has every capability."""
    missing = _missing(user, capabilities)
    if missing:
        raise PermissionDenied(_refusal(missing))


# --- scoped API keys ------------------------------------------------------------------------

_KEY_CAPABILITIES = frozenset(Capability) - {MANAGE_KEYS, ADMINISTER, MANAGE_WEBHOOKS}

#: What each scope of a key grants within its owner's role: (on GET, HEAD and OPTIONS, on
#: other methods). Each scope includes the one before it. ``resolve`` opens resolve, expand
#: and preview only; ``read`` every read (the export too) and the dry runs that write
#: nothing (the impact); ``write`` reads too (an update sends the ``ETag`` a read gave). No
#: scope grants MANAGE_KEYS, ADMINISTER or MANAGE_WEBHOOKS: a key never makes keys, nor
#: administers, nor points the server at a URL.
SCOPE_CAPABILITIES: dict[str, tuple[frozenset[Capability], frozenset[Capability]]] = {
    "resolve": (frozenset({RESOLVE}), frozenset({RESOLVE})),
    "read": (
        frozenset({RESOLVE, READ_CONFIG, READ_MATERIAL, IMPORT_EXPORT}),
        frozenset({RESOLVE, READ_CONFIG}),
    ),
    "write": (_KEY_CAPABILITIES, _KEY_CAPABILITIES),
}


class KeyForbidden(ApiPermissionDenied):
    """A scoped key's refusal (403 ``FORBIDDEN``): its owner's role would allow this, its
    scopes or environments do not. A role's refusal stays ``PERMISSION_DENIED``."""


def key_scopes(key) -> frozenset[str] | None:
    """Return the scopes of a scoped key, or None when ``key`` does not limit its request (a
    user token, a session's None)."""
    if key is None or not getattr(key, "scoped", False):
        return None
    return frozenset(key.scopes)


def scope_capabilities(scopes, *, safe: bool) -> frozenset[Capability]:
    """Return what the scopes grant a request (``safe``: a GET, HEAD or OPTIONS)."""
    side = 0 if safe else 1
    return frozenset().union(*(SCOPE_CAPABILITIES[scope][side] for scope in scopes))


def request_capabilities(user, key=None, *, safe: bool = True) -> frozenset[Capability]:
    """Return what a request may do: its user's role, and for a scoped key only what its
    scopes grant as well (``key`` is DRF's ``request.auth``)."""
    granted = user_capabilities(user)
    scopes = key_scopes(key)
    if scopes is None:
        return granted
    return granted & scope_capabilities(scopes, safe=safe)


def request_can(request, capability: Capability) -> bool:
    """Return whether an API request may use the capability (its key's scopes included)."""
    granted = request_capabilities(
        request.user, getattr(request, "auth", None), safe=request.method in SAFE_METHODS
    )
    return Capability(capability) in granted


def key_environments(key) -> frozenset[str] | None:
    """Return the environments a scoped key is limited to, or None when it is not limited."""
    if key_scopes(key) is None or not key.environments:
        return None
    return frozenset(key.environments)


def require_key_environment(key, environment: str | None, profile: str = "") -> None:
    """Raise ``KeyForbidden`` unless the key may resolve a profile of ``environment``.

    A key limited to environments resolves only profiles of those; a profile in no
    environment is outside every limit.
    """
    limits = key_environments(key)
    if limits is None or environment in limits:
        return
    names = ", ".join(f'"{name}"' for name in sorted(limits))
    where = f'environment "{environment}"' if environment else "no environment"
    subject = f'profile "{profile}"' if profile else "the profile"
    raise KeyForbidden(
        f"this API key resolves only profiles of environment {names}; {subject} is in {where}"
    )


def require_key_profile(key, profile_key: str) -> None:
    """Raise ``KeyForbidden`` unless the key may resolve the stored profile ``profile_key``.

    Every door that resolves a profile named by its key (a preview, a version diff's rendered
    text, a draft's impact) asks this before resolving, as resolve and expand ask
    ``require_key_environment`` of the profile their request selects. One query, for a key
    limited to environments only; a profile that does not exist is left to the door's 404.
    """
    if key_environments(key) is None:
        return
    try:
        profile = selectors.profile_get(key=profile_key)
    except ObjectDoesNotExist:
        return
    require_key_environment(key, profile.environment, profile.key)


def key_impact_shown(
    key, impact: list[dict], *, profile: str = "", declared: dict[str, set] | None = None
):
    """Return the entries of a stored impact (a change request's: one per saved scenario,
    each naming its ``profile``, or of ``profile``) that the key may read.

    A key limited to environments reads only resolutions of profiles of those
    (``require_key_environment``), as it resolves only them. A profile's environments are
    the stored one and those the request gives it (``declared``: a change set may move or
    create a profile): every one must be within the limits, and a profile with none known is
    not shown. Every entry for other callers; one query, for a limited key only.
    """
    limits = key_environments(key)
    if limits is None or not impact:
        return impact
    profiles = {entry.get("profile", profile) for entry in impact}
    known = {profile: set() for profile in profiles}
    for profile, environment in selectors.profile_environments_get(keys=profiles).items():
        known[profile].add(environment)
    for profile, environments in (declared or {}).items():
        if profile in known:
            known[profile] |= environments
    allowed = {profile for profile, found in known.items() if found and found <= limits}
    return [entry for entry in impact if entry.get("profile", profile) in allowed]


# --- background jobs --------------------------------------------------------------------------


def background_refusal(
    user, key=None, *, capabilities: Iterable[Capability], username: str = "", now=None
) -> str | None:
    """Return why a job queued earlier by ``user`` with ``key`` (its request's API key; None
    for a session) may not run now, None when it may.

    A job runs later, in a worker, in its user's name: when it starts it asks what a request
    asks when it arrives. Its user must still exist (``username``: who queued it, kept when
    the account is deleted), be active and hold ``capabilities`` (within the key's scopes);
    its key must be neither revoked nor expired. A job queued by no user (an operator's) runs.
    """
    if user is None:
        return f'the user "{username}" who queued it no longer exists' if username else None
    name = user.get_username()
    if not user.is_active:
        return f'the user "{name}" who queued it is deactivated'
    if key is not None:
        if key.revoked:
            return f'the API key "{key.prefix}…" it was queued with was revoked'
        if key.expired(now):
            return f'the API key "{key.prefix}…" it was queued with has expired'
    missing = _missing(user, _as_tuple(capabilities), key, safe=False)
    if missing:
        return f'the user "{name}" who queued it may no longer run it: {_refusal(missing, key)}'
    return None


# --- governance -----------------------------------------------------------------------------


def governance_refusal(user, key=None) -> str | None:
    """Return why this caller may not mark a layer governed or ungoverned (None: it may).

    Which layers are governed is staff's decision, like an environment's protection (whose
    settings need ADMINISTER, which no scope grants): staff decide it in the studio, the
    admin, or the API with their own token; a scoped key never does, whoever owns it. Every
    door asks this through the layer services (``key`` is the API's ``request.auth``; None for
    a session). An operator's command, with no user, may.
    """
    if user is None:
        return None
    if key_scopes(key) is not None:
        return (
            "governed: no API key scope grants deciding which layers are governed (staff "
            "decide it in the studio, the admin, or with their own token)"
        )
    if not user_can(user, ADMINISTER):
        return (
            "governed: only staff decide which layers are governed (their item writes then "
            "need change requests while protected profiles read them)"
        )
    return None


# --- studio views -------------------------------------------------------------------------


def capability_required(
    *capabilities: Capability, unsafe: Capability | Iterable[Capability] | None = None
) -> Callable:
    """Decorate a studio view: anonymous users go to the login page; others lacking a
    capability get 403.

    GET and HEAD need ``capabilities``; other methods (POST…) need ``unsafe`` instead when it
    is given. An action inside one POST that needs more (the editor's Save) calls ``require``.
    """
    safe_needed = _as_tuple(capabilities)
    unsafe_needed = safe_needed if unsafe is None else _as_tuple(unsafe)

    def decorator(view):
        @wraps(view)
        def checked(request, *args, **kwargs):
            if user_role(request.user) is Role.ANONYMOUS:
                return redirect_to_login(request.get_full_path())
            needed = safe_needed if request.method in SAFE_METHODS else unsafe_needed
            require(request.user, *needed)
            return view(request, *args, **kwargs)

        checked.required_capabilities = {"safe": safe_needed, "unsafe": unsafe_needed}
        return checked

    return decorator


# --- API ----------------------------------------------------------------------------------


def capability_permission(
    *capabilities: Capability, unsafe: Capability | Iterable[Capability] | None = None
) -> type[BasePermission]:
    """Return a DRF permission class: safe methods need ``capabilities``; POST, PUT, PATCH
    and DELETE need ``unsafe`` instead when it is given.

    An anonymous request is refused with 401 (DRF asks for credentials), a signed-in one
    lacking a capability with 403.
    """
    safe_needed = _as_tuple(capabilities)
    unsafe_needed = safe_needed if unsafe is None else _as_tuple(unsafe)
    return _permission_class(safe_needed, unsafe_needed)


@cache
def _permission_class(
    safe_needed: tuple[Capability, ...], unsafe_needed: tuple[Capability, ...]
) -> type[BasePermission]:
    class CapabilityPermission(BasePermission):
        required = {"safe": safe_needed, "unsafe": unsafe_needed}

        def has_permission(self, request, view) -> bool:
            safe = request.method in SAFE_METHODS
            needed = safe_needed if safe else unsafe_needed
            key = getattr(request, "auth", None)
            missing = _missing(request.user, needed, key, safe=safe)
            if missing and not set(missing) - user_capabilities(request.user):
                raise KeyForbidden(_refusal(missing, key))  # the role has it, the key does not
            if missing:
                self.message = _refusal(missing, key)
            return not missing

    names = "".join(c.name.title().replace("_", "") for c in safe_needed)
    if unsafe_needed != safe_needed:
        names += "Write" + "".join(c.name.title().replace("_", "") for c in unsafe_needed)
    CapabilityPermission.__name__ = CapabilityPermission.__qualname__ = f"Can{names}"
    return CapabilityPermission


# A view that names no permission: readers may look, only staff may change anything.
DefaultApiPermission = capability_permission(READ_CONFIG, unsafe=ADMINISTER)


# --- templates ----------------------------------------------------------------------------


def capabilities(request) -> dict:
    """Template context processor: ``can.<capability>`` (``can.write_rules``…) for the
    signed-in user, so a page renders only the controls its user may use.

    Hiding a control is a courtesy; the view still checks (a client can post anything).
    """

    def flags() -> dict[str, bool]:
        granted = user_capabilities(getattr(request, "user", None))
        return {capability.value: capability in granted for capability in Capability}

    return {"can": SimpleLazyObject(flags)}


# --- admin --------------------------------------------------------------------------------


class AdministerAdminMixin:
    """ModelAdmin/InlineModelAdmin mixin: staff (ADMINISTER) view, add, change and delete.

    Django lets only ``is_staff`` users log in to the admin, so editors who are not staff work
    in the studio and the API instead. A class may still refuse an action for everyone by
    overriding the method (a read-only log has no add permission).
    """

    def has_module_permission(self, request) -> bool:
        return user_can(request.user, ADMINISTER)

    def has_view_permission(self, request, obj=None) -> bool:
        return user_can(request.user, ADMINISTER)

    def has_add_permission(self, request, *args, **kwargs) -> bool:
        return user_can(request.user, ADMINISTER)

    def has_change_permission(self, request, obj=None) -> bool:
        return user_can(request.user, ADMINISTER)

    def has_delete_permission(self, request, obj=None) -> bool:
        return user_can(request.user, ADMINISTER)


class ReadOnlyAdminMixin(AdministerAdminMixin):
    """ModelAdmin/InlineModelAdmin mixin for records: staff (ADMINISTER) view them; nobody
    adds, changes or deletes one (no bulk "delete selected" either)."""

    def has_add_permission(self, request, *args, **kwargs) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

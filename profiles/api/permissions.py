"""Transition aliases: the permission model lives in ``profiles.permissions``.

Use ``capability_permission(...)`` and ``user_can(...)`` there; these names go once no module
imports them.
"""

from profiles.permissions import (
    EDITORS_GROUP,
    READ_CONFIG,
    READ_MATERIAL,
    WRITE_MATERIAL,
    WRITE_RULES,
    capability_permission,
    user_can,
)

__all__ = ["EDITORS_GROUP", "IsEditor", "IsEditorOrReadOnly", "is_editor"]

IsEditorOrReadOnly = capability_permission(READ_CONFIG, unsafe=(WRITE_RULES, WRITE_MATERIAL))
IsEditor = capability_permission(READ_MATERIAL, unsafe=WRITE_MATERIAL)


def is_editor(user) -> bool:
    """Return whether the user is an editor or staff (use ``user_can`` with a capability)."""
    return user_can(user, WRITE_RULES)

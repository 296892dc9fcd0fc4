"""Transition aliases: the permission model lives in ``profiles.permissions``.

Use ``capability_permission(...)`` there; these names go once no module imports them.
"""

from profiles.permissions import (
    EDITORS_GROUP,
    READ_CONFIG,
    READ_MATERIAL,
    WRITE_MATERIAL,
    WRITE_RULES,
    capability_permission,
)

__all__ = ["EDITORS_GROUP", "IsEditor", "IsEditorOrReadOnly"]

IsEditorOrReadOnly = capability_permission(READ_CONFIG, unsafe=(WRITE_RULES, WRITE_MATERIAL))
IsEditor = capability_permission(READ_MATERIAL, unsafe=WRITE_MATERIAL)

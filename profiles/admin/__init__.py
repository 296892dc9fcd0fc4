"""The admin, for staff: every model, its history (who changed which field, when), and a
read-only "resolve" page per profile for people who never open the editor. One module per
feature (activity, notifications, versioning, material, authoring, resolution, safechange,
import_export) and one for API keys (``keys``), on what their pages share (``workspace``);
importing this package registers them all (Django's admin autodiscovery).

Who may use it is ``profiles.workspace.permissions`` (ADMINISTER), as in every other door, not
Django's per-model permissions; Django's own rule that only ``is_staff`` users log in here
still holds.
"""

from profiles.admin import (
    activity,
    authoring,
    import_export,
    keys,
    material,
    notifications,
    resolution,
    safechange,
    versioning,
)

__all__ = [
    "activity",
    "authoring",
    "import_export",
    "keys",
    "material",
    "notifications",
    "resolution",
    "safechange",
    "versioning",
]

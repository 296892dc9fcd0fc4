"""Restoring a profile version: a new version equal to an old one, history never rewritten."""

from django.db import transaction

from profiles.authoring.profiles import profile_write_document
from profiles.models import ProfileVersion
from profiles.versioning.versions import (
    WriteOrigin,
    latest_versions_get,
    profile_version_number,
    version_get,
)


class VersionNotRestorable(Exception):
    """The version records a deletion: it has no document to restore."""


def version_restore(
    *,
    profile_key: str,
    number: int,
    user,
    if_match: str | None = None,
    origin: WriteOrigin | None = None,
) -> tuple[ProfileVersion, bool]:
    """Append a version equal to version ``number``; return (latest version, whether new).

    History is never rewritten. Restoring the version that is already current changes
    nothing. Raises ProfileVersion.DoesNotExist, VersionNotRestorable (a deletion record),
    PreconditionFailed, EntryInvalid (e.g. its consumer no longer exists) and
    ChangeRequestRequired in a protected environment.
    """
    version = version_get(profile_key=profile_key, number=number)
    if version.document is None:
        raise VersionNotRestorable(f"version {number} records the deletion of the profile")
    with transaction.atomic():
        before = profile_version_number(profile_key=profile_key)
        profile_write_document(
            key=profile_key,
            document=version.document,
            user=user,
            if_match=if_match,
            origin=WriteOrigin(
                source=ProfileVersion.Source.RESTORE,
                # History says "restored from version N" from restored_from: no message
                # repeating it; the author's own words when a door passes them.
                message=origin.message if origin is not None else "",
                restored_from=number,
                door=(origin.door if origin is not None else ""),
            ),
        )
        latest = latest_versions_get([profile_key])[profile_key]
    return latest, latest.number != before

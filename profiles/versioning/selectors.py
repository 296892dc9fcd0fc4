"""Reads of versioning for the doors: whether a profile has a history, the documents of some
of its versions."""

from profiles.models import Profile, ProfileVersion


def profile_history_exists(*, profile_key: str) -> bool:
    """Return whether the key names a profile or has versions (a deleted profile keeps them)."""
    return (
        ProfileVersion.objects.filter(profile_key=profile_key).exists()
        or Profile.objects.filter(key=profile_key).exists()
    )


def version_documents_get(*, profile_key: str, numbers) -> dict[int, dict | None]:
    """Return the document of each of these versions of the profile that exists, by number."""
    return dict(
        ProfileVersion.objects.filter(profile_key=profile_key, number__in=list(numbers))
        .order_by("-number")
        .values_list("number", "document")
    )

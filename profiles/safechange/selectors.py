"""Reads of safe change for the doors: open change requests, whether a profile has a history,
the documents of some of its versions, a change request with everything its record shows, the
scenarios an impact names."""

from profiles.models import ChangeRequest, Profile, ProfileVersion, Scenario
from profiles.safechange.change_requests import change_request_list


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


def change_request_record_get(*, pk: int) -> ChangeRequest:
    """Return the change request with its author, resolver and approvals (with their users)
    loaded; raise ChangeRequest.DoesNotExist."""
    return change_request_list().get(pk=pk)


def change_request_open_count(*, profile_key: str) -> int:
    """Return how many change requests of the profile are open."""
    return ChangeRequest.objects.filter(
        profile_key=profile_key, status=ChangeRequest.Status.OPEN
    ).count()


def scenario_ids_by_name_get(*, profile_key: str) -> dict[str, int]:
    """Return the ids of the profile's saved scenarios by name (an impact entry names one)."""
    return dict(Scenario.objects.filter(profile__key=profile_key).values_list("name", "pk"))

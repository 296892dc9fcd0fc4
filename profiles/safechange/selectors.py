"""Reads of safe change for the doors: change requests by status and filters, open ones, a
change request with everything its record shows, the scenarios an impact names (a profile's
history is ``profiles.versioning.selectors``)."""

from profiles.models import ChangeRequest, Scenario
from profiles.safechange.change_requests import change_request_list


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


def change_request_list_filtered(
    *, statuses=None, profile_key: str = "", title: str = "", **people
):
    """Return change requests, newest first: with one of ``statuses`` (any when empty), of
    the profile ``profile_key`` (any when empty), whose title contains ``title`` (any case);
    ``people``: ``change_request_list``'s author, reviewer or requested_of."""
    queryset = change_request_list(profile=profile_key or None, **people)
    if statuses:
        queryset = queryset.filter(status__in=list(statuses))
    if title:
        queryset = queryset.filter(title__icontains=title)
    return queryset


def change_request_profile_keys_list() -> list[str]:
    """Return the keys of the profiles that change requests were opened on, in order."""
    return list(
        ChangeRequest.objects.exclude(profile_key="")
        .order_by("profile_key")
        .values_list("profile_key", flat=True)
        .distinct()
    )

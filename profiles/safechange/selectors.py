"""ORM reads of the safe-change pages that no service needs."""

from profiles.models import ChangeRequest, Scenario


def change_request_open_count(*, profile_key: str) -> int:
    """Return how many change requests of the profile are open."""
    return ChangeRequest.objects.filter(
        profile_key=profile_key, status=ChangeRequest.Status.OPEN
    ).count()


def scenario_ids_by_name_get(*, profile_key: str) -> dict[str, int]:
    """Return the ids of the profile's saved scenarios by name (an impact entry names one)."""
    return dict(Scenario.objects.filter(profile__key=profile_key).values_list("name", "pk"))

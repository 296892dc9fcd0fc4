"""Reads of safe change: change requests by status and filters, open ones, a change request
with everything its record shows, its ETag, where requests stand (environments, approvals
asked and counted), the scenarios an impact names (a profile's history is
``profiles.versioning.selectors``)."""

from profiles.models import ChangeRequest, ChangeRequestApproval, Environment, Profile, Scenario
from profiles.safechange.change_sets import change_sets_approvals_required
from profiles.workspace.permissions import WRITE_RULES, users_who_can


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


def change_request_etag(change_request: ChangeRequest) -> str:
    """Return the ETag of what a reviewer reads: the request at its revision."""
    return f'"cr{change_request.pk}.{change_request.revision}"'


def change_request_environments(change_requests) -> dict[int, str | None]:
    """Return, per request, the environment of its profile now (one query).

    The profile may have moved since the request was opened; a request that creates a
    profile creates it in ``creates.environment``; a deleted profile keeps the environment it
    had.
    """
    keys = {cr.profile_key for cr in change_requests if cr.creates is None}
    current = dict(Profile.objects.filter(key__in=keys).values_list("key", "environment"))
    return {
        cr.pk: (
            cr.creates.get("environment")
            if cr.creates is not None
            else current.get(cr.profile_key, cr.environment)
        )
        for cr in change_requests
    }


def environment_approvals_get(environments: set[str | None]) -> dict[str | None, int]:
    """Return the approvals each environment asks for (1 for none, or one not configured)."""
    keys = environments - {None}
    configured = dict(Environment.objects.filter(key__in=keys).values_list("key", "approvals"))
    return {key: configured.get(key, 1) for key in environments}


def approvals_counted(approvals) -> set[int]:
    """Return the ids of the approvals that count now (one query): by a user who may still
    review (active, with WRITE_RULES), not the author, of the request's current revision.

    ``approvals``: ``(change request, approval)`` pairs.
    """
    approvals = list(approvals)
    allowed = users_who_can(WRITE_RULES, {approval.user_id for _, approval in approvals})
    return {
        approval.pk
        for change_request, approval in approvals
        if approval.user_id in allowed
        and approval.user_id != change_request.author_id
        and approval.revision == change_request.revision
    }


class ChangeRequestStanding:
    """Where requests stand now: their profile's environment, the approvals it asks for and
    the approvals that count (three queries for any number of requests, approvals prefetched
    as ``change_request_list`` does)."""

    def __init__(self, change_requests):
        change_requests = list(change_requests)
        self.environments = change_request_environments(change_requests)
        required = environment_approvals_get(set(self.environments.values()))
        self.required = {pk: required[key] for pk, key in self.environments.items()}
        # A change set asks for what the environments of the profiles it affects ask for.
        self.required.update(change_sets_approvals_required(change_requests))
        self.counted = approvals_counted(
            (change_request, approval)
            for change_request in change_requests
            for approval in change_request.approvals.all()
        )

    def counted_for(self, change_request: ChangeRequest) -> list[ChangeRequestApproval]:
        """Return the request's approvals that count now."""
        return [a for a in change_request.approvals.all() if a.pk in self.counted]


def change_request_get(*, pk: int, lock: bool = False) -> ChangeRequest:
    """Return one change request with its approvals; raise ChangeRequest.DoesNotExist."""
    queryset = ChangeRequest.objects.select_related("author", "resolved_by")
    if lock:
        queryset = ChangeRequest.objects.select_for_update()
    change_request = queryset.get(pk=pk)
    return change_request


def change_request_list(
    *,
    status: str | None = None,
    profile: str | None = None,
    author=None,
    reviewer=None,
    requested_of=None,
):
    """Return change requests, newest first; ``reviewer``: open ones they may still approve;
    ``requested_of``: those whose review is requested of this user."""
    queryset = ChangeRequest.objects.select_related(
        "author", "resolved_by", "apply_scheduled_by"
    ).prefetch_related("approvals__user", "reviewers")
    if requested_of is not None:
        queryset = queryset.filter(reviewers=requested_of)
    if status:
        queryset = queryset.filter(status=status)
    if profile:
        queryset = queryset.filter(profile_key=profile)
    if author is not None:
        queryset = queryset.filter(author=author)
    if reviewer is not None:
        queryset = (
            queryset.filter(status=ChangeRequest.Status.OPEN)
            .exclude(author=reviewer)
            .exclude(approvals__user=reviewer)
        )
    return queryset.order_by("-created_at", "-id")

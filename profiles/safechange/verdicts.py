"""Reviewers' verdicts on a change request's current revision: "changes requested" blocks apply.

A reviewer's verdict is their latest ``approved`` or ``changes-requested`` entry of the review
thread on the request's *current* revision: a new revision (an edit, a rebase) starts with no
verdict, so it clears a request for changes as it withdraws the approvals. Only the verdicts of
users who may still review count (active editors or staff), as with approvals.

Its own module, beside ``reviews``, because applying (``change_requests``) checks it and
``reviews`` builds on ``change_requests``: the arrow points one way.
"""

from profiles.models import ChangeRequest, ChangeRequestComment
from profiles.versioning.environments import SafeChangeError
from profiles.workspace.permissions import WRITE_RULES, users_who_can

VERDICTS = (ChangeRequestComment.Kind.APPROVED, ChangeRequestComment.Kind.CHANGES_REQUESTED)


class ChangesRequested(SafeChangeError):
    """A reviewer asked for changes on the revision about to be applied."""

    status_code = 409
    code = "CHANGES_REQUESTED"
    path = "reviews"

    def __init__(self, change_request: ChangeRequest, usernames: list[str]):
        super().__init__(
            f"change request #{change_request.pk}: {', '.join(usernames)} requested changes on "
            f"revision {change_request.revision}; edit the request (a new revision) and have "
            "it reviewed again",
            changesRequestedBy=usernames,
        )


def changes_requested_by(change_request: ChangeRequest) -> list[str]:
    """Return the usernames of the reviewers whose latest verdict on the current revision is
    "changes requested" (two queries), in the order they gave it."""
    latest: dict[int, tuple[str, str]] = {}
    rows = (
        ChangeRequestComment.objects.filter(
            change_request=change_request,
            revision=change_request.revision,
            kind__in=VERDICTS,
            author__isnull=False,
        )
        .order_by("created_at", "id")
        .values_list("author_id", "author__username", "kind")
    )
    for author_id, username, kind in rows:
        latest.pop(author_id, None)  # keep the order of each reviewer's latest verdict
        latest[author_id] = (username, kind)
    blocking = [
        author_id
        for author_id, (_, kind) in latest.items()
        if kind == ChangeRequestComment.Kind.CHANGES_REQUESTED
        and author_id != change_request.author_id
    ]
    allowed = users_who_can(WRITE_RULES, blocking)
    return [latest[author_id][0] for author_id in blocking if author_id in allowed]


def check_no_changes_requested(change_request: ChangeRequest) -> None:
    """Raise ChangesRequested while a reviewer's verdict on the current revision asks for
    changes."""
    usernames = changes_requested_by(change_request)
    if usernames:
        raise ChangesRequested(change_request, usernames)

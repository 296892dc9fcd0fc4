"""The refusals of change requests (a change set's own are in
``profiles.safechange.change_set_entries`` and ``profiles.safechange.change_sets``): each a
SafeChangeError (or PreconditionFailed) the doors answer with its status and code."""

from profiles.models import (
    ChangeRequest,
)
from profiles.safechange.selectors import change_request_etag
from profiles.versioning.environments import SafeChangeError
from profiles.workspace.concurrency import PreconditionFailed
from profiles.workspace.validation import (
    issues_body,
)
from resolver import ValidationIssue


class ChangesInvalid(SafeChangeError):
    """The changes would not make a valid profile; every issue names its field."""

    code = "INVALID_WORKSPACE"

    def __init__(self, issues: list[ValidationIssue]):
        self.issues = issues
        first = issues[0]
        super().__init__(str(first), path=first.path, **issues_body(issues))


class SelfApproval(SafeChangeError):
    status_code = 403
    code = "SELF_APPROVAL"

    def __init__(self):
        super().__init__("the author of a change request cannot approve it")


class NotAllowed(SafeChangeError):
    status_code = 403
    code = "PERMISSION_DENIED"


class NotOpen(SafeChangeError):
    status_code = 409
    code = "CHANGE_REQUEST_NOT_OPEN"
    path = "status"

    def __init__(self, change_request: ChangeRequest):
        super().__init__(f"change request #{change_request.pk} is {change_request.status}")


class ApprovalsMissing(SafeChangeError):
    status_code = 409
    code = "APPROVALS_REQUIRED"
    path = "approvals"


class StaleChangeRequest(SafeChangeError):
    status_code = 409
    code = "STALE_CHANGE_REQUEST"
    path = "baseVersion"

    def __init__(self, change_request: ChangeRequest, current: int | None):
        super().__init__(
            f'profile "{change_request.profile_key}" moved past version '
            f"{change_request.base_version} (it is at version {current}): rebase the change "
            "request to recompute its impact, then apply it",
            baseVersion=change_request.base_version,
            currentVersion=current,
        )


class NothingToChange(SafeChangeError):
    path = "changes"


class ChangeRequestChanged(PreconditionFailed):
    """The request was edited or rebased after the reviewer read it (stale ``If-Match``)."""

    def __init__(self, change_request: ChangeRequest):
        super().__init__(change_request_etag(change_request))
        self.args = (
            f"change request #{change_request.pk} changed since you read it (it is at revision "
            f"{change_request.revision}): review it again, then approve",
        )


class RevisionRequired(SafeChangeError):
    """An approval that names no revision would approve whatever the request holds now."""

    status_code = 428
    code = "PRECONDITION_REQUIRED"
    path = "If-Match"

    def __init__(self, change_request: ChangeRequest):
        super().__init__(
            f"send the ETag of change request #{change_request.pk} as If-Match: an approval "
            "approves the revision you reviewed",
            etag=change_request_etag(change_request),
        )

"""Reviews with people in them: requested reviewers, the review thread, verdicts, scheduled apply.

* **Reviewers.** A request names the users whose review it asks for (``reviewers``: users who
  may review, i.e. with WRITE_RULES, never its author); they are emailed when the request is
  opened or they are added, once per revision of the request (``reviewers_notified``). Any
  editor may still review; the list says who is asked.
* **The thread.** Comments, approvals and requests for changes are ``ChangeRequestComment``
  rows, each with the revision of the request its author was reading, so a reader sees what
  was said about which revision.
* **Verdicts.** Approving records the approval (``change_request_approve``: the revision read)
  and an ``approved`` entry; requesting changes records a ``changes-requested`` entry and
  withdraws that reviewer's approval. While a reviewer's latest verdict on the current revision
  asks for changes, apply answers ``409 CHANGES_REQUESTED`` (``profiles.safechange.verdicts``);
  a new revision clears it.
* **Scheduled apply.** ``apply_at`` (set by someone allowed to apply, on an open request)
  enqueues a task for that moment. When due it applies the request through
  ``change_request_apply`` if it is still open, approved and not stale; otherwise nothing is
  applied and the author and the scheduler are told why (``scheduled_apply_failed``). A task
  acts only while ``apply_at`` is still the moment it was enqueued for, and consumes it: it
  applies at most once, and a rescheduled or cleared time makes the earlier task a no-op.

Emails go out after the transaction commits and never fail a request
(``profiles.notifications.email``).
"""

import logging
from datetime import datetime, timedelta

from django.db import transaction
from django.tasks import task
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from profiles.models import ChangeRequest, ChangeRequestApproval, ChangeRequestComment
from profiles.notifications.email import (
    review_comment_email,
    review_requested_email,
    scheduled_apply_failed_email,
    scheduled_apply_ran_email,
)
from profiles.notifications.webhooks import change_request_event, webhook_event_emit
from profiles.safechange.change_requests import (
    change_request_apply,
    change_request_approve,
    change_request_update,
)
from profiles.safechange.change_sets import change_set_text_without_items
from profiles.safechange.errors import ChangeRequestChanged, NotAllowed, NotOpen
from profiles.safechange.selectors import change_request_etag, change_request_get
from profiles.safechange.verdicts import (
    ChangesRequested,
    changes_requested_by,
    check_no_changes_requested,
)
from profiles.versioning.environments import SafeChangeError
from profiles.workspace.permissions import WRITE_RULES, user_can, users_with
from resolver.validation import TEXT_RULE_MESSAGE, violates_text_rule

__all__ = [
    "ChangesRequested",
    "changes_requested_by",
    "check_no_changes_requested",
]

logger = logging.getLogger("profiles.safechange")

COMMENT_MAX_LENGTH = 10_000
# Bounded lists: the reviewers one request asks, the entries of one thread, the choices the
# studio offers.
MAX_REVIEWERS = 20
MAX_COMMENTS = 1_000
REVIEWER_CANDIDATES_MAX = 500
# How far ahead an apply may be scheduled.
SCHEDULE_MAX_AHEAD = timedelta(days=366)

UNSET = object()
Kind = ChangeRequestComment.Kind


# --- titles ----------------------------------------------------------------------------------


# --- reviewers -------------------------------------------------------------------------------


def reviewer_candidates_list(*, exclude=None) -> list:
    """Return the users who may review (active, with WRITE_RULES) by username, at most
    ``REVIEWER_CANDIDATES_MAX``; ``exclude``: a user left out (the author)."""
    users = users_with(WRITE_RULES).order_by("username")
    if exclude is not None and getattr(exclude, "pk", None) is not None:
        users = users.exclude(pk=exclude.pk)
    return list(users[:REVIEWER_CANDIDATES_MAX])


def reviewers_clean(reviewers, *, author) -> list:
    """Return the users named by ``reviewers`` (a list of usernames, each once, in order);
    raise SafeChangeError at ``reviewers[i]`` for a name that is not a user who may review, or
    the author."""
    if reviewers is None:
        return []
    if not isinstance(reviewers, list | tuple):
        raise SafeChangeError("reviewers: must be a list of usernames", path="reviewers")
    if len(reviewers) > MAX_REVIEWERS:
        raise SafeChangeError(
            f"reviewers: at most {MAX_REVIEWERS} reviewers", path=f"reviewers[{MAX_REVIEWERS}]"
        )
    names = []
    for index, name in enumerate(reviewers):
        if not isinstance(name, str) or not name or len(name) > 150:
            raise SafeChangeError(
                f"reviewers[{index}]: must be a username", path=f"reviewers[{index}]"
            )
        if violates_text_rule(name):  # the database cannot look such a name up
            raise SafeChangeError(
                f"reviewers[{index}]: {TEXT_RULE_MESSAGE}", path=f"reviewers[{index}]"
            )
        names.append(name)
    found = {
        user.get_username(): user for user in users_with(WRITE_RULES).filter(username__in=names)
    }
    chosen: dict[str, object] = {}
    for index, name in enumerate(names):
        user = found.get(name)
        if user is None:
            raise SafeChangeError(
                f'reviewers[{index}]: "{name}" is not a user who may review change requests '
                "(an active editor or staff)",
                path=f"reviewers[{index}]",
            )
        if author is not None and user.pk == author.pk:
            raise SafeChangeError(
                f"reviewers[{index}]: the author of a change request cannot review it",
                path=f"reviewers[{index}]",
            )
        chosen.setdefault(name, user)
    return list(chosen.values())


def change_request_open(*, opener, user, reviewers=None, **arguments) -> ChangeRequest:
    """Open a change request with ``opener`` (``change_request_create`` or ``profile_promote``,
    given ``arguments``) asking ``reviewers`` (usernames) for their review, all or nothing;
    the reviewers are emailed once it is stored."""
    users = reviewers_clean(reviewers, author=user)
    with transaction.atomic():
        change_request = opener(user=user, **arguments)
        if users:
            change_request.reviewers.set(users)
            _reviewers_notify(change_request, users, actor=user)
    return change_request


def _reviewers_notify(change_request: ChangeRequest, users: list, *, actor) -> None:
    """Email the ``users`` not yet asked to review the request's current revision, and record
    that they were (on the request, locked by the caller): a reviewer removed and added again
    is not emailed again for the same revision."""
    notified = dict(change_request.reviewers_notified or {})
    revision = change_request.revision
    fresh = [user for user in users if notified.get(str(user.pk)) != revision]
    if not fresh:
        return
    notified.update({str(user.pk): revision for user in fresh})
    change_request.reviewers_notified = notified
    change_request.save(update_fields=["reviewers_notified"])
    review_requested_email(change_request, fresh, actor=actor)


def change_request_reviewers_set(*, pk: int, user, reviewers) -> ChangeRequest:
    """Replace the requested reviewers of an open request (its author only); the reviewers
    added are emailed, once per revision of the request. Not a new revision: who is asked is
    not what is proposed."""
    with transaction.atomic():
        change_request = _open_locked(pk)
        if change_request.author_id != getattr(user, "pk", None):
            raise NotAllowed("only the author can change the reviewers of a change request")
        users = reviewers_clean(reviewers, author=change_request.author)
        before = set(change_request.reviewers.values_list("pk", flat=True))
        change_request.reviewers.set(users)
        added = [reviewer for reviewer in users if reviewer.pk not in before]
        if added:
            _reviewers_notify(change_request, added, actor=user)
    return change_request


# --- the thread ------------------------------------------------------------------------------


def comment_body_clean(body, *, required: bool) -> str:
    """Return the body of a thread entry; raise at ``body`` when it is missing (``required``),
    not text, too long or breaks SPEC §2.2's text rule."""
    if body is None:
        body = ""
    if not isinstance(body, str):
        raise SafeChangeError("body: must be a string", path="body")
    if violates_text_rule(body):
        raise SafeChangeError(f"body: {TEXT_RULE_MESSAGE}", path="body")
    if len(body) > COMMENT_MAX_LENGTH:
        raise SafeChangeError(
            f"body: must be at most {COMMENT_MAX_LENGTH:,} characters", path="body"
        )
    if required and not body.strip():
        raise SafeChangeError("body: is required", path="body")
    return body.strip()


def change_request_comments_list(*, change_request: ChangeRequest):
    """Return the request's thread, oldest first, with each author."""
    return change_request.comments.select_related("author").order_by("created_at", "id")


def _open_locked(pk: int) -> ChangeRequest:
    change_request = change_request_get(pk=pk, lock=True)
    if change_request.status != ChangeRequest.Status.OPEN:
        raise NotOpen(change_request)
    return change_request


def _reviewer_required(user) -> None:
    if not user_can(user, WRITE_RULES):
        raise NotAllowed("reviewing change requests needs the WRITE_RULES permission")


def _entry_add(change_request: ChangeRequest, *, user, kind: str, body: str):
    if change_request.comments.count() >= MAX_COMMENTS:
        raise SafeChangeError(
            f"body: change request #{change_request.pk} has {MAX_COMMENTS:,} comments, the "
            "most one request holds; open a new request to go on",
            path="body",
        )
    comment = ChangeRequestComment.objects.create(
        change_request=change_request,
        author=user,
        kind=kind,
        body=body,
        revision=change_request.revision,
    )
    review_comment_email(change_request, comment)
    return comment


def change_request_comment(*, pk: int, user, body) -> ChangeRequestComment:
    """Add a comment to the request's thread (any status: a discussion may go on after it
    closes), on its current revision; its author is emailed."""
    body = comment_body_clean(body, required=True)
    _reviewer_required(user)
    with transaction.atomic():
        change_request = change_request_get(pk=pk, lock=True)
        return _entry_add(change_request, user=user, kind=Kind.COMMENT, body=body)


def change_request_approve_reviewed(*, pk: int, user, if_match, body="") -> ChangeRequest:
    """Approve the revision read (``change_request_approve``: ``if_match`` is its ETag) and
    record it in the thread, with an optional ``body``."""
    body = comment_body_clean(body, required=False)
    with transaction.atomic():
        change_request = change_request_approve(pk=pk, user=user, if_match=if_match)
        _entry_add(change_request, user=user, kind=Kind.APPROVED, body=body)
    return change_request


def _names_revision(if_match: str, change_request: ChangeRequest) -> bool:
    current = change_request_etag(change_request)
    candidates = [part.strip().removeprefix("W/") for part in if_match.split(",")]
    return "*" in candidates or current in candidates or current.strip('"') in candidates


def change_request_request_changes(*, pk: int, user, body, if_match=None) -> ChangeRequest:
    """Ask the author for changes (``body`` says which) on the current revision: until a new
    revision, apply is refused (CHANGES_REQUESTED); the reviewer's approval is withdrawn.

    With ``if_match`` (the ETag read), a request edited since answers ChangeRequestChanged.
    """
    body = comment_body_clean(body, required=True)
    _reviewer_required(user)
    with transaction.atomic():
        change_request = _open_locked(pk)
        if change_request.author_id == user.pk:
            raise NotAllowed(
                "the author of a change request cannot request changes on it: edit it instead"
            )
        if (
            if_match is not None
            and if_match.strip()
            and not _names_revision(if_match, change_request)
        ):
            raise ChangeRequestChanged(change_request)
        ChangeRequestApproval.objects.filter(change_request=change_request, user=user).delete()
        _entry_add(change_request, user=user, kind=Kind.CHANGES_REQUESTED, body=body)
    return change_request


# --- scheduled apply -------------------------------------------------------------------------


def apply_at_parse(value, *, path: str = "applyAt") -> datetime | None:
    """Return the moment an ISO 8601 text names (with its time zone), None for null; raise at
    ``path`` otherwise."""
    if value is None:
        return None
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str) and len(value) <= 64:
        try:
            moment = parse_datetime(value.strip())
        except ValueError:
            moment = None
        if moment is None:
            raise SafeChangeError(
                f"{path}: must be an ISO 8601 date and time (e.g. 2026-12-01T09:00:00Z)",
                path=path,
            )
    else:
        raise SafeChangeError(f"{path}: must be an ISO 8601 date and time or null", path=path)
    if timezone.is_naive(moment):
        raise SafeChangeError(
            f"{path}: give the time zone (e.g. 2026-12-01T09:00:00Z or +01:00)", path=path
        )
    return moment


def change_request_schedule_apply(*, pk: int, user, apply_at) -> ChangeRequest:
    """Schedule the open request to be applied at ``apply_at`` (in the future, within
    ``SCHEDULE_MAX_AHEAD``), or clear its schedule (None), by a user allowed to apply.

    Whether it may be applied is checked when it is due, not now: approvals may come later.
    """
    apply_at = apply_at_parse(apply_at)
    if not user_can(user, WRITE_RULES):
        raise NotAllowed("scheduling an apply needs the WRITE_RULES permission")
    now = timezone.now()
    if apply_at is not None and apply_at <= now:
        raise SafeChangeError("applyAt: must be in the future", path="applyAt")
    if apply_at is not None and apply_at > now + SCHEDULE_MAX_AHEAD:
        raise SafeChangeError(
            f"applyAt: must be within {SCHEDULE_MAX_AHEAD.days} days", path="applyAt"
        )
    with transaction.atomic():
        change_request = _open_locked(pk)
        change_request.apply_at = apply_at
        change_request.apply_scheduled_by = user if apply_at is not None else None
        change_request.save(update_fields=["apply_at", "apply_scheduled_by", "updated_at"])
        if apply_at is not None:
            # In the same transaction (the database backend stores the task beside the
            # request): a schedule that is rolled back leaves no task behind.
            _enqueue(change_request.pk, change_request.apply_at)
    return change_request


def _enqueue(pk: int, apply_at: datetime) -> None:
    scheduled = change_request_scheduled_apply
    if not scheduled.get_backend().supports_defer:
        # The immediate backend (tests, TASKS_BACKEND) cannot wait: it would apply now.
        logger.warning(
            "change request #%s: the task backend cannot run a task later; its scheduled "
            "apply needs a worker of the database backend",
            pk,
        )
        return
    scheduled.using(run_after=apply_at).enqueue(pk, apply_at.isoformat())


def change_request_edit(
    *, pk: int, user, if_match=None, reviewers=UNSET, apply_at=UNSET, **fields
) -> ChangeRequest:
    """Edit an open request in one transaction: its texts and changes
    (``change_request_update``, the author), its reviewers (the author) and its scheduled
    apply (anyone allowed to apply)."""
    with transaction.atomic():
        if fields or (reviewers is UNSET and apply_at is UNSET):
            change_request_update(pk=pk, user=user, if_match=if_match, **fields)
        if reviewers is not UNSET:
            change_request_reviewers_set(pk=pk, user=user, reviewers=reviewers)
        if apply_at is not UNSET:
            change_request_schedule_apply(pk=pk, user=user, apply_at=apply_at)
    return change_request_get(pk=pk)


@task
def change_request_scheduled_apply(change_request_id: int, apply_at: str) -> str:
    """The worker's task: apply the request if ``apply_at`` is still its scheduled moment."""
    return scheduled_apply_run(pk=change_request_id, apply_at=parse_datetime(apply_at))


def scheduled_apply_run(*, pk: int, apply_at: datetime) -> str:
    """Run a scheduled apply that was enqueued for ``apply_at``; return what happened:
    ``superseded`` (the schedule changed or ran already: nothing done), ``applied`` or
    ``not applied`` (the author and the scheduler are told why)."""
    with transaction.atomic():
        change_request = (
            ChangeRequest.objects.select_for_update(of=("self",))
            .select_related("author", "apply_scheduled_by")
            .filter(pk=pk)
            .first()
        )
        if change_request is None or change_request.apply_at != apply_at:
            return "superseded"
        # Consumed before anything else: whatever happens next, this schedule ran.
        ChangeRequest.objects.filter(pk=pk).update(apply_at=None)
        change_request.apply_at = None
        scheduler = change_request.apply_scheduled_by
        code = reason = None
        if change_request.status != ChangeRequest.Status.OPEN:
            code, reason = NotOpen.code, f"the request is {change_request.status}"
        elif scheduler is None or not user_can(scheduler, WRITE_RULES):
            code = NotAllowed.code
            reason = "whoever scheduled it may no longer apply change requests"
        else:
            try:
                with transaction.atomic():
                    change_request_apply(pk=pk, user=scheduler)
            except SafeChangeError as exc:
                code, reason = exc.code, exc.message
            except Exception as exc:  # the write path's refusals (EntryInvalid…), or a fault
                logger.exception("change request #%s: the scheduled apply failed", pk)
                code = getattr(exc, "code", None) or "INTERNAL_ERROR"
                reason = str(exc) or type(exc).__name__
        if reason is not None:
            scheduled_apply_failed(change_request, reason, code=code)
            return "not applied"
        change_request.refresh_from_db()
        scheduled_apply_ran_email(change_request, scheduler=scheduler)
    return "applied"


def scheduled_apply_failed(
    change_request: ChangeRequest, reason: str, *, code: str = "INTERNAL_ERROR"
) -> None:
    """A scheduled apply did not run (nothing was applied): say why in the thread, email the
    author and whoever scheduled it, and announce ``change_request.apply_failed`` (``code``:
    the refusal's error code, e.g. STALE_CHANGE_REQUEST). The reason names no item the set
    writes: the thread, the emails and the payload reach people who may not read material."""
    reason = change_set_text_without_items(change_request, reason)
    ChangeRequestComment.objects.create(
        change_request=change_request,
        author=None,
        kind=Kind.COMMENT,
        body=f"The scheduled apply did not run; nothing was applied: {reason}",
        revision=change_request.revision,
    )
    scheduled_apply_failed_email(
        change_request, scheduler=change_request.apply_scheduled_by, reason=reason
    )
    webhook_event_emit(
        "change_request.apply_failed",
        change_request_event(change_request, error={"code": code, "message": reason}),
    )

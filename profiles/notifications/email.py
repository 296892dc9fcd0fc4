"""Email to the people in a review: requested reviewers when a request is opened or they are
added; its author on each comment, verdict, on apply and when a scheduled apply does not run.

Plain text, one message per recipient (nobody sees another's address), with a link to the
request in the studio (``SITE_URL`` + its page: ``make run`` sets it to where it serves, for
the server and the worker that runs scheduled applies alike). The actor is never told of their
own act, and users without an email address (or inactive) are skipped.

A notification is a consequence of a write, never part of it: each is sent by
``transaction.on_commit`` once the write's transaction has committed (a refused or rolled back
write sends nothing), and a failure to build or send it is logged (logger
``profiles.notifications``), never raised: a mail server down never fails a review.
"""

import logging
from collections.abc import Iterable

from django.conf import settings
from django.core.mail import EmailMessage, mailers
from django.db import transaction
from django.urls import reverse

from profiles.models import ChangeRequest, ChangeRequestComment

logger = logging.getLogger("profiles.notifications")

# A comment is quoted in its email up to this many characters (the rest is on the page).
QUOTED_MAX = 2_000

_VERDICT_WORDS = {
    ChangeRequestComment.Kind.COMMENT: "commented on",
    ChangeRequestComment.Kind.APPROVED: "approved",
    ChangeRequestComment.Kind.CHANGES_REQUESTED: "requested changes on",
}


def change_request_url(change_request: ChangeRequest) -> str:
    """Return the absolute link of the request's studio page."""
    base = settings.SITE_URL.rstrip("/")
    return base + reverse("change-request", args=[change_request.pk])


def _name(user) -> str:
    return user.get_username() if user is not None else "Context Studio"


def _recipients(users: Iterable, *, actor) -> list:
    """Return the users to write to: each once, with an address, active, not the actor."""
    actor_id = getattr(actor, "pk", None)
    seen: set[int] = set()
    chosen = []
    for user in users:
        if user is None or user.pk in seen or user.pk == actor_id:
            continue
        seen.add(user.pk)
        if user.is_active and user.email:
            chosen.append(user)
    return chosen


def _quoted(text: str) -> str:
    if len(text) > QUOTED_MAX:
        text = text[:QUOTED_MAX] + " …"
    return "\n".join("> " + line for line in text.splitlines()) or ">"


def _send_after_commit(build) -> None:
    """Send the messages ``build()`` returns once the current transaction commits; log, never
    raise, whatever goes wrong."""

    def send():
        try:
            messages = build()
            if messages:
                with mailers.default as connection:
                    connection.send_messages(messages)
        except Exception:
            logger.exception("a review notification could not be sent")

    transaction.on_commit(send)


def _messages(users, subject: str, body: str) -> list[EmailMessage]:
    return [EmailMessage(subject=subject, body=body, to=[user.email]) for user in users]


def _subject(change_request: ChangeRequest, what: str) -> str:
    """Return the subject: one line whatever the stored title holds (a mailer refuses a
    subject with a line break, and a request titled before titles were one line may)."""
    title = " ".join(change_request.title.split())
    return f"[Context Studio] #{change_request.pk} {title}: {what}"


def _about(change_request: ChangeRequest) -> str:
    where = (
        f"profile {change_request.profile_key}" if change_request.profile_key else "a change set"
    )
    if change_request.environment:
        where += f" in {change_request.environment}"
    return (
        f"Change request #{change_request.pk} “{change_request.title}” ({where}, by "
        f"{_name(change_request.author)}, revision {change_request.revision})."
    )


def review_requested_email(change_request: ChangeRequest, reviewers: Iterable, *, actor) -> None:
    """Tell ``reviewers`` that their review of the request is asked for."""
    reviewers = list(reviewers)

    def build():
        users = _recipients(reviewers, actor=actor)
        body = (
            f"{_name(actor)} asks for your review.\n\n{_about(change_request)}\n\n"
            f"{change_request.description.strip()}\n\n"
            f"Review it (the changes and their impact on every saved scenario):\n"
            f"{change_request_url(change_request)}\n"
        )
        return _messages(users, _subject(change_request, "your review is requested"), body)

    _send_after_commit(build)


def review_comment_email(change_request: ChangeRequest, comment: ChangeRequestComment) -> None:
    """Tell the request's author of a comment or a verdict on it."""

    def build():
        users = _recipients([change_request.author], actor=comment.author)
        words = _VERDICT_WORDS.get(comment.kind, "commented on")
        body = f"{_name(comment.author)} {words} revision {comment.revision} of your request.\n\n"
        if comment.body:
            body += _quoted(comment.body) + "\n\n"
        body += f"{_about(change_request)}\n\n{change_request_url(change_request)}\n"
        return _messages(users, _subject(change_request, words.replace(" on", "")), body)

    _send_after_commit(build)


def change_request_applied_email(change_request: ChangeRequest, *, actor) -> None:
    """Tell the request's author that it was applied (unless they applied it)."""

    def build():
        users = _recipients([change_request.author], actor=actor)
        version = change_request.applied_version
        body = (
            f"{_name(actor)} applied your request"
            + (f": the profile is at version {version}" if version else "")
            + f".\n\n{_about(change_request)}\n\n{change_request_url(change_request)}\n"
        )
        return _messages(users, _subject(change_request, "applied"), body)

    _send_after_commit(build)


def scheduled_apply_ran_email(change_request: ChangeRequest, *, scheduler) -> None:
    """Tell whoever scheduled the apply that it ran (the author hears of the apply itself)."""

    def build():
        users = _recipients([scheduler], actor=None)
        body = (
            "The apply you scheduled ran: the request is applied"
            + (
                f" (version {change_request.applied_version})"
                if change_request.applied_version
                else ""
            )
            + f".\n\n{_about(change_request)}\n\n{change_request_url(change_request)}\n"
        )
        return _messages(users, _subject(change_request, "scheduled apply done"), body)

    _send_after_commit(build)


def scheduled_apply_failed_email(change_request: ChangeRequest, *, scheduler, reason: str) -> None:
    """Tell the author and whoever scheduled the apply that it did not run, and why."""

    def build():
        users = _recipients([change_request.author, scheduler], actor=None)
        body = (
            f"The scheduled apply did not run, and nothing was applied: {reason}\n\n"
            f"{_about(change_request)}\n\n"
            f"Fix it and apply (or schedule again) from the request's page:\n"
            f"{change_request_url(change_request)}\n"
        )
        return _messages(users, _subject(change_request, "scheduled apply did not run"), body)

    _send_after_commit(build)

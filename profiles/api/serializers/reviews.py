"""Shapes and examples of reviews (requested reviewers, the thread, verdicts, scheduled apply)
for the OpenAPI schema, and how a request's review fields and a thread entry are shown."""

from rest_framework import serializers

from profiles.api.serializers.entries import username
from profiles.api.serializers.examples import error_example, request_example, response_example
from profiles.models import ChangeRequest, ChangeRequestComment
from profiles.safechange.reviews import COMMENT_MAX_LENGTH, MAX_REVIEWERS, changes_requested_by

CREATED_AT = "2026-11-29T12:00:00Z"


def reviewers_field(**kwargs):
    return serializers.ListField(
        child=serializers.CharField(max_length=150),
        max_length=MAX_REVIEWERS,
        help_text="Usernames of the users whose review is requested: editors or staff, not "
        "the author; each is emailed.",
        **kwargs,
    )


def apply_at_field(**kwargs):
    return serializers.DateTimeField(
        allow_null=True,
        help_text="When the worker applies the request (ISO 8601 with a time zone, in the "
        "future), if it is still open, approved and not stale; null: not scheduled.",
        **kwargs,
    )


def review_record(change_request: ChangeRequest, *, detail: bool) -> dict:
    """Return the review fields of a request's API record (reviewers prefetched)."""
    record = {
        "reviewers": sorted(user.get_username() for user in change_request.reviewers.all()),
        "applyAt": change_request.apply_at,
        "applyScheduledBy": username(change_request.apply_scheduled_by)
        if change_request.apply_at is not None
        else None,
    }
    if detail:
        record["changesRequestedBy"] = changes_requested_by(change_request)
    return record


def comment_record(comment: ChangeRequestComment, *, revision: int) -> dict:
    """Return a thread entry as the API shows it; ``revision``: the request's current one."""
    return {
        "id": comment.pk,
        "author": username(comment.author),
        "kind": comment.kind,
        "body": comment.body,
        "revision": comment.revision,
        "outdated": comment.revision != revision,
        "createdAt": comment.created_at,
    }


class CommentSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    author = serializers.CharField(
        allow_null=True, help_text="null: written by Context Studio (a scheduled apply's note)."
    )
    kind = serializers.ChoiceField(list(ChangeRequestComment.Kind.values))
    body = serializers.CharField(allow_blank=True)
    revision = serializers.IntegerField(help_text="The request's revision it was written on.")
    outdated = serializers.BooleanField(
        help_text="The request has a newer revision than the one this entry is about."
    )
    createdAt = serializers.DateTimeField()


class CommentCreateSerializer(serializers.Serializer):
    body = serializers.CharField(max_length=COMMENT_MAX_LENGTH)


class RequestChangesSerializer(serializers.Serializer):
    body = serializers.CharField(
        max_length=COMMENT_MAX_LENGTH, help_text="What should change (required)."
    )


class ApproveSerializer(serializers.Serializer):
    body = serializers.CharField(
        max_length=COMMENT_MAX_LENGTH,
        required=False,
        allow_blank=True,
        help_text="An optional comment recorded with the approval.",
    )


COMMENT_CREATE_EXAMPLE = request_example(
    "Comment", {"body": "Does the third KB article fit in the budget of the mobile consumer?"}
)

COMMENT_EXAMPLE = response_example(
    "A request for changes",
    {
        "id": 31,
        "author": "lee",
        "kind": "changes-requested",
        "body": "Keep maxItems at 2 for the mobile consumer.",
        "revision": 1,
        "outdated": False,
        "createdAt": CREATED_AT,
    },
)

REQUEST_CHANGES_EXAMPLE = request_example(
    "Request changes", {"body": "Keep maxItems at 2 for the mobile consumer."}
)

CHANGES_REQUESTED_EXAMPLE = error_example(
    "Changes requested",
    409,
    "CHANGES_REQUESTED",
    "change request #12: lee requested changes on revision 1; edit the request (a new "
    "revision) and have it reviewed again",
    "reviews",
    changesRequestedBy=["lee"],
)

"""Reviews over the API: a change request's thread (comments and verdicts) and "request
changes". Approving, the reviewers and the scheduled apply are on the change request itself
(``profiles.api.safechange``: ``…/approve``, ``PATCH change-requests/<id>``).

Thin views: each reads its body, calls a service of ``profiles.safechange.reviews`` and answers.
"""

from functools import partial

from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from profiles.api.base import ApiViewSet, body_object, viewset_schema
from profiles.api.safechange import change_request_or_404, change_request_verdict
from profiles.api.serializers import reviews as s
from profiles.api.serializers.safechange import ChangeRequestSerializer
from profiles.api.versioning import ReadConfigWriteRules
from profiles.safechange.reviews import (
    change_request_comment,
    change_request_comments_list,
    change_request_request_changes,
)

CHANGE_REQUEST_ID = OpenApiParameter(
    "id", {"type": "integer", "minimum": 1}, OpenApiParameter.PATH, description="The request."
)
IF_MATCH_OPTIONAL = OpenApiParameter(
    "If-Match",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="The request's ETag as you read it: when it changed since, 412 and nothing "
    "is recorded.",
)


@viewset_schema(
    "change requests",
    operations="change_request_comments",
    record=s.CommentSerializer,
    parameters=[CHANGE_REQUEST_ID],
)
class ChangeRequestReviewViewSet(ApiViewSet):
    permission_classes = [ReadConfigWriteRules]
    # Each entry emails the request's author: writes are throttled at a person's pace (only
    # the writes it serves: a method it does not take answers 405, uncounted).
    throttle_scope = "comment"
    throttled_actions = ("create", "request_changes")

    @extend_schema(
        summary="The request's review thread, oldest first: comments and verdicts",
        description="Each entry names the revision of the request it was written on; "
        "`outdated` is true once the request has a newer one.",
    )
    def list(self, request, pk):
        change_request = change_request_or_404(pk)
        return self.page_of(
            change_request_comments_list(change_request=change_request),
            partial(s.comment_record, revision=change_request.revision),
        )

    @extend_schema(
        summary="Comment on the request (its current revision); its author is emailed",
        request=s.CommentCreateSerializer,
        examples=[s.COMMENT_CREATE_EXAMPLE, s.COMMENT_EXAMPLE],
    )
    def create(self, request, pk):
        body = body_object(request, ("body",))
        change_request = change_request_or_404(pk)
        comment = change_request_comment(pk=pk, user=request.user, body=body.get("body"))
        return Response(s.comment_record(comment, revision=change_request.revision), status=201)

    @extend_schema(
        operation_id="change_requests_request_changes",
        summary="Ask the author for changes: apply is refused until a new revision",
        description="Records a `changes-requested` entry on the current revision and withdraws "
        "your approval; while a reviewer's latest verdict on the current revision asks for "
        "changes, apply answers 409 `CHANGES_REQUESTED`. An edit or a rebase (a new revision) "
        "clears it. Not your own request (403).",
        parameters=[IF_MATCH_OPTIONAL],
        request=s.RequestChangesSerializer,
        responses={200: ChangeRequestSerializer},
        examples=[s.REQUEST_CHANGES_EXAMPLE],
    )
    def request_changes(self, request, pk):
        return change_request_verdict(request, pk, change_request_request_changes, comment=None)


urlpatterns = [
    path(
        "change-requests/<int:pk>/comments",
        ChangeRequestReviewViewSet.as_view({"get": "list", "post": "create"}),
        name="change-request-comments",
    ),
    path(
        "change-requests/<int:pk>/request-changes",
        ChangeRequestReviewViewSet.as_view({"post": "request_changes"}),
        name="change-request-request-changes",
    ),
]

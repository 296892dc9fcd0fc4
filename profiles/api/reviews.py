"""Reviews over the API: a change request's thread (comments and verdicts) and "request
changes". Approving, the reviewers and the scheduled apply are on the change request itself
(``profiles.api.safechange``: ``…/approve``, ``PATCH change-requests/<id>``).

Thin views: each reads its body, calls a service of ``profiles.safechange.reviews`` and answers.
"""

from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.viewsets import GenericViewSet

from profiles.api.exceptions import not_found
from profiles.api.safechange import _change_request_response
from profiles.api.schema import ApiAutoSchema
from profiles.api.serializers import reviews as s
from profiles.api.serializers.safechange import ChangeRequestSerializer
from profiles.api.throttling import ResolutionRateThrottle
from profiles.api.versioning import ReadConfigWriteRules, _body
from profiles.models import ChangeRequest
from profiles.safechange.reviews import (
    change_request_comment,
    change_request_comments_list,
    change_request_request_changes,
)
from profiles.safechange.selectors import change_request_get

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


@extend_schema(tags=["change requests"], parameters=[CHANGE_REQUEST_ID])
class ChangeRequestReviewViewSet(GenericViewSet):
    schema = ApiAutoSchema()
    permission_classes = [ReadConfigWriteRules]
    # Each entry emails the request's author: writes are throttled at a person's pace.
    throttle_scope = "comment"

    def get_throttles(self):
        # Only the writes it serves (a method it does not take answers 405, uncounted).
        return [ResolutionRateThrottle()] if self.action in ("create", "request_changes") else []

    def _get(self, pk: int) -> ChangeRequest:
        try:
            return change_request_get(pk=pk)
        except ChangeRequest.DoesNotExist:
            raise not_found(f"change request #{pk}") from None

    @extend_schema(
        operation_id="change_request_comments_list",
        summary="The request's review thread, oldest first: comments and verdicts",
        description="Each entry names the revision of the request it was written on; "
        "`outdated` is true once the request has a newer one.",
        responses={200: s.CommentSerializer(many=True)},
    )
    def list(self, request, pk):
        change_request = self._get(pk)
        page = self.paginate_queryset(change_request_comments_list(change_request=change_request))
        return self.get_paginated_response(
            [s.comment_record(comment, revision=change_request.revision) for comment in page]
        )

    @extend_schema(
        operation_id="change_request_comments_create",
        summary="Comment on the request (its current revision); its author is emailed",
        request=s.CommentCreateSerializer,
        responses={201: s.CommentSerializer},
        examples=[s.COMMENT_CREATE_EXAMPLE, s.COMMENT_EXAMPLE],
    )
    def create(self, request, pk):
        body = _body(request, ("body",))
        change_request = self._get(pk)
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
        body = _body(request, ("body",))
        self._get(pk)
        change_request_request_changes(
            pk=pk,
            user=request.user,
            body=body.get("body"),
            if_match=request.headers.get("If-Match"),
        )
        return _change_request_response(request, self._get(pk))


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

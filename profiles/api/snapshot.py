"""``GET /api/v1/snapshot``: what the caller's key may resolve, for local evaluation by the
Python client (``profiles.resolution.snapshot``; docs/client.md)."""

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiExample, extend_schema

from profiles.api.conditional import none_match_fails, not_modified
from profiles.api.exceptions import ApiError
from profiles.api.resolution import ResolutionView
from profiles.api.serializers.snapshot import SnapshotSerializer
from profiles.resolution.snapshot import SnapshotTooLarge, snapshot_current_etag, snapshot_get
from profiles.workspace.permissions import key_environments

SNAPSHOT_EXAMPLE = OpenApiExample(
    "A snapshot",
    response_only=True,
    value={
        "snapshot": 1,
        "engine": "ctxstudio/1+2ec2a2b58bdefed6",
        "version": "9f1c…",
        "served": {"tickets": 120000},
        "workspace": {
            "version": 1,
            "consumers": [{"key": "support-assistant", "render": {"format": "markdown"}}],
            "layers": [
                {
                    "key": "glossary",
                    "items": [{"path": "chargeback", "title": "Chargeback", "body": "…"}],
                },
                {"key": "tickets", "itemFilter": {"customer_id": "customer_id"}, "items": []},
            ],
            "profiles": [
                {
                    "key": "support-answer",
                    "consumer": "support-assistant",
                    "objective": "answer-ticket",
                    "budget": 2000,
                    "rules": {"glossary": {"mode": "inline"}},
                }
            ],
        },
    },
)


class SnapshotView(ResolutionView):  # scope resolve, throttled like resolve
    throttle_scope = "snapshot"

    @extend_schema(
        operation_id="snapshot",
        summary="What this key may resolve, for local evaluation (the Python client)",
        description=(
            "The profiles the key may resolve (a key limited to environments: those "
            "environments' profiles), their consumers and every layer: held layers with their "
            "items, served layers (`itemFilter`) without any. Poll with `If-None-Match`: "
            "`304` while unchanged. Larger than `SNAPSHOT_MAX_BYTES`: `413 SNAPSHOT_TOO_LARGE` "
            "(resolve through `/resolve`)."
        ),
        responses={200: SnapshotSerializer},
        examples=[SNAPSHOT_EXAMPLE],
        tags=["resolve"],
    )
    def get(self, request):
        environments = key_environments(request.auth)
        etag = snapshot_current_etag(environments)
        if none_match_fails(request, etag):
            return not_modified(etag)
        try:
            snapshot = snapshot_get(environments)
        except SnapshotTooLarge as exc:
            raise ApiError(413, "SNAPSHOT_TOO_LARGE", str(exc), "", limit=exc.limit) from None
        if none_match_fails(request, snapshot.etag):
            return not_modified(snapshot.etag)
        response = HttpResponse(snapshot.data, content_type="application/json")
        response["ETag"] = snapshot.etag
        return response

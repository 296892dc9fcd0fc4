"""The workspace document over the API: export (streamed), import (a background job: ``POST
/api/v1/workspace`` answers 202 with the job) and the job resource ``GET
/api/v1/workspace/imports/<id>`` (status, progress, result)."""

from django.http import Http404, StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.reverse import reverse

from profiles.api.base import ApiView, invalid, query_whole_number
from profiles.api.conditional import none_match_fails, not_modified, weak_etag
from profiles.api.exceptions import ApiError, error_body, not_found
from profiles.api.filters import query_boolean
from profiles.api.renderers import WORKSPACE_PARSERS, WorkspaceText, YAMLRenderer
from profiles.api.safechange import change_request_response
from profiles.api.serializers import import_export as s
from profiles.api.serializers import safechange as safechange_shapes
from profiles.api.serializers.entries import KEY_PATTERN
from profiles.api.serializers.examples import response_example
from profiles.api.throttling import ResolutionRateThrottle
from profiles.import_export.documents import WorkspaceImportError, workspace_export
from profiles.import_export.dry_run import (
    DRY_RUN_CHANGES_LISTED,
    workspace_import_preview,
    workspace_import_propose,
)
from profiles.import_export.export_stream import CONTENT_TYPES as EXPORT_CONTENT_TYPES
from profiles.import_export.export_stream import workspace_export_chunks
from profiles.import_export.imports import IMPORT_MODES
from profiles.import_export.job_status import import_job_document, import_job_get
from profiles.import_export.jobs import ImportQueueFull, import_job_start, import_layer_refusal
from profiles.models import ImportJob
from profiles.workspace.cache import content_version
from profiles.workspace.permissions import (
    ADMINISTER,
    IMPORT_EXPORT,
    READ_MATERIAL,
    WRITE_RULES,
    capability_permission,
    key_environments,
    request_can,
    require_key_environment,
    require_key_profile,
)
from profiles.workspace.selectors import layer_exists
from profiles.workspace.validation import issues_in_text

# The YAML export is the same document as the JSON one: a schema under a media type describes
# the value a client reads from the body, and a YAML reader reads the document's object (as
# a string schema, every response would violate it). The upload is declared as binary (UTF-8
# bytes): generators send it as the raw body, which keeps the file's lines, and so the line
# numbers of the import's errors.
YAML_UPLOAD = {
    "type": "string",
    "format": "binary",
    "description": "The workspace document (SPEC §2) as YAML text, UTF-8.",
}


def import_job_url(request, job: ImportJob) -> str:
    return reverse("api:import-job", args=[job.pk], request=request)


def queue_full_response(exc: ImportQueueFull) -> Response:
    """The 429 of a job refused for the user's unfinished jobs (an import or a bulk ingest)."""
    return Response(
        error_body(exc.code, str(exc), retryable=True),
        status=exc.status_code,
        headers={"Retry-After": str(exc.retry_after)},
    )


def job_response(job: ImportJob, document, *, url: str, status: int = 200) -> Response:
    """Answer with a background job (an import or a bulk ingest) as ``document`` shows it;
    a job just queued (202) is at its ``Location``."""
    headers = {"Location": url} if status == 202 else {}
    return Response(document(job, url=url), status=status, headers=headers)


def job_shown(request, job: ImportJob | None) -> bool:
    """Return whether the request sees the job: its own, or any when it administers (another
    user's job is not shown, nor said to exist)."""
    return job is not None and (job.user_id == request.user.pk or request_can(request, ADMINISTER))


def import_job_response(request, job: ImportJob, status: int = 200) -> Response:
    return job_response(job, import_job_document, url=import_job_url(request, job), status=status)


@extend_schema(tags=["workspace"])
class ImportJobView(ApiView):
    permission_classes = [capability_permission(IMPORT_EXPORT)]

    @extend_schema(
        operation_id="workspace_import_job",
        summary="Status, progress and result of a workspace import",
        responses={200: s.ImportJobSerializer},
    )
    def get(self, request, job_id):
        job = import_job_get(job_id=job_id)
        if not job_shown(request, job):
            raise Http404("no such import job")
        return import_job_response(request, job)


DRY_RUN_PARAMETERS = [
    OpenApiParameter(
        "dryRun",
        bool,
        description="true: answer 200 with what the import would change (entity changes with "
        "their field diffs, counts, the impact on every saved scenario of the profiles it may "
        "change) and write nothing.",
    ),
    OpenApiParameter(
        "propose",
        bool,
        description="true: open the import as one change set (201 with the change request); "
        "for a file that touches protected profiles, which a plain import refuses. Needs the "
        "right to propose changes.",
    ),
    OpenApiParameter(
        "offset",
        {"type": "integer", "minimum": 0, "maximum": 10**18 - 1},
        description=f"Dry run: the first entity change listed (at most "
        f"{DRY_RUN_CHANGES_LISTED} an answer; `moreChanges` counts the rest).",
    ),
    OpenApiParameter(
        "impactOffset",
        {"type": "integer", "minimum": 0, "maximum": 10**18 - 1},
        description="Dry run: the first scenario the impact resolves (one answer resolves at "
        "most IMPACT_MAX_RESOLUTIONS / 2; the others are `skipped`).",
    ),
    OpenApiParameter(
        "title",
        str,
        description="Proposal: the change request's title (default: what the set does).",
    ),
]


def key_impact_check(request, preview) -> None:
    """Refuse (403 ``FORBIDDEN``) a dry run whose impact resolves a profile outside the
    environments of the request's key: each affected profile as stored, and each profile
    the file changes as it was and as the file leaves it. Nothing to check for other callers."""
    if key_environments(request.auth) is None:
        return
    for change in preview.changes:
        if change.kind == "profile":
            for side in (change.before, change.after):
                if side is not None:
                    require_key_environment(request.auth, side.get("environment"), change.key)
    for profile in preview.affected:
        require_key_profile(request.auth, profile)


class WorkspaceView(ApiView):
    # An export shows every customer's material: it is READ_MATERIAL as well.
    permission_classes = [capability_permission(READ_MATERIAL, IMPORT_EXPORT, unsafe=IMPORT_EXPORT)]
    renderer_classes = [JSONRenderer, YAMLRenderer, BrowsableAPIRenderer]
    parser_classes = WORKSPACE_PARSERS
    # A dry run or a proposal resolves scenarios in the request: throttled like the impact.
    throttle_scope = "impact"

    def get_throttles(self):
        params = self.request.query_params
        if self.request.method == "POST" and (params.get("dryRun") or params.get("propose")):
            return [ResolutionRateThrottle()]
        return []

    @extend_schema(
        operation_id="workspace_export",
        summary="Export the workspace document (SPEC §2); YAML with ?format=yaml",
        parameters=[
            OpenApiParameter("format", str, enum=["json", "yaml"], description="Default: JSON."),
            OpenApiParameter(
                "layer",
                str,
                pattern=KEY_PATTERN,
                description="Export only this layer (imports with ?layer=).",
            ),
        ],
        responses={
            (200, "application/json"): s.WorkspaceSerializer,
            (200, "application/yaml"): s.WorkspaceSerializer,
        },
        tags=["workspace"],
    )
    def get(self, request):
        renderer_format = request.accepted_renderer.format
        if renderer_format not in ("json", "yaml"):
            return Response(workspace_export())  # the browsable API
        export_format = "yaml" if renderer_format == "yaml" else "json-compact"
        layer = request.query_params.get("layer")
        if layer is not None and not layer_exists(key=layer):
            raise not_found(f'layer "{layer}"', "layer")
        # Read before the export streams: the ETag is never newer than the answer.
        etag = weak_etag(content_version().encode(), export_format.encode(), (layer or "").encode())
        if none_match_fails(request, etag):
            return not_modified(etag)
        return StreamingHttpResponse(
            workspace_export_chunks(format=export_format, layer=layer),
            content_type=EXPORT_CONTENT_TYPES[export_format],
            headers={"ETag": etag},
        )

    @extend_schema(
        operation_id="workspace_import",
        summary="Import a workspace document (JSON or YAML) as a background job",
        description=(
            "Answers 202 with the import job (its `url` is also the `Location`); GET the job "
            "until its status is `succeeded` (with the summary) or `failed` (with every error "
            "and its path in the file). All or nothing: a failed import writes nothing. "
            "With `dryRun=true`: 200 with what it would change and the impact, writing "
            "nothing; with `propose=true`: 201 with the change set it opened (a file that "
            "touches protected profiles: a plain import of it is refused, its job failing "
            "with the error `CHANGE_REQUEST_REQUIRED` and the `profiles` affected, the body "
            "other writes answer with 409). Both read the file in the request (not a job) "
            "and are throttled like the impact."
        ),
        parameters=[
            OpenApiParameter(
                "mode",
                str,
                enum=list(IMPORT_MODES),
                description="merge (default) upserts; replace also deletes what is not given.",
            ),
            OpenApiParameter(
                "layer",
                str,
                pattern=KEY_PATTERN,
                description=(
                    "Import only this layer of the file (a workspace document, or one layer's "
                    "document); with replace, its items not in the file are deleted."
                ),
            ),
            *DRY_RUN_PARAMETERS,
        ],
        request={"application/json": s.WorkspaceSerializer, "application/yaml": YAML_UPLOAD},
        responses={
            202: s.ImportJobSerializer,
            200: s.ImportDryRunSerializer,
            201: safechange_shapes.ChangeRequestSerializer,
        },
        examples=[response_example("A dry run", s.DRY_RUN_EXAMPLE, 200)],
        tags=["workspace"],
    )
    def post(self, request):
        mode = request.query_params.get("mode", "merge")
        if mode not in IMPORT_MODES:
            raise invalid("mode", "must be one of " + ", ".join(IMPORT_MODES))
        layer = request.query_params.get("layer")
        refusal = import_layer_refusal(layer)
        if refusal is not None:
            raise invalid("layer", refusal)
        dry_run = query_boolean(request.query_params, "dryRun")
        propose = query_boolean(request.query_params, "propose")
        data = request.data
        if not isinstance(data, WorkspaceText):
            raise invalid("", "send the workspace document as JSON or YAML")
        if dry_run or propose:
            return self._preview(request, str(data), mode=mode, layer=layer, propose=propose)
        try:
            job = import_job_start(
                text=str(data), mode=mode, layer=layer, user=request.user, key=request.auth
            )
        except ImportQueueFull as exc:
            return queue_full_response(exc)
        return import_job_response(request, job, status=202)

    def _preview(self, request, text: str, *, mode: str, layer, propose: bool) -> Response:
        """Answer a dry run (200, nothing written) or a proposal (201, the change set)."""
        if layer:
            raise invalid("layer", "a dry run or proposal takes the whole file: leave layer out")
        if propose and not request_can(request, WRITE_RULES):
            raise ApiError(
                403, "PERMISSION_DENIED", "proposing a change request needs the editors' rights"
            )
        offset = query_whole_number(request, "offset")
        impact_offset = query_whole_number(request, "impactOffset")
        try:
            if propose:
                change_request = workspace_import_propose(
                    text=text,
                    mode=mode,
                    user=request.user,
                    title=request.query_params.get("title") or None,
                )
                return change_request_response(request, change_request, 201)
            preview = workspace_import_preview(text=text, mode=mode, impact_offset=impact_offset)
        except WorkspaceImportError as exc:
            raise WorkspaceImportError(issues_in_text(exc.issues, text=text)) from None
        key_impact_check(request, preview)
        return Response(preview.as_dict(offset=offset))

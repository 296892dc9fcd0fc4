"""The API's views beside the CRUD viewsets: resolve, preview, expand, the workspace, tokens.

Resolve, preview and expand pass the request to the engine unchanged (SPEC §3 validation,
SPEC §7 answer); the workspace import and export call the workspace services.
"""

import time

from django.http import QueryDict, StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from profiles import selectors
from profiles.api import serializers as s
from profiles.api.exceptions import ApiError, ref_not_available
from profiles.api.imports import ImportJobSerializer, import_job_response
from profiles.api.renderers import (
    WORKSPACE_PARSERS,
    ResolutionJSONRenderer,
    WorkspaceText,
    YAMLRenderer,
)
from profiles.api.schema import (
    ERROR_EXAMPLES,
    EXPAND_EXAMPLES,
    PREVIEW_EXAMPLES,
    RESOLUTION_EXAMPLE,
    RESOLVE_REQUEST_EXAMPLES,
    ApiAutoSchema,
)
from profiles.api.throttling import ResolutionRateThrottle
from profiles.decision_log import decision_log_record
from profiles.exports import CONTENT_TYPES as EXPORT_CONTENT_TYPES
from profiles.exports import workspace_export_chunks
from profiles.imports import import_job_start, import_layer_refusal
from profiles.models import DecisionLog, Layer, Scenario
from profiles.permissions import (
    IMPORT_EXPORT,
    READ_MATERIAL,
    RESOLVE,
    DefaultApiPermission,
    capability_permission,
)
from profiles.services import (
    IMPORT_MODES,
    RefNotAvailable,
    profile_resolve,
    ref_expand,
    workspace_export,
)
from profiles.versions import PROFILE_VERSION_HEADER, workspace_resolve_versioned
from resolver.limits import TEXT_RULE_MESSAGE, violates_text_rule

# --- helpers ------------------------------------------------------------------------------


def invalid(path: str, message: str) -> ApiError:
    return ApiError(400, "INVALID_REQUEST", f"{path}: {message}" if path else message, path)


def not_found(what: str, path: str = "") -> ApiError:
    return ApiError(404, "NOT_FOUND", f"{what} not found", path)


def body_object(request, allowed: tuple[str, ...] | None = None) -> dict:
    """Return the request body as a dict; reject a non-object body and unknown fields."""
    data = request.data
    if isinstance(data, QueryDict):  # a form post from the browsable API
        data = data.dict()
    if not isinstance(data, dict):
        raise invalid("", "the request body must be a JSON object")
    data = dict(data)
    if allowed is not None:
        for key in data:
            if key not in allowed:
                raise invalid(str(key), "unknown field")
    return data


class ApiView(APIView):
    schema = ApiAutoSchema()
    permission_classes = [DefaultApiPermission]


# --- resolve, preview, expand -------------------------------------------------------------

SELECTION = ("profile", "consumer", "objective", "environment")


class ResolutionView(ApiView):
    permission_classes = [capability_permission(RESOLVE)]
    throttle_classes = [ResolutionRateThrottle]


class ResolveView(ResolutionView):
    throttle_scope = "resolve"
    renderer_classes = [ResolutionJSONRenderer, BrowsableAPIRenderer]

    @extend_schema(
        operation_id="resolve",
        summary="Resolve a request (SPEC §3) and return the resolution (SPEC §7)",
        description=(
            "The answer is byte-for-byte what `python -m resolver resolve` prints for the same "
            "workspace and request. `scenario` fills the request from a saved scenario."
        ),
        request=s.ResolveRequestSerializer,
        responses={200: s.ResolutionSerializer},
        examples=[*RESOLVE_REQUEST_EXAMPLES, RESOLUTION_EXAMPLE, *ERROR_EXAMPLES],
        tags=["resolve"],
    )
    def post(self, request):
        started = time.perf_counter()
        body = body_object(request)
        if "scenario" in body:
            body = request_from_scenario(body, body.pop("scenario"))
        resolution, version = workspace_resolve_versioned(request=body, encoded=True)
        decision_log_record(
            request_data=body,
            resolution=resolution.head,
            source=DecisionLog.Source.API,
            started=started,
            user=request.user,
            auth=authentication_kind(request),
            profile_version=version,
        )
        response = Response(resolution)
        if version is not None:
            response[PROFILE_VERSION_HEADER] = str(version)
        return response


def authentication_kind(request) -> str:
    """Return how the caller authenticated: ``token`` or ``session``."""
    authenticator = getattr(request, "successful_authenticator", None)
    if authenticator is None:
        return ""
    return "token" if "Token" in type(authenticator).__name__ else "session"


def request_from_scenario(body: dict, name) -> dict:
    """Fill what the body does not give (selection, input, now, format, availability)."""
    if not isinstance(name, str) or not name:
        raise invalid("scenario", "must be a scenario name")
    if violates_text_rule(name):
        raise invalid("scenario", TEXT_RULE_MESSAGE)
    try:
        scenario = selectors.scenario_get(name=name)
    except Scenario.DoesNotExist:
        raise ApiError(404, "NOT_FOUND", f'scenario: no scenario "{name}"', "scenario") from None
    saved = scenario.as_request()
    request = dict(body)
    if not any(key in body for key in SELECTION):
        request["profile"] = saved["profile"]
    for key in ("input", "now", "format", "availability"):
        if key not in body and key in saved:
            request[key] = saved[key]
    return request


# The SPEC §3 request fields a preview passes on (the profile is the URL's).
PREVIEW_REQUEST_FIELDS = ("input", "now", "format", "availability", "detail")


class PreviewView(ResolutionView):
    throttle_scope = "preview"
    renderer_classes = [ResolutionJSONRenderer, BrowsableAPIRenderer]

    @extend_schema(
        operation_id="profile_preview",
        summary="Resolve a profile with unsaved rule edits (writes nothing)",
        request=s.PreviewRequestSerializer,
        responses={200: s.ResolutionSerializer},
        examples=[*PREVIEW_EXAMPLES, RESOLUTION_EXAMPLE],
        tags=["resolve"],
    )
    def post(self, request, key):
        started = time.perf_counter()
        body = body_object(request, ("rules", "budget", *PREVIEW_REQUEST_FIELDS))
        resolution = profile_resolve(
            profile=key,
            request={name: body[name] for name in PREVIEW_REQUEST_FIELDS if name in body},
            rule_overrides=body.get("rules"),
            budget_override=body.get("budget"),
            encoded=True,
        )
        decision_log_record(
            request_data=body,
            resolution=resolution.head,
            source=DecisionLog.Source.PREVIEW,
            started=started,
            user=request.user,
            auth=authentication_kind(request),
        )
        return Response(resolution)


class ExpandView(ResolutionView):
    throttle_scope = "expand"

    @extend_schema(
        operation_id="expand",
        summary="Return one item that the resolution of the same request offers",
        description=(
            "The item is returned only when its ref belongs to a selected layer's candidates "
            "for this request (inline, a reference of any reason, or trimmed). Anything else "
            "answers the same 404 `REF_NOT_AVAILABLE`, whether or not the item exists."
        ),
        request=s.ExpandRequestSerializer,
        responses={200: s.ExpandedItemSerializer},
        examples=EXPAND_EXAMPLES,
        tags=["resolve"],
    )
    def post(self, request):
        body = body_object(request)
        ref = body.pop("ref", None)
        if not isinstance(ref, str) or not ref:
            raise invalid("ref", "must be a reference <layer>/<item path>")
        try:
            return Response(ref_expand(request=body, ref=ref))
        except RefNotAvailable:
            raise ref_not_available() from None


# --- workspace ----------------------------------------------------------------------------


class WorkspaceView(ApiView):
    # An export shows every customer's material: it is READ_MATERIAL as well.
    permission_classes = [capability_permission(READ_MATERIAL, IMPORT_EXPORT, unsafe=IMPORT_EXPORT)]
    renderer_classes = [JSONRenderer, YAMLRenderer, BrowsableAPIRenderer]
    parser_classes = WORKSPACE_PARSERS

    @extend_schema(
        operation_id="workspace_export",
        summary="Export the workspace document (SPEC §2); YAML with ?format=yaml",
        parameters=[
            OpenApiParameter("format", str, enum=["json", "yaml"], description="Default: JSON."),
            OpenApiParameter(
                "layer",
                str,
                pattern=s.KEY_PATTERN,
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
        if layer is not None and not Layer.objects.filter(key=layer).exists():
            raise not_found(f'layer "{layer}"', "layer")
        return StreamingHttpResponse(
            workspace_export_chunks(format=export_format, layer=layer),
            content_type=EXPORT_CONTENT_TYPES[export_format],
        )

    @extend_schema(
        operation_id="workspace_import",
        summary="Import a workspace document (JSON or YAML) as a background job",
        description=(
            "Answers 202 with the import job (its `url` is also the `Location`); GET the job "
            "until its status is `succeeded` (with the summary) or `failed` (with every error "
            "and its path in the file). All or nothing: a failed import writes nothing."
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
                pattern=s.KEY_PATTERN,
                description=(
                    "Import only this layer of the file (a workspace document, or one layer's "
                    "document); with replace, its items not in the file are deleted."
                ),
            ),
        ],
        request={
            "application/json": s.WorkspaceSerializer,
            "application/yaml": s.WorkspaceSerializer,
        },
        responses={202: ImportJobSerializer},
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
        data = request.data
        if not isinstance(data, WorkspaceText):
            raise invalid("", "send the workspace document as JSON or YAML")
        job = import_job_start(text=str(data), mode=mode, layer=layer, user=request.user)
        return import_job_response(request, job, status=202)


# --- token --------------------------------------------------------------------------------


class TokenView(ObtainAuthToken):
    """Exchange a username and password for the user's API token."""

    schema = ApiAutoSchema()

    @extend_schema(
        operation_id="auth_token",
        summary="Get your API token (send it as `Authorization: Token <key>`)",
        request=s.TokenRequestSerializer,
        responses={200: s.TokenSerializer},
        tags=["auth"],
        auth=[],
    )
    def post(self, request, *args, **kwargs):
        return super().post(request, *args, **kwargs)

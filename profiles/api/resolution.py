"""Resolve, preview and expand: the engine's answers for applications. They pass the request to the
engine unchanged (SPEC §3 validation, SPEC §7 answers)."""

import time

from drf_spectacular.utils import extend_schema
from rest_framework.renderers import BrowsableAPIRenderer
from rest_framework.response import Response

from profiles.api.base import ApiView, body_object, invalid
from profiles.api.conditional import none_match_fails, not_modified, resolution_etag, weak_etag
from profiles.api.examples import (
    ERROR_EXAMPLES,
    EXPAND_EXAMPLES,
    PREVIEW_EXAMPLES,
    RESOLUTION_EXAMPLE,
    RESOLVE_REQUEST_EXAMPLES,
)
from profiles.api.exceptions import ApiError, ref_not_available
from profiles.api.renderers import ResolutionJSONRenderer
from profiles.api.serializers import resolution as s
from profiles.api.throttling import ResolutionRateThrottle
from profiles.models import DecisionLog, Scenario
from profiles.resolution.decision_log import decision_log_record
from profiles.resolution.degraded import (
    degraded_profile_environment,
    degraded_resolve_versioned,
)
from profiles.resolution.services import (
    PROFILE_VERSION_HEADER,
    RefNotAvailable,
    profile_resolve,
    ref_expand,
    request_profile_environment,
    workspace_resolve_versioned,
)
from profiles.workspace import selectors
from profiles.workspace.metrics import resolution_counted
from profiles.workspace.permissions import (
    RESOLVE,
    capability_permission,
    key_environments,
    require_key_environment,
)
from resolver.limits import TEXT_RULE_MESSAGE, violates_text_rule
from resolver.report import json_text

SELECTION = ("profile", "consumer", "objective", "environment")


@extend_schema(tags=["resolve"])
class ResolutionView(ApiView):
    permission_classes = [capability_permission(RESOLVE)]
    throttle_classes = [ResolutionRateThrottle]


# A view that answers with a resolution (SPEC §7), the engine's bytes.
@extend_schema(responses={200: s.ResolutionSerializer})
class ResolutionAnswerView(ResolutionView):
    renderer_classes = [ResolutionJSONRenderer, BrowsableAPIRenderer]


class ResolveView(ResolutionAnswerView):
    throttle_scope = "resolve"

    @extend_schema(
        operation_id="resolve",
        summary="Resolve a request (SPEC §3) and return the resolution (SPEC §7)",
        description=(
            "The answer is byte-for-byte what `python -m resolver resolve` prints for the same "
            "workspace and request. `scenario` fills the request from a saved scenario."
        ),
        request=s.ResolveSerializer,
        examples=[*RESOLVE_REQUEST_EXAMPLES, RESOLUTION_EXAMPLE, *ERROR_EXAMPLES],
    )
    def post(self, request):
        started = time.perf_counter()
        return resolve_answer(request, body_object(request), started=started)


def resolve_answer(request, body: dict, *, started: float, held=None) -> Response:
    """Answer a resolve of an authenticated, admitted request (DRF's or the lean door's: it
    has ``user``, ``auth`` and ``headers``) whose body is ``body``: the resolution with its
    ``ETag`` and ``X-Profile-Version``, or 304; the decision log records it.

    ``held``: a database outage's answer, from the compiled workspace this worker holds
    (``profiles.resolution.degraded``): served layers the request would read unavailable,
    not logged."""
    if "scenario" in body:
        body = request_from_scenario(body, body.pop("scenario"))
    if held is not None:
        key_environment_check(request, body, held=held)
        resolution, version = degraded_resolve_versioned(held, body)
    else:
        key_environment_check(request, body)
        resolution, version = workspace_resolve_versioned(request=body, encoded=True)
        decision_logged(
            request, body, resolution, DecisionLog.Source.API, started, profile_version=version
        )
    resolution_counted(resolution.head, degraded=held is not None)
    headers = {"ETag": resolution_etag(resolution)}
    if version is not None:
        headers[PROFILE_VERSION_HEADER] = str(version)
    if none_match_fails(request, headers["ETag"]):
        return not_modified(headers["ETag"], headers)
    return Response(resolution, headers=headers)


def key_environment_check(request, body: dict, *, held=None) -> None:
    """Refuse (403 ``FORBIDDEN``), before anything is resolved, a request of a key limited to
    environments for a profile outside them. Nothing to check for other callers. ``held``:
    the snapshot to read the profile from (a database outage's), else the current one."""
    if key_environments(request.auth) is None:
        return
    if held is not None:
        profile, environment = degraded_profile_environment(held, body)
    else:
        profile, environment = request_profile_environment(request=body)
    require_key_environment(request.auth, environment, profile)


def decision_logged(request, body: dict, resolution, source: str, started: float, **more) -> None:
    """Record the decision log's row of a resolution the request asked for (``more``: its
    profile version, where known)."""
    decision_log_record(
        request_data=body,
        resolution=resolution.head,
        source=source,
        started=started,
        user=request.user,
        auth=authentication_kind(request),
        **more,
    )


def authentication_kind(request) -> str:
    """Return how the caller authenticated: ``token`` or ``session`` (the lean door's
    requests carry ``authentication_kind`` themselves: always a key)."""
    kind = getattr(request, "authentication_kind", None)
    if kind is not None:
        return kind
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


class PreviewView(ResolutionAnswerView):
    throttle_scope = "preview"

    @extend_schema(
        operation_id="profile_preview",
        summary="Resolve a profile with unsaved rule edits (writes nothing)",
        request=s.PreviewSerializer,
        examples=[*PREVIEW_EXAMPLES, RESOLUTION_EXAMPLE],
    )
    def post(self, request, key):
        started = time.perf_counter()
        body = body_object(request, ("rules", "budget", *PREVIEW_REQUEST_FIELDS))
        fields = {name: body[name] for name in PREVIEW_REQUEST_FIELDS if name in body}
        key_environment_check(request, {**fields, "profile": key})
        resolution = profile_resolve(
            profile=key,
            request=fields,
            rule_overrides=body.get("rules"),
            budget_override=body.get("budget"),
            encoded=True,
        )
        decision_logged(request, body, resolution, DecisionLog.Source.PREVIEW, started)
        return Response(resolution)


class ExpandView(ResolutionView):
    throttle_scope = "expand"

    @extend_schema(
        operation_id="expand",
        summary="Return one item that the resolution of the same request offers",
        description=(
            "The item is returned only when its ref belongs to a selected layer's candidates "
            "for this request (inline, a reference of any reason, or trimmed). Anything else "
            "answers the same 404 `REF_NOT_AVAILABLE`, whether or not the item exists. "
            "The body is resolve's (`scenario` included) plus `ref`."
        ),
        request=s.ExpandSerializer,
        responses={200: s.ExpandedItemSerializer},
        examples=EXPAND_EXAMPLES,
    )
    def post(self, request):
        return expand_answer(request, body_object(request))


def expand_answer(request, body: dict) -> Response:
    """Answer an expand of an authenticated, admitted request (DRF's or the lean door's): the
    item with its ``ETag``, or 304, or the one 404 of any ref the request does not offer."""
    if "scenario" in body:
        body = request_from_scenario(body, body.pop("scenario"))
    ref = body.pop("ref", None)
    if not isinstance(ref, str) or not ref:
        raise invalid("ref", "must be a reference <layer>/<item path>")
    key_environment_check(request, body)
    try:
        item = ref_expand(request=body, ref=ref)
    except RefNotAvailable:
        raise ref_not_available() from None
    etag = weak_etag(json_text(item).encode())
    if none_match_fails(request, etag):
        return not_modified(etag)
    return Response(item, headers={"ETag": etag})

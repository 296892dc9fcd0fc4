"""The lean door of applications (issue 35): ``POST /api/v1/resolve`` and ``POST
/api/v1/expand`` signed with a key, answered without DRF's dispatch.

Applications call resolve on every LLM request they make, so this path is kept to what its
answer needs: the key (``keys.key_authenticate``: from this process's memory), the
capability (``capability_permission``, the DRF view's class), the throttle (one shared-cache
round trip, ``user_throttle_wait`` on the counters DRF's throttle counts on), the body
(``JSONParser`` and ``body_fields``), then ``resolve_answer`` / ``expand_answer``, the very
functions the DRF views call. Errors go through ``api_exception_handler`` and every answer
through the views' renderers, with the headers DRF's dispatch adds (``Allow``, ``Vary``):
a client cannot tell the doors apart, and ``tests/profiles/resolution/test_lean_differential``
replays the recorded contract to check it. The DRF views stay (for the browsable API, session
callers and the schema); ``takes`` says which requests come here, ``ctxstudio.lean_door``
routes them.

When the database cannot be reached, a resolve answers from the compiled workspace this
worker holds (``profiles.resolution.degraded``) with ``X-Context-Degraded``; with
``DEGRADED_ANSWERS`` off, or for an expand, the error goes on to the project's 503.
"""

import io
import re
import time

from django.utils.cache import patch_vary_headers
from rest_framework import exceptions
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from profiles.api.authentication import TokenAuthentication
from profiles.api.base import body_fields
from profiles.api.exceptions import api_exception_handler
from profiles.api.parsers import JSONParser
from profiles.api.renderers import ResolutionJSONRenderer
from profiles.api.resolution import ResolutionView, expand_answer, resolve_answer
from profiles.resolution.degraded import (
    DEGRADED_HEADER,
    DEGRADED_VALUE,
    database_unreachable,
    degraded_enabled,
    held_workspace,
)
from profiles.workspace.keys import KeyRefused, key_authenticate
from profiles.workspace.throttling import user_throttle_wait

RESOLVE_PATH = "/api/v1/resolve"
EXPAND_PATH = "/api/v1/expand"

# ``Authorization: Token <key>`` or ``Bearer <key>``, written as DRF reads it without a
# doubt; anything else (no key, another scheme, a key with spaces…) goes to DRF, which
# answers it as it always did.
_AUTHORIZATION = re.compile(r"(Token|Bearer) ([!-~]+)")
# Accept headers for which DRF's negotiation picks the first (JSON) renderer with no
# parameter (``indent``): none, or media ranges among these.
_JSON_RANGES = frozenset({"*/*", "application/*", "application/json"})
# What DRF's dispatch adds to every answer of these views (``APIView.default_response_headers``).
_ALLOW = "POST, OPTIONS"


def takes(request) -> bool:
    """Return whether the lean door answers this request: a POST to resolve or expand, with
    no query string, a JSON body, a key in ``Authorization`` and an Accept header DRF would
    answer with JSON (or none)."""
    if request.method != "POST" or request.path_info not in (RESOLVE_PATH, EXPAND_PATH):
        return False
    meta = request.META
    if meta.get("QUERY_STRING"):
        return False
    if meta.get("CONTENT_TYPE", "").split(";", 1)[0].strip() != "application/json":
        return False
    if _AUTHORIZATION.fullmatch(meta.get("HTTP_AUTHORIZATION", "")) is None:
        return False
    accept = meta.get("HTTP_ACCEPT")
    return accept is None or all(part.strip() in _JSON_RANGES for part in accept.split(","))


def answer(request):
    """Answer a request ``takes`` took; raise what the project answers itself (a database that
    cannot be reached, without a degraded answer: 503)."""
    resolve = request.path_info == RESOLVE_PATH
    renderer = ResolutionJSONRenderer() if resolve else JSONRenderer()
    started = time.perf_counter()
    try:
        response = _answer(request, resolve, started)
    except Exception as exc:
        if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
            exc.auth_header = TokenAuthentication.keyword  # as APIView.handle_exception does
        response = api_exception_handler(exc, {"request": request})
        if response is None:
            raise
        response.exception = True
    return _finalized(response, renderer)


def _answer(request, resolve: bool, started: float) -> Response:
    key = _AUTHORIZATION.fullmatch(request.META["HTTP_AUTHORIZATION"]).group(2)
    try:
        record = key_authenticate(key)
    except KeyRefused as refused:
        raise exceptions.AuthenticationFailed(refused.message) from None
    request.user, request.auth, request.authentication_kind = record.owner, record, "token"
    permission = ResolutionView.permission_classes[0]()
    if not permission.has_permission(request, None):
        raise exceptions.PermissionDenied(getattr(permission, "message", None))
    wait = user_throttle_wait(scope="resolve" if resolve else "expand", user=record.owner)
    if wait is not None:
        raise exceptions.Throttled(wait=wait)
    body = _body(request)
    if not resolve:
        return expand_answer(request, body)
    try:
        return resolve_answer(request, dict(body), started=started)
    except Exception as exc:
        held = held_workspace() if degraded_enabled() and database_unreachable(exc) else None
        if held is None:
            raise
    response = resolve_answer(request, body, started=started, held=held)
    response[DEGRADED_HEADER] = DEGRADED_VALUE
    return response


def _body(request) -> dict:
    """The body as DRF's ``request.data`` reads it: none is ``{}``, else our JSON parser's."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length == 0:
        return body_fields({})
    parser = JSONParser()
    return body_fields(parser.parse(io.BytesIO(request.body)))


def _finalized(response: Response, renderer):
    """Render the answer as DRF's dispatch would (``APIView.finalize_response``)."""
    response.accepted_renderer = renderer
    response.accepted_media_type = renderer.media_type
    response.renderer_context = {}
    response["Allow"] = _ALLOW
    patch_vary_headers(response, ["Accept"])
    return response.render()

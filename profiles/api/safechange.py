"""Safe change over the API: profile versions, diff and restore; the impact of a draft;
environments and their protection; change requests and promotion.

Thin views: each reads its body, calls a service of ``profiles.safechange`` (versions, change
requests, environments) and answers. The services raise ``SafeChangeError``s, which the API's
exception handler answers in the one error shape.
"""

from django.core.exceptions import ValidationError
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.viewsets import GenericViewSet

from profiles.api.exceptions import ApiError, not_found
from profiles.api.filters import query_boolean
from profiles.api.schema import ApiAutoSchema
from profiles.api.serializers import reviews as review_shapes
from profiles.api.serializers import safechange as s
from profiles.api.serializers.entries import NoBodySerializer
from profiles.api.serializers.reviews import review_record
from profiles.api.serializers.text_diff import DIFF_TEXT_EXAMPLE
from profiles.api.text_diff import SCENARIO_PARAMETER, version_text_record
from profiles.api.throttling import ResolutionRateThrottle
from profiles.models import ChangeRequest, Profile, ProfileVersion
from profiles.safechange.change_requests import (
    ChangeRequestStanding,
    change_request_apply,
    change_request_close,
    change_request_create,
    change_request_diff,
    change_request_etag,
    change_request_get,
    change_request_list,
    change_request_rebase,
    change_request_reject,
    draft_impact,
    profile_promote,
)
from profiles.safechange.change_sets import (
    change_request_counts,
    change_set_create,
    change_set_shown,
    change_set_stale,
)
from profiles.safechange.impact import IMPACT_SCOPE, impact_max_scenarios, impact_summary
from profiles.safechange.restore import VersionNotRestorable, version_restore
from profiles.safechange.reviews import (
    UNSET,
    change_request_approve_reviewed,
    change_request_edit,
    change_request_open,
)
from profiles.safechange.selectors import (
    change_request_record_get,
    profile_history_exists,
    version_documents_get,
)
from profiles.versioning.environments import environment_get, environment_list, environment_update
from profiles.versioning.versions import (
    document_changes,
    latest_versions_get,
    profile_version_number,
    version_get,
    version_list,
)
from profiles.workspace.concurrency import profile_etag
from profiles.workspace.origin import API as API_ORIGIN
from profiles.workspace.parameters import positive_integer, whole_number
from profiles.workspace.permissions import (
    ADMINISTER,
    READ_CONFIG,
    READ_MATERIAL,
    RESOLVE,
    WRITE_RULES,
    capability_permission,
    key_impact_shown,
    request_can,
    require_key_profile,
)
from profiles.workspace.selectors import profile_get
from profiles.workspace.validation import MAX_STORED_INTEGER

# Actions take no fields: send {} or nothing.
NO_BODY = NoBodySerializer

# A version number in a query (?from=, ?to=): digits from 1.
VERSION_NUMBER = {"type": "integer", "minimum": 1, "maximum": MAX_STORED_INTEGER}

IF_MATCH_APPROVE = OpenApiParameter(
    "If-Match",
    str,
    OpenApiParameter.HEADER,
    required=True,
    description='The change request\'s ETag as you read it (e.g. `"cr12.1"`).',
)

# --- permissions ---------------------------------------------------------------------------

# Reading versions, environments and change requests is reading configuration; proposing,
# reviewing, applying and restoring change rules (WRITE_RULES); protecting an environment is
# administration. Approving also needs not being the author (the service checks).
ReadConfigWriteRules = capability_permission(READ_CONFIG, unsafe=WRITE_RULES)
ReadConfigAdminister = capability_permission(READ_CONFIG, unsafe=ADMINISTER)
# A dry run resolves like the preview and reads the change request (a resolve-only key may not).
Resolves = capability_permission(RESOLVE, READ_CONFIG)


# --- helpers -------------------------------------------------------------------------------


def _body(request, allowed: tuple[str, ...]) -> dict:
    data = request.data
    if not isinstance(data, dict):
        raise ApiError(400, "INVALID_REQUEST", "the request body must be a JSON object")
    for name in data:
        if name not in allowed:
            raise ApiError(400, "INVALID_REQUEST", f"{name}: unknown field", str(name))
    return dict(data)


def _username(user) -> str | None:
    return None if user is None else user.get_username()


def version_record(version: ProfileVersion, *, with_document: bool = False) -> dict:
    """Return a version as the API shows it (with ``profile``, its document, on detail)."""
    record = {
        "number": version.number,
        "author": _username(version.author),
        "createdAt": version.created_at,
        "message": version.message,
        "source": version.source,
        "changeRequest": version.change_request_id,
        "approvers": list(version.approvers),
        "restoredFrom": version.restored_from,
        "deleted": version.document is None,
        "protectionBypassed": version.protection_bypassed,
    }
    if with_document:
        record["profile"] = version.document
    return record


def _history_or_404(key: str) -> None:
    """Raise 404 unless the key names a profile or a deleted profile's versions."""
    if not profile_history_exists(profile_key=key):
        raise not_found(f'profile "{key}"')


def _offset(request) -> int:
    """Return the impact's ``offset`` (the first scenario to resolve), 0 when not given."""
    text = request.query_params.get("offset")
    if text in (None, ""):
        return 0
    offset = whole_number(text)
    if offset is None:
        raise ApiError(400, "INVALID_REQUEST", "offset: must be a whole number (0-9)", "offset")
    return offset


def _number(request, name: str) -> int | None:
    return positive_integer(request.query_params, name, meaning="a version number")


# --- versions ------------------------------------------------------------------------------


@extend_schema(tags=["versions"])
class ProfileVersionViewSet(GenericViewSet):
    schema = ApiAutoSchema()
    permission_classes = [ReadConfigWriteRules]
    lookup_field = "number"
    lookup_value_regex = "[0-9]+"

    @extend_schema(
        operation_id="profile_versions_list",
        summary="The profile's versions, newest first",
        responses={200: s.VersionSerializer(many=True)},
    )
    def list(self, request, key):
        _history_or_404(key)
        page = self.paginate_queryset(version_list(profile_key=key))
        return self.get_paginated_response([version_record(version) for version in page])

    def _get(self, key: str, number: int) -> ProfileVersion:
        try:
            return version_get(profile_key=key, number=number)
        except ProfileVersion.DoesNotExist:
            raise not_found(f'version {number} of profile "{key}"') from None

    @extend_schema(
        operation_id="profile_versions_retrieve",
        summary="One version with the profile's document (SPEC §2, with rules)",
        responses={200: s.VersionDetailSerializer},
        examples=[s.VERSION_EXAMPLE],
    )
    def retrieve(self, request, key, number):
        return Response(version_record(self._get(key, int(number)), with_document=True))

    @extend_schema(
        operation_id="profile_versions_restore",
        summary="Append a new version equal to this one (history is never rewritten)",
        description="Send the profile's `ETag` as `If-Match`. Answers 201 with the new version, "
        "or 200 with the current one when it already equals the restored version. In a "
        "protected environment: 409 `CHANGE_REQUEST_REQUIRED` (propose a change request).",
        request=NO_BODY,
        responses={200: s.VersionDetailSerializer, 201: s.VersionDetailSerializer},
        examples=[s.CHANGE_REQUEST_REQUIRED_EXAMPLE],
    )
    @action(detail=True, methods=["post"])
    def restore(self, request, key, number):
        number = int(number)
        try:
            latest, created = version_restore(
                profile_key=key,
                number=number,
                user=request.user,
                origin=API_ORIGIN,
                if_match=request.headers.get("If-Match"),
            )
        except ProfileVersion.DoesNotExist:
            raise not_found(f'version {number} of profile "{key}"') from None
        except VersionNotRestorable as exc:
            raise ApiError(400, "INVALID_REQUEST", str(exc), "number") from None
        profile = profile_get(key=key)
        headers = {"ETag": profile_etag(profile)}
        if created:
            headers["Location"] = reverse(
                "api:profile-version-detail", args=[key, latest.number], request=request
            )
        return Response(
            version_record(latest, with_document=True),
            status=201 if created else 200,
            headers=headers,
        )

    @extend_schema(
        operation_id="profile_versions_diff",
        summary="What changed between two versions, as SPEC §2 paths",
        parameters=[
            OpenApiParameter(
                "from", VERSION_NUMBER, description="Default: the version before `to`."
            ),
            OpenApiParameter("to", VERSION_NUMBER, description="Default: the latest version."),
            SCENARIO_PARAMETER,
        ],
        responses={200: s.DiffSerializer},
        examples=[s.DIFF_EXAMPLE, DIFF_TEXT_EXAMPLE],
    )
    def diff(self, request, key):
        _history_or_404(key)
        to_number = _number(request, "to")
        if to_number is None:
            to_number = profile_version_number(profile_key=key)
            if to_number is None:
                raise not_found(f'versions of profile "{key}"')
        from_number = _number(request, "from")
        if from_number is None:
            from_number = max(to_number - 1, 1)
        documents = version_documents_get(profile_key=key, numbers=(from_number, to_number))
        for name, number in (("from", from_number), ("to", to_number)):
            if number not in documents:
                raise not_found(f'version {number} of profile "{key}"', name)
        record = {
            "profile": key,
            "fromVersion": from_number,
            "toVersion": to_number,
            "changes": document_changes(documents[from_number], documents[to_number]),
        }
        text = version_text_record(
            request, key=key, documents=documents, from_number=from_number, to_number=to_number
        )
        if text is not None:  # ?scenario=: the rendered text diff (issue 21)
            record["text"] = text
        return Response(record)


# --- impact and promotion ------------------------------------------------------------------


@extend_schema(tags=["change requests"])
class ProfileDraftViewSet(GenericViewSet):
    schema = ApiAutoSchema()
    permission_classes = [ReadConfigWriteRules]

    throttle_scope = IMPACT_SCOPE

    def get_permissions(self):
        if self.action == "impact":  # a dry run resolves, like the preview
            return [Resolves()]
        return super().get_permissions()

    def get_throttles(self):
        # Throttled like the preview, in its own scope (each call resolves up to
        # IMPACT_MAX_RESOLUTIONS times); a promotion opens a change request, whose impact
        # resolves as many times: it counts in the same scope.
        return [ResolutionRateThrottle()] if self.action in ("impact", "promote") else []

    @extend_schema(
        operation_id="profile_impact",
        summary="Resolve every saved scenario with and without a draft (writes nothing)",
        description="The same `impact` a change request shows, for CI pipelines that check "
        "rules before they change. The draft is validated like a direct write. One call "
        "resolves at most `IMPACT_MAX_RESOLUTIONS` / 2 scenarios (100 by default); the others "
        "are listed with `skipped: true`, and `next` is the call for the following ones.",
        parameters=[
            OpenApiParameter(
                "offset",
                {"type": "integer", "minimum": 0, "maximum": 10**18 - 1},
                description="The first scenario to resolve (default 0).",
            )
        ],
        request=s.ChangesSerializer,
        responses={200: s.ImpactSerializer},
        examples=s.IMPACT_EXAMPLES,
    )
    def impact(self, request, key):
        require_key_profile(request.auth, key)  # it resolves the profile, as a preview does
        changes = _body(request, ("name", "description", "budget", "rules"))
        offset = _offset(request)
        try:
            impact = draft_impact(profile_key=key, changes=changes, offset=offset)
        except Profile.DoesNotExist:
            raise not_found(f'profile "{key}"') from None
        latest = latest_versions_get([key]).get(key)
        end = offset + impact_max_scenarios()
        following = None
        if end < len(impact):  # the scenarios after this answer's window
            following = request.build_absolute_uri(f"{request.path}?offset={end}")
        return Response(
            {
                "profile": key,
                "baseVersion": None if latest is None else latest.number,
                "summary": impact_summary(impact).as_dict(),
                "next": following,
                "impact": impact,
            }
        )

    @extend_schema(
        operation_id="profile_promote",
        summary="Open a change request carrying this profile's budget and rules to another "
        "environment",
        description="The target is the profile with the same consumer and objective in "
        "environment `to`; when there is none, applying the request creates it (under `key`, "
        "default: this key with its environment suffix replaced).",
        request=s.PromoteSerializer,
        responses={201: s.ChangeRequestSerializer},
        examples=[s.PROMOTE_EXAMPLE, s.CHANGE_REQUEST_EXAMPLE],
    )
    def promote(self, request, key):
        body = _body(request, ("to", "title", "description", "key", "reviewers"))
        # The schema's types: the service would take a number as its canonical string.
        for name in ("title", "description", "key"):
            if name in body and not isinstance(body[name], str):
                raise ApiError(400, "INVALID_REQUEST", f"{name}: must be a string", name)
        if "reviewers" in body and not isinstance(body["reviewers"], list):
            raise ApiError(
                400, "INVALID_REQUEST", "reviewers: must be a list of usernames", "reviewers"
            )
        try:
            change_request = change_request_open(
                opener=profile_promote,
                reviewers=body.get("reviewers"),
                profile_key=key,
                to=body.get("to"),
                user=request.user,
                title=body.get("title"),
                description=body.get("description") or "",
                key=body.get("key"),
            )
        except Profile.DoesNotExist:
            raise not_found(f'profile "{key}"') from None
        return _change_request_response(request, change_request, 201)


# --- environments --------------------------------------------------------------------------


@extend_schema(tags=["environments"])
class EnvironmentViewSet(GenericViewSet):
    schema = ApiAutoSchema()
    permission_classes = [ReadConfigAdminister]
    lookup_field = "key"
    lookup_value_regex = "[^/]+"

    @extend_schema(
        operation_id="environments_list",
        summary="Environments used by profiles or configured",
        responses={200: s.EnvironmentSerializer(many=True)},
    )
    def list(self, request):
        environments = environment_list()
        page = self.paginate_queryset(environments)
        return self.get_paginated_response([environment.as_dict() for environment in page])

    @extend_schema(
        operation_id="environments_retrieve",
        responses={200: s.EnvironmentSerializer},
        examples=[s.ENVIRONMENT_EXAMPLE],
    )
    def retrieve(self, request, key):
        environment = environment_get(key=key)
        if environment is None:
            raise not_found(f'environment "{key}"')
        return Response(environment.as_dict())

    @extend_schema(
        operation_id="environments_update",
        summary="Protect an environment (or lift its protection); administrators only",
        description="A field not given takes its default (unprotected, 1 approval).",
        request=s.EnvironmentUpdateSerializer,
        responses={200: s.EnvironmentSerializer},
        examples=[s.ENVIRONMENT_EXAMPLE],
    )
    def update(self, request, key):
        body = _body(request, ("key", "requiresChangeRequest", "approvals"))
        if "key" in body and body["key"] != key:
            raise ApiError(400, "INVALID_REQUEST", "key: cannot be changed", "key")
        try:
            environment = environment_update(
                key=key,
                requires_change_request=body.get("requiresChangeRequest", False),
                approvals=body.get("approvals", 1),
                user=request.user,
                origin=API_ORIGIN,
            )
        except ValidationError as exc:
            name, messages = next(iter(exc.message_dict.items()))
            raise ApiError(400, "INVALID_REQUEST", f"{name}: {messages[0]}", name) from None
        return Response(environment.as_dict())


# --- change requests -----------------------------------------------------------------------


def change_request_record(
    change_request: ChangeRequest,
    *,
    current_versions: dict[str, int | None],
    standing: ChangeRequestStanding,
    detail: bool,
    material: bool,
) -> dict:
    """Return a change request as the API shows it (``changes``, ``description``, ``diff``
    and ``impact`` on detail only: a list stays small however large the sets are; it has
    ``counts`` and ``entities``). Without
    ``material`` (READ_MATERIAL) a set's item changes are withheld (``change_set_shown``)."""
    current = current_versions.get(change_request.profile_key)
    record = {
        "id": change_request.pk,
        "revision": change_request.revision,
        "profile": change_request.profile_key,
        "environment": standing.environments[change_request.pk],
        "title": change_request.title,
        "status": change_request.status,
        "author": _username(change_request.author),
        "baseVersion": change_request.base_version,
        "currentVersion": current,
        "stale": change_request.status == ChangeRequest.Status.OPEN
        and current != change_request.base_version,
        "creates": change_request.creates,
        "promotedFrom": change_request.promoted_from,
        "approvals": [
            {
                "user": approval.user.get_username(),
                "createdAt": approval.created_at,
                "revision": approval.revision,
                "counted": approval.pk in standing.counted,
            }
            for approval in change_request.approvals.all()
        ],
        "approvalsRequired": standing.required[change_request.pk],
        "summary": impact_summary(change_request.impact).as_dict(),
        "createdAt": change_request.created_at,
        "updatedAt": change_request.updated_at,
        "resolvedAt": change_request.resolved_at,
        "resolvedBy": _username(change_request.resolved_by),
        "appliedVersion": change_request.applied_version,
    }
    record["affectedProfiles"] = list(change_request.affected_profiles) or [
        change_request.profile_key
    ]
    is_open = change_request.status == ChangeRequest.Status.OPEN
    stale_entities = change_set_stale(change_request) if is_open else []
    shown = change_set_shown(change_request, material=material, stale_entities=stale_entities)
    record["entities"] = shown.entities
    record["itemsWithheld"] = shown.items_withheld
    record["counts"] = change_request_counts(change_request)
    if change_request.is_change_set:
        record["stale"] = bool(stale_entities)
    if detail:
        record["changes"] = (
            shown.changes if change_request.is_change_set else change_request.changes
        )
        record["description"] = change_request.description
        set_form = change_request.is_change_set
        record["diff"] = [] if set_form else change_request_diff(change_request)
        record["entityChanges"] = shown.entity_changes
        record["staleEntities"] = shown.stale_entities
        record["impact"] = shown.impact
    record.update(review_record(change_request, detail=detail))
    return record


def _current_versions(keys) -> dict[str, int | None]:
    return {key: version.number for key, version in latest_versions_get(set(keys)).items()}


def _change_request_response(request, change_request: ChangeRequest, status=200) -> Response:
    change_request = change_request_record_get(pk=change_request.pk)
    record = change_request_record(
        change_request,
        current_versions=_current_versions([change_request.profile_key]),
        standing=ChangeRequestStanding([change_request]),
        detail=True,
        material=request_can(request, READ_MATERIAL),
    )
    record["impact"] = key_impact_shown(
        request.auth,
        record["impact"],
        profile=record["profile"],
        declared=_declared_environments(record),
    )
    headers = {"ETag": change_request_etag(change_request)}
    if status == 201:
        headers["Location"] = reverse(
            "api:change-request-detail", args=[change_request.pk], request=request
        )
    return Response(record, status=status, headers=headers)


def _declared_environments(record: dict) -> dict[str, set]:
    """Return the environments a request's record gives its profiles: the request's own
    profile's, and those its set's profile entries give (a set may move or create one)."""
    declared = {record["profile"]: {record["environment"]}} if record["profile"] else {}
    for entry in record.get("changes") or ():
        if isinstance(entry, dict) and entry.get("kind") == "profile":
            value = entry.get("value") or {}
            if "environment" in value:
                declared.setdefault(entry["key"], set()).add(value["environment"] or None)
    return declared


def change_request_response(request, change_request: ChangeRequest, status=200) -> Response:
    """Answer with a change request's record (its detail) and ETag (the import's proposal)."""
    return _change_request_response(request, change_request, status)


@extend_schema(tags=["change requests"])
class ChangeRequestViewSet(GenericViewSet):
    schema = ApiAutoSchema()
    permission_classes = [ReadConfigWriteRules]
    lookup_value_regex = "[0-9]+"

    throttle_scope = IMPACT_SCOPE

    def get_throttles(self):
        # Opening, rebasing and editing the changes compute the request's impact (up to
        # IMPACT_MAX_RESOLUTIONS resolutions): counted like the dry run, in the impact scope.
        computes = self.action in ("create", "rebase") or (
            self.action == "partial_update"
            and isinstance(self.request.data, dict)
            and "changes" in self.request.data
        )
        return [ResolutionRateThrottle()] if computes else []

    def _get(self, pk: int) -> ChangeRequest:
        try:
            return change_request_get(pk=pk)
        except ChangeRequest.DoesNotExist:
            raise not_found(f"change request #{pk}") from None

    @extend_schema(
        operation_id="change_requests_list",
        summary="Change requests, newest first (without changes, description, diff and "
        "impact: `counts` and `entities` say what each changes)",
        parameters=[
            OpenApiParameter("status", str, enum=list(ChangeRequest.Status.values)),
            OpenApiParameter("profile", str, description="Only this profile's requests."),
            OpenApiParameter(
                "mine", bool, description="Only the requests you opened (true or false)."
            ),
            OpenApiParameter(
                "review",
                bool,
                description="Open requests of others you have not approved (true or false).",
            ),
            OpenApiParameter(
                "reviewer",
                str,
                enum=["me"],
                description="`me`: the requests whose review is requested of you.",
            ),
        ],
        responses={200: s.ChangeRequestListItemSerializer(many=True)},
    )
    def list(self, request):
        params = request.query_params
        status = params.get("status")
        if status and status not in ChangeRequest.Status.values:
            raise ApiError(
                400,
                "INVALID_REQUEST",
                "status: must be one of " + ", ".join(ChangeRequest.Status.values),
                "status",
            )
        reviewer = params.get("reviewer")
        if reviewer not in (None, "", "me"):
            raise ApiError(400, "INVALID_REQUEST", "reviewer: must be me", "reviewer")
        queryset = change_request_list(
            requested_of=request.user if reviewer == "me" else None,
            status=status or None,
            profile=params.get("profile") or None,
            author=request.user if query_boolean(params, "mine") else None,
            reviewer=request.user if query_boolean(params, "review") else None,
        )
        page = self.paginate_queryset(queryset)
        versions = _current_versions(change_request.profile_key for change_request in page)
        standing = ChangeRequestStanding(page)
        material = request_can(request, READ_MATERIAL)
        return self.get_paginated_response(
            [
                change_request_record(
                    change_request,
                    current_versions=versions,
                    standing=standing,
                    detail=False,
                    material=material,
                )
                for change_request in page
            ]
        )

    @extend_schema(
        operation_id="change_requests_create",
        summary="Propose a change of a profile, or a change set over any entities; answers "
        "with its impact on every scenario",
        description="Two shapes. **One profile**: `{profile, title, changes: {name, "
        "description, budget, rules}}`, validated like a direct write (errors name the field, "
        "e.g. `changes.rules.kb.mode`). **A change set**: `{title?, description?, changes: "
        "[{kind, op, key | layer+path, value}, …]}` (at most 1,000 entries, one per entity) "
        "over consumers, layers, items and profiles, validated against the whole workspace "
        "(errors name `changes[i].value.<field>`); the title defaults to what it does. "
        "`impact` has one entry per saved scenario of every profile the request may change "
        "(with `profile`), resolved before and after; nothing is written.",
        request=s.CHANGE_REQUEST_OR_SET_CREATE,
        responses={201: s.ChangeRequestSerializer},
        examples=[
            s.CHANGE_REQUEST_CREATE_EXAMPLE,
            s.CHANGE_SET_CREATE_EXAMPLE,
            s.CHANGE_REQUEST_EXAMPLE,
            s.CHANGE_SET_EXAMPLE,
        ],
    )
    def create(self, request):
        body = _body(request, ("profile", "title", "description", "changes", "reviewers"))
        if isinstance(body.get("changes"), list):
            if "profile" in body:
                raise ApiError(
                    400,
                    "INVALID_REQUEST",
                    "profile: a change set names its entities in changes (leave profile out)",
                    "profile",
                )
            change_request = change_request_open(
                opener=change_set_create,
                reviewers=body.get("reviewers"),
                title=body.get("title"),
                description=body.get("description") or "",
                changes=body["changes"],
                user=request.user,
            )
            return _change_request_response(request, change_request, 201)
        key = body.get("profile")
        if not isinstance(key, str) or not key:
            raise ApiError(400, "INVALID_REQUEST", "profile: is required", "profile")
        try:
            change_request = change_request_open(
                opener=change_request_create,
                reviewers=body.get("reviewers"),
                profile_key=key,
                title=body.get("title"),
                description=body.get("description") or "",
                changes=body.get("changes"),
                user=request.user,
                if_match=request.headers.get("If-Match"),
            )
        except Profile.DoesNotExist:
            raise not_found(f'profile "{key}"', "profile") from None
        return _change_request_response(request, change_request, 201)

    @extend_schema(
        operation_id="change_requests_retrieve",
        responses={200: s.ChangeRequestSerializer},
        examples=[s.CHANGE_REQUEST_EXAMPLE],
    )
    def retrieve(self, request, pk):
        return _change_request_response(request, self._get(pk))

    @extend_schema(
        operation_id="change_requests_partial_update",
        summary="Edit an open request (its author); any edit withdraws the approvals",
        description="`title`, `description`, `changes` and `reviewers`: the author. `applyAt` "
        "(schedule the apply, or `null` to clear it): anyone allowed to apply. A change of "
        "the reviewers or the schedule is not a new revision. A change set takes a new list "
        "of `changes` (validated again, bases and impact recomputed).",
        request=s.ChangeRequestUpdateSerializer,
        responses={200: s.ChangeRequestSerializer},
    )
    def partial_update(self, request, pk):
        body = _body(request, ("title", "description", "changes", "reviewers", "applyAt"))
        self._get(pk)
        reviewers = body.pop("reviewers", UNSET)
        apply_at = body.pop("applyAt", UNSET)
        return _change_request_response(
            request,
            change_request_edit(
                pk=pk,
                user=request.user,
                if_match=request.headers.get("If-Match"),
                reviewers=reviewers,
                apply_at=apply_at,
                **body,
            ),
        )

    def _action(self, request, pk, service, **arguments):
        _body(request, ())
        self._get(pk)
        service(pk=pk, user=request.user, **arguments)
        return _change_request_response(request, self._get(pk))

    @extend_schema(
        operation_id="change_requests_approve",
        summary="Approve the revision you reviewed (not your own request: 403 SELF_APPROVAL)",
        description="Send the request's `ETag` (from the read you reviewed) as `If-Match`: "
        "when the request was edited or rebased since, 412 `PRECONDITION_FAILED` and nothing "
        "is approved; without it, 428 `PRECONDITION_REQUIRED`.",
        parameters=[IF_MATCH_APPROVE],
        request=review_shapes.ApproveSerializer,
        responses={200: s.ChangeRequestSerializer},
        examples=s.SAFE_CHANGE_ERROR_EXAMPLES + s.APPROVE_ERROR_EXAMPLES,
    )
    @action(detail=True, methods=["post"])
    def approve(self, request, pk):
        body = _body(request, ("body",))
        self._get(pk)
        change_request_approve_reviewed(
            pk=pk,
            user=request.user,
            if_match=request.headers.get("If-Match"),
            body=body.get("body", ""),
        )
        return _change_request_response(request, self._get(pk))

    @extend_schema(
        operation_id="change_requests_reject",
        request=NO_BODY,
        responses={200: s.ChangeRequestSerializer},
    )
    @action(detail=True, methods=["post"])
    def reject(self, request, pk):
        return self._action(request, pk, change_request_reject)

    @extend_schema(
        operation_id="change_requests_close",
        summary="Withdraw your own open request",
        request=NO_BODY,
        responses={200: s.ChangeRequestSerializer},
    )
    @action(detail=True, methods=["post"])
    def close(self, request, pk):
        return self._action(request, pk, change_request_close)

    @extend_schema(
        operation_id="change_requests_rebase",
        summary="Move the request onto the profile's current version; recomputes the impact "
        "and withdraws the approvals",
        request=NO_BODY,
        responses={200: s.ChangeRequestSerializer},
    )
    @action(detail=True, methods=["post"])
    def rebase(self, request, pk):
        return self._action(request, pk, change_request_rebase)

    @extend_schema(
        operation_id="change_requests_apply",
        summary="Apply an approved request: one new version by its author, naming approvers",
        description="Needs the approvals its environment asks for (409 `APPROVALS_REQUIRED`) "
        "and no reviewer asking for changes on the current revision (409 "
        "`CHANGES_REQUESTED`); when the profile moved past `baseVersion`, 409 "
        "`STALE_CHANGE_REQUEST` and nothing is written (rebase, review again, apply). A "
        "change set needs what the protected environments of the profiles it affects ask "
        "for (the most of them); every entity it touches must be as it was written against "
        "(else 409 `STALE_CHANGE_REQUEST` with `entities`), and its entries apply in one "
        "transaction through the ordinary writes: one refused entry (400, `changes[i]…`) "
        "writes nothing.",
        request=NO_BODY,
        responses={200: s.ChangeRequestSerializer},
        examples=[
            *s.SAFE_CHANGE_ERROR_EXAMPLES,
            review_shapes.CHANGES_REQUESTED_EXAMPLE,
            s.STALE_CHANGE_SET_EXAMPLE,
        ],
    )
    @action(detail=True, methods=["post"])
    def apply(self, request, pk):
        return self._action(request, pk, change_request_apply)


# --- routes --------------------------------------------------------------------------------


# The viewsets are on the API's router (profiles.api.urls); these answer beside a profile.
urlpatterns = [
    path(
        "profiles/<str:key>/diff",
        ProfileVersionViewSet.as_view({"get": "diff"}),
        name="profile-diff",
    ),
    path(
        "profiles/<str:key>/impact",
        ProfileDraftViewSet.as_view({"post": "impact"}),
        name="profile-impact",
    ),
    path(
        "profiles/<str:key>/promote",
        ProfileDraftViewSet.as_view({"post": "promote"}),
        name="profile-promote",
    ),
]

"""Safe change over the API: the impact of a draft; change requests and promotion (a profile's
versions and the environments are ``profiles.api.versioning``).

Thin views: each reads its body, calls a service of ``profiles.safechange`` (change requests,
change sets, reviews, impact) and answers. The services raise ``SafeChangeError``s, which the API's
exception handler answers in the one error shape.
"""

from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.reverse import reverse

from profiles.api.base import (
    ApiViewSet,
    body_object,
    invalid,
    no_body_action,
    query_whole_number,
    viewset_schema,
)
from profiles.api.exceptions import not_found, or_404
from profiles.api.filters import query_boolean
from profiles.api.serializers import reviews as review_shapes
from profiles.api.serializers import safechange as s
from profiles.api.serializers.entries import username
from profiles.api.serializers.reviews import review_record
from profiles.api.throttling import ResolutionRateThrottle
from profiles.api.versioning import ReadConfigWriteRules
from profiles.models import ChangeRequest, Profile
from profiles.safechange.change_requests import (
    change_request_apply,
    change_request_close,
    change_request_create,
    change_request_diff,
    change_request_rebase,
    change_request_reject,
    draft_impact,
)
from profiles.safechange.change_sets import (
    change_request_counts,
    change_set_create,
    change_set_shown,
    change_set_stale,
)
from profiles.safechange.impact import IMPACT_SCOPE, impact_max_scenarios, impact_summary
from profiles.safechange.promotion import profile_promote
from profiles.safechange.reviews import (
    UNSET,
    change_request_approve_reviewed,
    change_request_edit,
    change_request_open,
)
from profiles.safechange.selectors import (
    ChangeRequestStanding,
    change_request_etag,
    change_request_get,
    change_request_list,
    change_request_record_get,
)
from profiles.versioning.versions import latest_versions_get
from profiles.workspace.permissions import (
    READ_CONFIG,
    READ_MATERIAL,
    RESOLVE,
    capability_permission,
    key_impact_shown,
    request_can,
    require_key_profile,
)

IF_MATCH_APPROVE = OpenApiParameter(
    "If-Match",
    str,
    OpenApiParameter.HEADER,
    required=True,
    description='The change request\'s ETag as you read it (e.g. `"cr12.1"`).',
)

# --- permissions ---------------------------------------------------------------------------

# A dry run resolves like the preview and reads the change request (a resolve-only key may not).
Resolves = capability_permission(RESOLVE, READ_CONFIG)


# --- impact and promotion ------------------------------------------------------------------


@viewset_schema("change requests", operations="profile")
class ProfileDraftViewSet(ApiViewSet):
    permission_classes = [ReadConfigWriteRules]

    # Throttled like the preview, in its own scope (each call resolves up to
    # IMPACT_MAX_RESOLUTIONS times); a promotion opens a change request, whose impact
    # resolves as many times: it counts in the same scope.
    throttle_scope = IMPACT_SCOPE
    throttled_actions = ("impact", "promote")

    def get_permissions(self):
        if self.action == "impact":  # a dry run resolves, like the preview
            return [Resolves()]
        return super().get_permissions()

    @extend_schema(
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
        changes = body_object(request, ("name", "description", "budget", "rules"))
        offset = query_whole_number(request, "offset")
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
        body = body_object(request, ("to", "title", "description", "key", "reviewers"))
        # The schema's types: the service would take a number as its canonical string.
        for name in ("title", "description", "key"):
            if name in body and not isinstance(body[name], str):
                raise invalid(name, "must be a string")
        if "reviewers" in body and not isinstance(body["reviewers"], list):
            raise invalid("reviewers", "must be a list of usernames")
        try:
            change_request = change_request_opened(
                request,
                profile_promote,
                body,
                profile_key=key,
                to=body.get("to"),
                key=body.get("key"),
            )
        except Profile.DoesNotExist:
            raise not_found(f'profile "{key}"') from None
        return change_request_response(request, change_request, 201)


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
        "author": username(change_request.author),
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
        "resolvedBy": username(change_request.resolved_by),
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


def change_request_response(request, change_request: ChangeRequest, status=200) -> Response:
    """Answer with a change request's record (its detail) and ETag."""
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


def change_request_opened(request, opener, body: dict, **arguments) -> ChangeRequest:
    """Return the change request ``opener`` opens on the request's behalf: its title,
    description and reviewers the body's, ``arguments`` what the opener takes besides."""
    return change_request_open(
        opener=opener,
        reviewers=body.get("reviewers"),
        title=body.get("title"),
        description=body.get("description") or "",
        user=request.user,
        **arguments,
    )


def change_request_verdict(request, pk: int, service, *, comment: str | None) -> Response:
    """Record a reviewer's verdict with the body's one field, ``body`` (its comment;
    ``comment`` when not given), on the revision the request's ``If-Match`` names."""
    body = body_object(request, ("body",))
    if_match = request.headers.get("If-Match")
    return change_request_act(
        request, pk, service, body=body.get("body", comment), if_match=if_match
    )


def change_request_or_404(pk: int) -> ChangeRequest:
    return or_404(f"change request #{pk}", change_request_get, pk=pk)


def change_request_act(request, pk: int, service, **arguments) -> Response:
    """Run ``service`` on change request ``pk`` (404 when there is none) on the request's
    behalf, and answer with the change request as it is then."""
    change_request_or_404(pk)
    service(pk=pk, user=request.user, **arguments)
    return change_request_response(request, change_request_or_404(pk))


@viewset_schema("change requests", operations="change_requests", record=s.ChangeRequestSerializer)
class ChangeRequestViewSet(ApiViewSet):
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

    @extend_schema(
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
            raise invalid("status", "must be one of " + ", ".join(ChangeRequest.Status.values))
        reviewer = params.get("reviewer")
        if reviewer not in (None, "", "me"):
            raise invalid("reviewer", "must be me")
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
        examples=[
            s.CHANGE_REQUEST_CREATE_EXAMPLE,
            s.CHANGE_SET_CREATE_EXAMPLE,
            s.CHANGE_REQUEST_EXAMPLE,
            s.CHANGE_SET_EXAMPLE,
        ],
    )
    def create(self, request):
        body = body_object(request, ("profile", "title", "description", "changes", "reviewers"))
        if isinstance(body.get("changes"), list):
            if "profile" in body:
                raise invalid(
                    "profile", "a change set names its entities in changes (leave profile out)"
                )
            change_request = change_request_opened(
                request, change_set_create, body, changes=body["changes"]
            )
            return change_request_response(request, change_request, 201)
        key = body.get("profile")
        if not isinstance(key, str) or not key:
            raise invalid("profile", "is required")
        try:
            change_request = change_request_opened(
                request,
                change_request_create,
                body,
                profile_key=key,
                changes=body.get("changes"),
                if_match=self.if_match,
            )
        except Profile.DoesNotExist:
            raise not_found(f'profile "{key}"', "profile") from None
        return change_request_response(request, change_request, 201)

    @extend_schema(examples=[s.CHANGE_REQUEST_EXAMPLE])
    def retrieve(self, request, pk):
        return change_request_response(request, change_request_or_404(pk))

    @extend_schema(
        summary="Edit an open request (its author); any edit withdraws the approvals",
        description="`title`, `description`, `changes` and `reviewers`: the author. `applyAt` "
        "(schedule the apply, or `null` to clear it): anyone allowed to apply. A change of "
        "the reviewers or the schedule is not a new revision. A change set takes a new list "
        "of `changes` (validated again, bases and impact recomputed).",
        request=s.ChangeRequestUpdateSerializer,
    )
    def partial_update(self, request, pk):
        body = body_object(request, ("title", "description", "changes", "reviewers", "applyAt"))
        change_request_or_404(pk)
        reviewers = body.pop("reviewers", UNSET)
        apply_at = body.pop("applyAt", UNSET)
        return change_request_response(
            request,
            change_request_edit(
                pk=pk,
                user=request.user,
                if_match=self.if_match,
                reviewers=reviewers,
                apply_at=apply_at,
                **body,
            ),
        )

    def _action(self, request, pk, service):
        body_object(request, ())  # takes no fields
        return change_request_act(request, pk, service)

    @extend_schema(
        summary="Approve the revision you reviewed (not your own request: 403 SELF_APPROVAL)",
        description="Send the request's `ETag` (from the read you reviewed) as `If-Match`: "
        "when the request was edited or rebased since, 412 `PRECONDITION_FAILED` and nothing "
        "is approved; without it, 428 `PRECONDITION_REQUIRED`.",
        parameters=[IF_MATCH_APPROVE],
        request=review_shapes.ApproveSerializer,
        examples=s.SAFE_CHANGE_ERROR_EXAMPLES + s.APPROVE_ERROR_EXAMPLES,
    )
    @action(detail=True, methods=["post"])
    def approve(self, request, pk):
        return change_request_verdict(request, pk, change_request_approve_reviewed, comment="")

    @no_body_action()
    def reject(self, request, pk):
        return self._action(request, pk, change_request_reject)

    @no_body_action(summary="Withdraw your own open request")
    def close(self, request, pk):
        return self._action(request, pk, change_request_close)

    @no_body_action(
        summary="Move the request onto the profile's current version; recomputes the impact "
        "and withdraws the approvals",
    )
    def rebase(self, request, pk):
        return self._action(request, pk, change_request_rebase)

    @no_body_action(
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
        examples=[
            *s.SAFE_CHANGE_ERROR_EXAMPLES,
            review_shapes.CHANGES_REQUESTED_EXAMPLE,
            s.STALE_CHANGE_SET_EXAMPLE,
        ],
    )
    def apply(self, request, pk):
        return self._action(request, pk, change_request_apply)


# --- routes --------------------------------------------------------------------------------


# The viewset is on the API's router (profiles.api.urls); these answer beside a profile.
urlpatterns = [
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

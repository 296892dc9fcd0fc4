"""Versioning over the API: a profile's versions (list, one with its document, diff, restore)
and the environments with their protection.

Thin views: each reads its body, calls a service of ``profiles.versioning`` (restore is safe
change's: it writes through authoring) and answers. The services raise ``SafeChangeError``s,
which the API's exception handler answers in the one error shape.
"""

from operator import methodcaller

from django.core.exceptions import ValidationError
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.reverse import reverse

from profiles.api.base import (
    ApiViewSet,
    RecordListMixin,
    body_object,
    invalid,
    no_body_action,
    viewset_schema,
)
from profiles.api.exceptions import ApiError, not_found, or_404
from profiles.api.serializers import versioning as s
from profiles.api.serializers.entries import username
from profiles.api.serializers.text_diff import DIFF_TEXT_EXAMPLE
from profiles.api.text_diff import SCENARIO_PARAMETER, version_text_record
from profiles.models import ProfileVersion
from profiles.safechange.restore import VersionNotRestorable, version_restore
from profiles.versioning.environments import environment_get, environment_list, environment_update
from profiles.versioning.selectors import profile_history_exists, version_documents_get
from profiles.versioning.versions import (
    document_changes,
    profile_version_number,
    version_get,
    version_list,
)
from profiles.workspace.concurrency import profile_etag
from profiles.workspace.parameters import positive_integer
from profiles.workspace.permissions import (
    ADMINISTER,
    READ_CONFIG,
    WRITE_RULES,
    capability_permission,
)
from profiles.workspace.selectors import profile_get
from profiles.workspace.validation import MAX_STORED_INTEGER

# A version number in a query (?from=, ?to=): digits from 1.
VERSION_NUMBER = {"type": "integer", "minimum": 1, "maximum": MAX_STORED_INTEGER}

# --- permissions ---------------------------------------------------------------------------

# Reading versions, environments and change requests is reading configuration; proposing,
# reviewing, applying and restoring change rules (WRITE_RULES); protecting an environment is
# administration. Approving also needs not being the author (the service checks).
ReadConfigWriteRules = capability_permission(READ_CONFIG, unsafe=WRITE_RULES)
ReadConfigAdminister = capability_permission(READ_CONFIG, unsafe=ADMINISTER)


# --- helpers -------------------------------------------------------------------------------


def version_record(version: ProfileVersion, *, with_document: bool = False) -> dict:
    """Return a version as the API shows it (with ``profile``, its document, on detail)."""
    record = {
        "number": version.number,
        "author": username(version.author),
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


def _number(request, name: str) -> int | None:
    return positive_integer(request.query_params, name, meaning="a version number")


# --- versions ------------------------------------------------------------------------------


@viewset_schema("versions", operations="profile_versions", record=s.VersionDetailSerializer)
class ProfileVersionViewSet(ApiViewSet):
    permission_classes = [ReadConfigWriteRules]
    lookup_field = "number"
    lookup_value_regex = "[0-9]+"

    @extend_schema(
        summary="The profile's versions, newest first",
        responses={200: s.VersionSerializer(many=True)},
    )
    def list(self, request, key):
        _history_or_404(key)
        return self.page_of(version_list(profile_key=key), version_record)

    @extend_schema(
        summary="One version with the profile's document (SPEC §2, with rules)",
        examples=[s.VERSION_EXAMPLE],
    )
    def retrieve(self, request, key, number):
        number = int(number)
        version = or_404(
            f'version {number} of profile "{key}"', version_get, profile_key=key, number=number
        )
        return Response(version_record(version, with_document=True))

    @no_body_action(
        summary="Append a new version equal to this one (history is never rewritten)",
        description="Send the profile's `ETag` as `If-Match`. Answers 201 with the new version, "
        "or 200 with the current one when it already equals the restored version. In a "
        "protected environment: 409 `CHANGE_REQUEST_REQUIRED` (propose a change request).",
        responses={200: s.VersionDetailSerializer, 201: s.VersionDetailSerializer},
        examples=[s.CHANGE_REQUEST_REQUIRED_EXAMPLE],
    )
    def restore(self, request, key, number):
        number = int(number)
        try:
            latest, created = version_restore(
                profile_key=key,
                number=number,
                **self.guarded(),
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


# --- environments --------------------------------------------------------------------------


@viewset_schema(
    "environments",
    record=s.EnvironmentSerializer,
    listing="Environments used by profiles or configured",
)
class EnvironmentViewSet(RecordListMixin, ApiViewSet):
    permission_classes = [ReadConfigAdminister]
    lookup_field = "key"
    lookup_value_regex = "[^/]+"

    record = methodcaller("as_dict")

    def rows(self):
        return environment_list()

    @extend_schema(examples=[s.ENVIRONMENT_EXAMPLE])
    def retrieve(self, request, key):
        return Response(or_404(f'environment "{key}"', environment_get, key=key).as_dict())

    @extend_schema(
        summary="Protect an environment (or lift its protection); administrators only",
        description="A field not given takes its default (unprotected, 1 approval).",
        request=s.EnvironmentUpdateSerializer,
        examples=[s.ENVIRONMENT_EXAMPLE],
    )
    def update(self, request, key):
        body = body_object(request, ("key", "requiresChangeRequest", "approvals"))
        if "key" in body and body["key"] != key:
            raise invalid("key", "cannot be changed")
        try:
            environment = environment_update(
                key=key,
                requires_change_request=body.get("requiresChangeRequest", False),
                approvals=body.get("approvals", 1),
                **self.author(),
            )
        except ValidationError as exc:
            name, messages = next(iter(exc.message_dict.items()))
            raise invalid(name, messages[0]) from None
        return Response(environment.as_dict())


# --- routes --------------------------------------------------------------------------------


# The viewsets are on the API's router (profiles.api.urls); this answers beside a profile.
urlpatterns = [
    path(
        "profiles/<str:key>/diff",
        ProfileVersionViewSet.as_view({"get": "diff"}),
        name="profile-diff",
    ),
]

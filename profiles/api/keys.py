"""API keys: a user's token for a username and password (``auth/token``), and the scoped keys:
create one (the key is in this answer only), list them, revoke one.

Only a hash of each token is stored, so the token cannot be shown again: every successful call
of ``auth/token`` makes a new token and revokes the user's previous one, as "Replace with a new
token" does on the studio's API keys page (DRF's credentials check, axes' lockouts).

Editors manage their own keys (``MANAGE_KEYS``), staff everyone's; a request signed with a
scoped key never does (no scope grants ``MANAGE_KEYS``). A new key is its caller's.
"""

from drf_spectacular.utils import extend_schema
from rest_framework import parsers, renderers
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.response import Response
from rest_framework.reverse import reverse

from profiles.api.base import (
    ApiView,
    ApiViewSet,
    RecordListMixin,
    body_object,
    invalid,
    viewset_schema,
)
from profiles.api.exceptions import or_404
from profiles.api.serializers import keys as s
from profiles.workspace.keys import (
    ApiKeyInvalid,
    api_key_create,
    api_key_get,
    api_key_list,
    api_key_revoke,
    token_replace,
)
from profiles.workspace.permissions import MANAGE_KEYS, capability_permission

NEW_KEY_FIELDS = ("name", "scopes", "environments", "expiresAt")


def key_record(key) -> dict:
    """Return a key as the API shows it (never the key itself: it is not stored)."""
    return {
        "id": key.pk,
        "name": key.name,
        "prefix": key.prefix,
        "owner": key.owner.get_username(),
        "scopes": list(key.scopes),
        "environments": list(key.environments),
        "expiresAt": key.expires_at,
        "lastUsedAt": key.last_used_at,
        "createdAt": key.created_at,
    }


@viewset_schema(
    "keys",
    record=s.ApiKeySerializer,
    listing="Your scoped API keys (staff: everyone's), newest first; never the keys",
)
class ApiKeyViewSet(RecordListMixin, ApiViewSet):
    permission_classes = [capability_permission(MANAGE_KEYS)]
    lookup_url_kwarg = "id"
    lookup_value_regex = "[0-9]+"

    record = staticmethod(key_record)

    def rows(self):
        return api_key_list(viewer=self.request.user)

    @extend_schema(
        summary="Create a scoped API key; the answer holds the key, shown this once",
        request=s.ApiKeyCreateSerializer,
        responses={201: s.NewApiKeySerializer},
        examples=[s.NEW_KEY_EXAMPLE],
    )
    def create(self, request):
        body = body_object(request, NEW_KEY_FIELDS, required=("name", "scopes"))
        try:
            made = api_key_create(
                owner=request.user,
                name=body["name"],
                scopes=body["scopes"],
                environments=body.get("environments"),
                expires_at=body.get("expiresAt"),
            )
        except ApiKeyInvalid as exc:
            raise invalid(exc.field, exc.message) from None
        location = reverse("api:key-detail", args=[made.record.pk], request=request)
        return Response(
            {**key_record(made.record), "key": made.key}, status=201, headers={"Location": location}
        )

    @extend_schema(
        operation_id="keys_revoke",
        summary="Revoke a key: requests that send it get 401 from now on",
    )
    def destroy(self, request, id):
        api_key_revoke(key=or_404(f"API key {id}", api_key_get, viewer=request.user, key_id=id))
        return Response(status=204)


class TokenView(ApiView):
    """Exchange a username and password for a new API token of the user."""

    throttle_classes = ()
    permission_classes = ()
    parser_classes = (parsers.FormParser, parsers.MultiPartParser, parsers.JSONParser)
    renderer_classes = (renderers.JSONRenderer,)

    @extend_schema(
        operation_id="auth_token",
        summary="Get a new API token (send it as `Authorization: Token <key>`)",
        description=(
            "Each call makes a new token with your whole role and revokes your previous one. "
            "For an application, prefer a scoped key (`POST /api/v1/keys`)."
        ),
        request=s.TokenRequestSerializer,
        responses={200: s.TokenSerializer},
        tags=["auth"],
        auth=[],
    )
    def post(self, request, *args, **kwargs):
        serializer = AuthTokenSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        _, key = token_replace(user=serializer.validated_data["user"])
        return Response({"token": key})

"""Obtaining an API token with a username and password (DRF's credentials check, axes' lockouts).

Only a hash of each token is stored, so the token cannot be shown again: every successful call
makes a new token and revokes the user's previous one, as "Replace with a new token" does on
the studio's API keys page.
"""

from drf_spectacular.utils import extend_schema
from rest_framework import parsers, renderers
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.response import Response
from rest_framework.views import APIView

from profiles.api.schema import ApiAutoSchema
from profiles.api.serializers import tokens as s
from profiles.workspace.tokens import token_replace


class TokenView(APIView):
    """Exchange a username and password for a new API token of the user."""

    schema = ApiAutoSchema()
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

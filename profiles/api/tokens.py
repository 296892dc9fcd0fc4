"""Obtaining an API token with a username and password: DRF's view, in the API's schema."""

from drf_spectacular.utils import extend_schema
from rest_framework.authtoken.views import ObtainAuthToken

from profiles.api.schema import ApiAutoSchema
from profiles.api.serializers import tokens as s


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

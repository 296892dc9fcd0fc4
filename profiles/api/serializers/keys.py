"""Shapes and examples of the scoped API keys (``/api/v1/keys``), for the OpenAPI schema. The
service (``profiles.workspace.keys.api_key_create``) validates the body; these serializers
describe it."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from profiles.api.serializers.entries import strings_field
from profiles.api.serializers.examples import request_example
from profiles.models import KeyScope
from profiles.models.keys import NAME_MAX_LENGTH

SCOPES_HELP = (
    "`resolve`: resolve, expand, preview only; `read`: also every read the owner's role "
    "allows; `write`: also every write the owner's role allows."
)


@extend_schema_field(
    {"type": "array", "items": {"enum": KeyScope.values}, "minItems": 1, "uniqueItems": True}
)
class ScopesField(serializers.ListField):
    """The scopes of a new key: each at most once (a scope given twice is refused)."""


@extend_schema_field({"type": "array", "items": {"type": "string"}, "uniqueItems": True})
class EnvironmentsField(serializers.ListField):
    """The environments of a new key: existing ones, each at most once."""


class ApiKeyCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=NAME_MAX_LENGTH, help_text="What the key is for.")
    scopes = ScopesField(
        child=serializers.ChoiceField(KeyScope.values), min_length=1, help_text=SCOPES_HELP
    )
    environments = EnvironmentsField(
        child=serializers.CharField(),
        required=False,
        help_text="Environment keys: the key resolves only profiles of these (none: all).",
    )
    expiresAt = serializers.DateTimeField(
        required=False, allow_null=True, help_text="In the future; none: the key never expires."
    )


class ApiKeySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    prefix = serializers.CharField(help_text="The key's first characters, to recognise it.")
    owner = serializers.CharField(help_text="Username of the key's owner.")
    scopes = serializers.ListField(child=serializers.ChoiceField(KeyScope.values))
    environments = strings_field()
    expiresAt = serializers.DateTimeField(allow_null=True)
    lastUsedAt = serializers.DateTimeField(
        allow_null=True, help_text="Updated at most once a minute."
    )
    createdAt = serializers.DateTimeField()


class NewApiKeySerializer(ApiKeySerializer):
    key = serializers.CharField(
        help_text="Send it as `Authorization: Bearer <key>`. Shown this once: only its hash "
        "is stored."
    )


NEW_KEY_EXAMPLE = request_example(
    "A resolve-only key for production",
    {"name": "support assistant", "scopes": ["resolve"], "environments": ["production"]},
)


# Obtaining an API token with a username and password (POST /api/v1/auth/token).
class TokenRequestSerializer(serializers.Serializer):
    username = serializers.CharField()
    password = serializers.CharField(style={"input_type": "password"})


class TokenSerializer(serializers.Serializer):
    token = serializers.CharField(
        help_text="Send it as `Authorization: Token <token>`. Shown this once."
    )

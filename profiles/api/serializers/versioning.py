"""Shapes and examples of the versioning endpoints (a profile's versions, their diff and
restore; environments and their protection), for the OpenAPI schema."""

from drf_spectacular.utils import OpenApiExample
from rest_framework import serializers

from profiles.api.serializers.authoring import ProfileSerializer
from profiles.api.serializers.entries import key_field
from profiles.api.serializers.examples import error_example, response_example
from profiles.api.serializers.text_diff import TextDiffSerializer
from profiles.models import ProfileVersion

CREATED_AT = "2026-11-29T12:00:00Z"

# --- versions ------------------------------------------------------------------------------


class VersionSerializer(serializers.Serializer):
    number = serializers.IntegerField(help_text="1 for the profile's first version.")
    author = serializers.CharField(allow_null=True, help_text="Username of who made the change.")
    createdAt = serializers.DateTimeField()
    message = serializers.CharField(allow_blank=True)
    source = serializers.ChoiceField(ProfileVersion.Source.values)
    changeRequest = serializers.IntegerField(
        allow_null=True, help_text="The change request this version applied."
    )
    approvers = serializers.ListField(
        child=serializers.CharField(), help_text="Who approved the applied change request."
    )
    restoredFrom = serializers.IntegerField(allow_null=True)
    deleted = serializers.BooleanField(help_text="This version records the profile's deletion.")
    protectionBypassed = serializers.BooleanField(
        help_text="Written directly by staff in a protected environment (see the settings)."
    )


class VersionDetailSerializer(VersionSerializer):
    profile = ProfileSerializer(
        allow_null=True, help_text="The profile's SPEC §2 document with its rules (null: deleted)."
    )


# "from" is a Python keyword: declare the fields through the metaclass.
ChangeSerializer = type(
    "ChangeSerializer",
    (serializers.Serializer,),
    {
        "path": serializers.CharField(help_text="SPEC §2 path, e.g. rules.kb.maxItems."),
        "from": serializers.JSONField(allow_null=True, help_text="null: not given (default)."),
        "to": serializers.JSONField(allow_null=True),
    },
)


class DiffSerializer(serializers.Serializer):
    profile = serializers.CharField()
    fromVersion = serializers.IntegerField()
    toVersion = serializers.IntegerField()
    changes = ChangeSerializer(many=True)
    text = TextDiffSerializer(
        required=False, help_text="With `?scenario=`: the rendered texts and their diff."
    )


VERSION_EXAMPLE = response_example(
    "A version",
    {
        "number": 3,
        "author": "dana",
        "createdAt": CREATED_AT,
        "message": "Fewer KB articles",
        "source": "change-request",
        "changeRequest": 12,
        "approvers": ["lee"],
        "restoredFrom": None,
        "deleted": False,
        "protectionBypassed": False,
        "profile": {
            "key": "support-answer",
            "consumer": "support-assistant",
            "objective": "answer-ticket",
            "environment": "production",
            "budget": 1200,
            "rules": {"kb": {"mode": "retrieve", "maxItems": 3}},
        },
    },
)

DIFF_EXAMPLE = response_example(
    "What changed from version 2 to 3",
    {
        "profile": "support-answer",
        "fromVersion": 2,
        "toVersion": 3,
        "changes": [
            {"path": "budget", "from": 1000, "to": 1200},
            {"path": "rules.kb.maxItems", "from": 2, "to": 3},
            {"path": "rules.glossary", "from": None, "to": {"mode": "on-demand"}},
        ],
    },
)

CHANGE_REQUEST_REQUIRED_EXAMPLE = error_example(
    "Protected environment",
    409,
    "CHANGE_REQUEST_REQUIRED",
    'environment "production" requires a change request: profile "support-answer" '
    "changes only by applying an approved change request",
    "environment",
)


# --- environments --------------------------------------------------------------------------


class EnvironmentSerializer(serializers.Serializer):
    key = key_field()
    requiresChangeRequest = serializers.BooleanField(
        help_text="Profiles change only by applying approved change requests."
    )
    approvals = serializers.IntegerField(
        min_value=0, max_value=10, help_text="Approvals a change request needs (default 1)."
    )


class EnvironmentUpdateSerializer(serializers.Serializer):
    requiresChangeRequest = serializers.BooleanField(required=False)
    approvals = serializers.IntegerField(min_value=0, max_value=10, required=False)


ENVIRONMENT_EXAMPLE = OpenApiExample(
    "Production, protected",
    value={"key": "production", "requiresChangeRequest": True, "approvals": 1},
)

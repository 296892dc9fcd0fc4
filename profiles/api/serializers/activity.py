"""Shapes and examples of the activity log (``GET /api/v1/activity``), for the OpenAPI
schema."""

from rest_framework import serializers

from profiles.activity.filters import ACTIVITY_KINDS, ACTIVITY_ORIGINS
from profiles.api.serializers.examples import response_example
from profiles.api.serializers.versioning import ChangeSerializer
from profiles.models import Activity

AT = "2026-12-02T08:15:00Z"


class ActivitySerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="Grows with every write: the log's order.")
    at = serializers.DateTimeField()
    actor = serializers.CharField(
        allow_null=True,
        help_text="Username of whose change it is (an applied change request: its author); "
        "null: a command line's or a system's write.",
    )
    origin = serializers.ChoiceField(ACTIVITY_ORIGINS, help_text="The door the write came in.")
    changeRequest = serializers.IntegerField(
        allow_null=True, help_text="The change request whose apply wrote this."
    )
    kind = serializers.ChoiceField(ACTIVITY_KINDS)
    key = serializers.CharField(help_text="The entity's key (an item's: its layer's key).")
    path = serializers.CharField(required=False, help_text="An item's path in its layer.")
    op = serializers.ChoiceField(Activity.Op.values)
    fields = ChangeSerializer(
        many=True,
        help_text="Field by field, SPEC §2 paths; a text over 2,000 characters is cut, saying "
        "how many characters more it had.",
    )


class ActivityPageSerializer(serializers.Serializer):
    next = serializers.URLField(allow_null=True, help_text="The older rows (null: no more).")
    previous = serializers.URLField(allow_null=True, help_text="The newer rows (null: newest).")
    results = ActivitySerializer(many=True)


ACTIVITY_EXAMPLE = response_example(
    "A layer's filter removed, through a change request",
    {
        "next": "https://studio.example/api/v1/activity?kind=layer&key=tickets&before=311",
        "previous": None,
        "results": [
            {
                "id": 312,
                "at": AT,
                "actor": "dana",
                "origin": "change-request",
                "changeRequest": 14,
                "kind": "layer",
                "key": "tickets",
                "op": "update",
                "fields": [
                    {"path": "itemFilter.customer_id", "from": "customer_id", "to": None},
                ],
            },
            {
                "id": 298,
                "at": "2026-12-01T16:02:11Z",
                "actor": "lee",
                "origin": "api",
                "changeRequest": None,
                "kind": "item",
                "key": "tickets",
                "path": "T-1042.md",
                "op": "create",
                "fields": [{"path": "title", "from": None, "to": "Refund not received"}],
            },
        ],
    },
)

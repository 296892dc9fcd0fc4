"""The shape and example of a version diff's rendered text (``text``, with ``?scenario=``)."""

from rest_framework import serializers

from profiles.api.serializers.examples import response_example


class TextDiffSerializer(serializers.Serializer):
    scenario = serializers.CharField(help_text="The saved scenario both sides resolved.")
    before = serializers.CharField(
        allow_null=True, help_text="The rendered text (`output.text`) of `fromVersion`."
    )
    after = serializers.CharField(
        allow_null=True, help_text="The rendered text of `toVersion` (null: none, see below)."
    )
    diff = serializers.CharField(help_text="Unified diff of the two texts, line by line.")
    truncated = serializers.IntegerField(help_text="Diff lines left out beyond the bound.")
    beforeError = serializers.CharField(
        required=False, help_text="Why `before` is null (a deletion, a layer gone)."
    )
    afterError = serializers.CharField(required=False, help_text="Why `after` is null.")


DIFF_TEXT_EXAMPLE = response_example(
    "With the rendered text of a scenario (?scenario=)",
    {
        "profile": "support-answer",
        "fromVersion": 2,
        "toVersion": 3,
        "changes": [{"path": "rules.kb.maxItems", "from": 2, "to": 1}],
        "text": {
            "scenario": "Dana's card refund",
            "before": "## Knowledge base\n\nRefunds to cards take 5 days.\n\nCards "
            "abroad take 7 days.\n",
            "after": "## Knowledge base\n\nRefunds to cards take 5 days.\n",
            "diff": "--- version 2\n+++ version 3\n@@ -2,4 +2,2 @@\n \n Refunds to cards "
            "take 5 days.\n-\n-Cards abroad take 7 days.\n",
            "truncated": 0,
        },
    },
)

"""The fields of the workspace document (SPEC §2) and the model fields that store them.

The selectors read these columns, the mappers turn them into the document and back, and the
validation places an issue on the field it names: one vocabulary for the three of them.
"""

# The fields of a profile entry besides its rules, in SPEC §2 order (a diff of two versions
# lists them in this order); each is stored in the model field of the same name.
PROFILE_FIELDS = ("key", "name", "consumer", "objective", "environment", "budget", "description")

# Document field of a rule -> model field (currentness handled separately).
RULE_FIELDS = {
    "participation": "participation",
    "mode": "mode",
    "required": "required",
    "priority": "priority",
    "maxItems": "max_items",
    "maxTokens": "max_tokens",
    "order": "order",
    "facets": "facets",
}
CURRENTNESS_FIELDS = {
    "maxAgeDays": "currentness_max_age_days",
    "field": "currentness_field",
    "onStale": "currentness_on_stale",
    "onUnknown": "currentness_on_unknown",
}
RULE_MODEL_FIELDS = [*RULE_FIELDS.values(), *CURRENTNESS_FIELDS.values()]

"""The vocabulary of a workspace document (SPEC §2): its field names and patterns, defined once.

The validation checks documents against it; the Django app derives its model choices and
serializer fields from it.
"""

import re

KEY_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
FIELD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
RESERVED_FIELDS = ("ref", "title", "not-current")
BASE_FACETS = ("body", "summary", "excerpt")

TOP_FIELDS = ("version", "consumers", "layers", "profiles")
CONSUMER_FIELDS = ("key", "name", "render")
RENDER_FIELDS = ("format", "includeCurrentness")
LAYER_FIELDS = (
    "key",
    "name",
    "description",
    "availability",
    "appliesTo",
    "requiresInput",
    "itemFilter",
    "items",
)
APPLIES_FIELDS = ("objectives", "consumers")
ITEM_FIELDS = ("path", "title", "body", "metadata")
PROFILE_FIELDS = (
    "key",
    "name",
    "description",
    "consumer",
    "objective",
    "environment",
    "budget",
    "rules",
)
RULE_FIELDS = (
    "participation",
    "mode",
    "required",
    "priority",
    "maxItems",
    "maxTokens",
    "order",
    "facets",
    "currentness",
)
CURRENTNESS_FIELDS = ("maxAgeDays", "field", "onStale", "onUnknown")

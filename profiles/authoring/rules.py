"""The rule vocabulary, from the engine: a rule's fields by their workspace-document names,
their choices and what applies when one is not given.

Every door that shows a rule reads it from here: the studio's editor and history, the admin's
rule rows.
"""

from profiles.workspace.fields import CURRENTNESS_FIELDS, RULE_FIELDS
from profiles.workspace.mappers import canonical_string
from resolver.model import DEFAULT_RULE, MODES, ON_POLICIES, ORDERS, PARTICIPATIONS, Currentness

# Every rule field the editor shows, by its workspace-document name, in SPEC §2 order
# (participation … facets, then currentness.maxAgeDays … currentness.onUnknown).
RULE_FORM_FIELDS = (*RULE_FIELDS, *(f"currentness.{name}" for name in CURRENTNESS_FIELDS))
RULE_CHOICES = {
    "participation": PARTICIPATIONS,
    "mode": MODES,
    "required": ("true", "false"),
    "order": ORDERS,
    "currentness.onStale": ON_POLICIES,
    "currentness.onUnknown": ON_POLICIES,
}
_CURRENTNESS_DEFAULTS = Currentness(max_age_days=0)
# What applies when a field is not given (shown greyed, in brackets: "(auto)").
RULE_DEFAULT_HINTS = {
    "participation": DEFAULT_RULE.participation,
    "mode": DEFAULT_RULE.mode,
    "required": canonical_string(DEFAULT_RULE.required),
    "priority": canonical_string(DEFAULT_RULE.priority),
    "maxItems": "none",
    "maxTokens": "none",
    "order": "by mode",
    "facets": ", ".join(DEFAULT_RULE.facets),
    "currentness.maxAgeDays": "off",
    "currentness.field": _CURRENTNESS_DEFAULTS.field,
    "currentness.onStale": _CURRENTNESS_DEFAULTS.on_stale,
    "currentness.onUnknown": _CURRENTNESS_DEFAULTS.on_unknown,
}
# Model field -> the rule field's document name (max_items -> maxItems): what people read.
RULE_FIELD_BY_MODEL = {model: document for document, model in RULE_FIELDS.items()} | {
    model: f"currentness.{document}" for document, model in CURRENTNESS_FIELDS.items()
}
NUMERIC_RULE_FIELDS = ("priority", "maxItems", "maxTokens", "currentness.maxAgeDays")

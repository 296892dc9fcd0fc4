"""The rule fields as people read them, said the same way by every door: the document name of
each model field (``max_items`` is ``maxItems``) and what applies when a field is not given
(shown greyed, in brackets: "(auto)")."""

from profiles.workspace.mappers import CURRENTNESS_FIELDS, RULE_FIELDS, canonical_string
from resolver.model import DEFAULT_RULE, Currentness

_CURRENTNESS_DEFAULTS = Currentness(max_age_days=0)
# What applies when a field is not given, by the field's document name.
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

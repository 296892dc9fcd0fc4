"""Validation of workspace documents (SPEC §2): every error, in document order, with its path.

The same messages serve the CLI, the import, the API and the editor; ``build_workspace`` turns
a valid document into the typed model at the same time, so nothing is checked twice. The
validators of one entry (``validate_consumer``, ``validate_layer``, ``validate_item``,
``validate_profile``) run the same checks on a single entry, at the cost of that entry, for
writes that change one row; the checks between entries (duplicate keys and paths, two
profiles with the same selection) are then the caller's (database constraints).
"""

from collections.abc import Mapping

from resolver.errors import ValidationIssue
from resolver.limits import TEXT_RULE_MESSAGE, violates_text_rule
from resolver.model import Layer
from resolver.validation.entries import Workspace, _Builder, same_value
from resolver.validation.fields import (
    APPLIES_FIELDS,
    BASE_FACETS,
    CONSUMER_FIELDS,
    CURRENTNESS_FIELDS,
    FIELD_RE,
    ITEM_FIELDS,
    KEY_RE,
    LAYER_FIELDS,
    PROFILE_FIELDS,
    RENDER_FIELDS,
    RESERVED_FIELDS,
    RULE_FIELDS,
    TOP_FIELDS,
)
from resolver.validation.primitives import metadata_problem

__all__ = [
    "APPLIES_FIELDS",
    "BASE_FACETS",
    "CONSUMER_FIELDS",
    "CURRENTNESS_FIELDS",
    "FIELD_RE",
    "ITEM_FIELDS",
    "KEY_RE",
    "LAYER_FIELDS",
    "PROFILE_FIELDS",
    "RENDER_FIELDS",
    "RESERVED_FIELDS",
    "RULE_FIELDS",
    "TEXT_RULE_MESSAGE",
    "TOP_FIELDS",
    "Workspace",
    "build_workspace",
    "merge_rule",
    "metadata_problem",
    "same_value",
    "validate_consumer",
    "validate_item",
    "validate_layer",
    "validate_profile",
    "validate_workspace",
    "violates_text_rule",
]


def validate_workspace(document) -> list[ValidationIssue]:
    """Return every error of a workspace document, in document order ([] when valid)."""
    return _Builder(document).run()[1]


def build_workspace(
    document,
    *,
    first_only: bool = False,
    unchanged_layers: Mapping[str, Layer] | None = None,
    earlier_layers: Mapping[str, Layer] | None = None,
    served_layers: Mapping[str, int] | None = None,
) -> tuple[Workspace | None, list]:
    """Return ``(workspace, issues)``; the workspace is None when there is any issue.

    Two ways to build less, for a document that an earlier build saw in a previous version:

    * ``unchanged_layers`` maps layer keys to layers validated before (by an earlier build)
      that the caller knows are unchanged: a ``layers[]`` entry whose ``key`` is one of them
      is taken as that ``Layer`` without being read again. The checks between entries still
      count it (duplicate layer keys, rules naming a layer). The layer must be what building
      the entry would give; that is the caller's promise, not checked here.
    * ``earlier_layers`` maps layer keys to earlier versions of those layers: an item entry
      that would build exactly an earlier item of its layer (same path, title, body and
      metadata, compared with their types: ``1``, ``1.0`` and ``true`` differ) is taken as
      that earlier ``Item`` object without being validated again, and a layer whose fields
      and items all come out the same is the earlier ``Layer`` object itself. Duplicate
      paths are still reported.

    Either way the workspace, and the issues, are those of a build from scratch.

    ``served_layers`` maps the keys of served layers (``resolver.served``) to their item
    totals: their entries' ``items`` are not read, and each is built with no items and
    that ``total``.
    """
    builder = _Builder(document, first_only=first_only)
    builder.unchanged_layers = unchanged_layers or {}
    builder.earlier_layers = earlier_layers or {}
    builder.served_layers = served_layers or {}
    return builder.run()


def validate_consumer(document, *, path: str = "") -> list[ValidationIssue]:
    """Return every error of one consumer entry (paths under ``path``, e.g. ``consumers[2]``).

    The messages and paths are those ``validate_workspace`` gives for that entry; whether its
    key is unique is left to the caller.
    """
    return _Builder(None).entry(lambda builder: builder.consumer(document, path))


def validate_layer(document, *, path: str = "", items: bool = False) -> list[ValidationIssue]:
    """Return every error of one layer entry: its own fields, and its items when ``items``.

    Without ``items`` the ``items`` field is not looked at, so the cost is that of the layer's
    own fields. With it, duplicate paths within the layer are reported too; whether the
    layer's key is unique is left to the caller.
    """
    return _Builder(None).entry(lambda builder: builder.layer(document, path, items=items))


def validate_item(document, *, path: str = "") -> list[ValidationIssue]:
    """Return every error of one item entry (paths under ``path``, e.g. ``layers[0].items[3]``).

    Whether its path is unique within its layer is left to the caller.
    """
    return _Builder(None).entry(lambda builder: builder.item(document, path))


def validate_profile(
    document, *, path: str = "", layer_keys, consumer_keys
) -> list[ValidationIssue]:
    """Return every error of one profile entry with its rules.

    ``layer_keys`` and ``consumer_keys`` are the keys that exist (a rule for another layer,
    or another consumer, is an error). Whether the profile's key and its (consumer,
    objective, environment) are unique is left to the caller.
    """
    builder = _Builder(None)
    builder.layer_keys = _as_set(layer_keys)
    builder.consumer_keys = _as_set(consumer_keys)
    return builder.entry(lambda builder: builder.profile(document, path))


def merge_rule(saved: dict | None, partial: dict | None) -> dict | None:
    """Return the rule document that results from applying a partial edit to a saved rule.

    The fields ``partial`` gives replace the saved ones and a field given as None is removed
    (so it takes the default rule's value); a None ``partial`` means "back to the default
    rule" and returns None. ``saved`` is the saved rule document, None (or {}) for a layer
    that has no rule yet. The merge is shallow: a given ``currentness`` replaces the saved
    one as a whole. A ``partial`` that is not an object is returned as is, for the validator
    to report.
    """
    if partial is None:
        return None
    if not isinstance(partial, dict):
        return partial
    merged = {**(saved or {}), **partial}
    return {name: value for name, value in merged.items() if value is not None}


def _as_set(keys) -> set | frozenset:
    return keys if isinstance(keys, (set, frozenset)) else set(keys)

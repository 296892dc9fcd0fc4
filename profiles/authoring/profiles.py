"""Writes of profiles and their rules (SPEC §2 ``profiles[]``).

A rule write is a write of its profile: it locks the profile row, compares the profile's
ETag (which covers its rules), validates the profile entry with its rules — never the rest of
the workspace — and writes only the rule rows that change. Whether another profile has the
same selection (consumer, objective, environment) is the database's constraint, reported at
the profile's path like the engine would.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError
from django.db.models import CharField, Value
from django.db.models.functions import Cast, Concat

from profiles.models import Consumer, Layer, Profile, Rule
from profiles.versioning.versions import WriteOrigin, profile_versions_record
from profiles.workspace.concurrency import check_if_match, profile_etag, workspace_write
from profiles.workspace.fields import RULE_FIELDS
from profiles.workspace.mappers import (
    canonical_string,
    map_profile_to_resolver,
    map_profile_values,
    map_rule_values,
)
from profiles.workspace.selectors import layer_keys_list, profile_with_rules_get
from profiles.workspace.validation import MAX_LISTED_ISSUES, rules_merged, validate_profile
from profiles.workspace.writing import (
    EntryInvalid,
    assign,
    conflict_for,
    delete_row,
    raise_if_invalid,
    save_row,
    workspace_changed,
)
from resolver import ValidationIssue
from resolver.validation import KEY_RE

# Every field of a rule document set to None: merged with a partial rule, it replaces the rule.
RULE_CLEARED = dict.fromkeys((*RULE_FIELDS, "currentness"))


def _references(document: Any) -> tuple[dict[str, Layer], Consumer | None]:
    """Return the stored layers the entry's rules name and the consumer it names."""
    if not isinstance(document, dict):
        return {}, None
    rules = document.get("rules")
    # Only a well-formed key can name a stored row (the validator reports the others): a
    # name with a NUL or a lone surrogate would not even reach the database as a parameter.
    names = (
        [key for key in rules if isinstance(key, str) and KEY_RE.fullmatch(key)]
        if isinstance(rules, dict)
        else []
    )
    if len(names) > MAX_LISTED_ISSUES:
        # More rules than an error lists: ask only for the layers that exist (one query of
        # the keys, not one of 100,000 parameters); the validator reports the others.
        known = set(layer_keys_list())
        names = [name for name in names if name in known]
    layers = {layer.key: layer for layer in Layer.objects.filter(key__in=names)} if names else {}
    consumer_key = document.get("consumer")
    consumer = None
    if isinstance(consumer_key, str) and KEY_RE.fullmatch(consumer_key):
        consumer = Consumer.objects.filter(key=consumer_key).first()
    return layers, consumer


def _validated(document: dict, row: Profile) -> tuple[dict[str, Layer], Consumer]:
    """Validate a profile entry; return the layers of its rules and its consumer."""
    layers, consumer = _references(document)
    issues = validate_profile(
        document,
        layer_keys=list(layers),
        consumer_keys=[consumer.key] if consumer is not None else [],
    )
    raise_if_invalid(issues, row)
    return layers, consumer


def _profile_values(document: dict, consumer: Consumer) -> dict:
    values = map_profile_values(document)
    values.pop("consumer")
    return values | {"consumer_id": consumer.pk}


def _write_rules(profile: Profile, stored: list[Rule], wanted: dict, layers, *, user) -> bool:
    """Make the profile's rule rows equal ``wanted`` (layer key -> rule document).

    Only rows that change are written (with history); a new rule is placed after the others.
    ``profile.workspace_rules`` becomes the rules as saved. Return whether anything changed.
    """
    by_key = {rule.layer.key: rule for rule in stored}
    changed = False
    for layer_key, rule in by_key.items():
        if layer_key not in wanted:
            delete_row(rule, user=user)
            changed = True
    next_position = max((rule.position for rule in stored), default=-1) + 1
    saved = []
    for layer_key, document in wanted.items():
        rule = by_key.get(layer_key)
        if rule is None:
            rule = Rule(profile=profile, layer=layers[layer_key], position=next_position)
            next_position += 1
        if assign(rule, map_rule_values(document)) or rule.pk is None:
            save_row(rule, user=user)
            changed = True
        saved.append(rule)
    profile.workspace_rules = sorted(saved, key=lambda rule: (rule.position, rule.pk))
    return changed


def _save(
    profile: Profile,
    stored_rules: list[Rule],
    document: dict,
    *,
    user,
    origin: WriteOrigin | None,
) -> None:
    """Validate the profile's new entry and write what changed (fields, then rules)."""
    layers, consumer = _validated(document, profile)
    wanted = {canonical_string(key): rule for key, rule in (document.get("rules") or {}).items()}
    fields_changed = assign(profile, _profile_values(document, consumer))
    profile.consumer = consumer
    # Rows and their history name the change's author: an applied change request is its
    # requester's (as its version says), whoever pressed Apply.
    row_author = origin.author if origin is not None and origin.author is not None else user
    if fields_changed or profile.pk is None:
        save_row(profile, user=row_author)
    rules_changed = _write_rules(profile, stored_rules, wanted, layers, user=row_author)
    if fields_changed or rules_changed:
        workspace_changed(profiles=True)
        # Safe change: the new version; raises (rolling back) in a protected environment.
        profile_versions_record(keys=[profile.key], user=user, origin=origin)


def _entry(profile: Profile) -> dict:
    rules = profile.workspace_rules
    return map_profile_to_resolver(
        profile,
        rules,
        consumer_key=profile.consumer.key,
        layer_keys={rule.layer_id: rule.layer.key for rule in rules},
    )


# What a new profile's rules start from: every layer on the default rule (inline, unbounded),
# no layer (each one excluded), only the layers named, or the rules of another profile.
START_KINDS = ("default", "none", "layers", "copy")
EXCLUDED = {"participation": "exclude"}


@dataclass(frozen=True)
class StartFrom:
    """Where a new profile's rules come from (``kind`` is one of ``START_KINDS``).

    ``layers`` are the layers a ``"layers"`` start keeps on the default rule (every other
    one is excluded); ``profile`` is the key of the profile a ``"copy"`` start copies.
    """

    kind: str = "default"
    layers: tuple[str, ...] = ()
    profile: str | None = None


def _start_issue(row: Profile, path: str, message: str) -> EntryInvalid:
    return EntryInvalid.at([ValidationIssue(f"startFrom.{path}", message)], row)


def profile_starting_rules(start: StartFrom, *, row: Profile | None = None) -> dict:
    """Return the rules (layer key -> rule) a new profile gets from ``start``.

    Raise ``EntryInvalid`` at ``startFrom.<field>`` of ``row``'s entry (a new profile by
    default) for an unknown kind, layer or profile.
    """
    row = row if row is not None else Profile()
    if start.kind not in START_KINDS:
        raise _start_issue(
            row, "kind", f"must be one of {', '.join(START_KINDS)} (got {start.kind})"
        )
    if start.kind == "default":
        return {}
    if start.kind == "copy":
        try:
            source = profile_with_rules_get(key=str(start.profile or ""))
        except Profile.DoesNotExist:
            raise _start_issue(row, "profile", f'no profile "{start.profile}" to copy') from None
        return dict(_entry(source).get("rules") or {})
    layer_keys = layer_keys_list()
    unknown = [key for key in start.layers if key not in layer_keys]
    if unknown:
        index = start.layers.index(unknown[0])
        raise _start_issue(row, f"layers[{index}]", f'no layer "{unknown[0]}"')
    kept = set(start.layers) if start.kind == "layers" else set()
    return {key: dict(EXCLUDED) for key in layer_keys if key not in kept}


def profile_create(
    *,
    document: dict,
    start_from: StartFrom | None = None,
    user=None,
    origin: WriteOrigin | None = None,
) -> Profile:
    """Create a profile with the rules its entry gives, or those ``start_from`` gives; raise
    ``EntryInvalid`` (the engine's issues, a selection another profile has, an unknown
    layer or profile to start from) or ``Conflict`` (the key is taken)."""
    profile = Profile()
    try:
        with workspace_write():
            if start_from is not None:
                document = {**document, "rules": profile_starting_rules(start_from, row=profile)}
            _save(profile, [], document, user=user, origin=origin)
    except IntegrityError as exc:
        raise conflict_for(profile) from exc
    return profile


def profile_update(
    *,
    key: str,
    changes: dict,
    replace: bool = False,
    user=None,
    if_match: str | None = None,
    origin: WriteOrigin | None = None,
) -> Profile:
    """Change a profile: ``changes`` replace the entry's top-level fields (None: back to the
    default) and ``changes["rules"]`` replaces the rule of each layer it names (None: the
    default rule), keeping the others. With ``replace``, ``changes`` is the whole entry.
    Raise ``Profile.DoesNotExist``, ``PreconditionFailed``, ``EntryInvalid`` or ``Conflict``."""
    profile = None
    try:
        with workspace_write():
            profile = profile_with_rules_get(key=key, lock=True)
            check_if_match(if_match, profile_etag(profile, profile.workspace_rules))
            if replace:
                document = {"key": key, **changes}
            else:
                entry = _entry(profile)
                document = {**entry, **{k: v for k, v in changes.items() if k != "rules"}}
                rules = changes.get("rules")
                if isinstance(rules, dict):
                    combined = dict(entry.get("rules") or {})
                    for layer_key, rule in rules.items():
                        if rule is None:
                            combined.pop(layer_key, None)
                        else:
                            combined[layer_key] = rule
                    document["rules"] = combined
                elif "rules" in changes:
                    document["rules"] = rules  # not an object: the validator says so
            _save(profile, profile.workspace_rules, document, user=user, origin=origin)
    except IntegrityError as exc:
        raise conflict_for(profile) from exc
    return profile


def profile_delete(
    *, key: str, user=None, if_match: str | None = None, origin: WriteOrigin | None = None
) -> None:
    """Delete a profile with its rules and scenarios; raise ``PreconditionFailed`` if stale."""
    with workspace_write():
        profile = profile_with_rules_get(key=key, lock=True)
        check_if_match(if_match, profile_etag(profile, profile.workspace_rules))
        delete_row(profile, user=origin.author if origin and origin.author else user)
        workspace_changed(profiles=True)
        # Records the deletion, or refuses it.
        profile_versions_record(keys=[key], user=user, origin=origin)


# The fields that select a profile (SPEC §3): no two profiles have the same three values.
SELECTION_FIELDS = ("consumer", "objective", "environment")
PARKED_PREFIX = "parked-"


def profiles_park(*, ids) -> None:
    """Give the profiles ``ids`` a selection no profile can have (the objective
    ``parked-<id>``), so that profiles written after them in the same transaction may take
    their selections (a swap, or a new profile taking a freed one).

    Each parked profile must then be written with its whole selection before the
    transaction commits: its stored objective no longer says what it was. A queryset update,
    so no history records the parked value.
    """
    Profile.objects.filter(pk__in=list(ids)).update(
        objective=Concat(Value(PARKED_PREFIX), Cast("id", CharField()))
    )


def profile_selections_park(*, changes: dict[str, dict]) -> dict[str, dict]:
    """Before several profile updates written one by one in one transaction (a change set):
    park the stored profiles whose selection the updates change (``changes``: profile key ->
    the fields its update gives, None removing one), and return the whole selection
    (consumer, objective, environment) each parked profile's update must give, since its row
    no longer holds them. Profiles not stored are left to their update to refuse."""
    keys = [key for key, value in changes.items() if isinstance(value, dict)]
    rows = Profile.objects.filter(key__in=keys).select_related("consumer").order_by("pk")
    selections, parked = {}, []
    for row in rows:
        stored = {
            "consumer": row.consumer.key,
            "objective": row.objective,
            "environment": row.environment,
        }
        value = changes[row.key]
        after = stored | {name: value[name] for name in SELECTION_FIELDS if name in value}
        if after != stored:
            selections[row.key] = after
            parked.append(row.pk)
    if parked:
        profiles_park(ids=parked)
    return selections


def profile_write_document(
    *,
    key: str,
    document: dict,
    user,
    if_match: str | None = None,
    check: Callable[[], None] | None = None,
    origin: WriteOrigin | None = None,
) -> None:
    """Make the stored profile ``key`` equal ``document`` (creating it when missing).

    A restore and an applied change request write so: through ``profile_update`` or
    ``profile_create`` (validation, history, protection, one version). ``check()`` runs under
    the writers' lock before anything is read. Raises ``PreconditionFailed`` for a stale
    ``if_match`` and ``EntryInvalid`` when invalid.
    """
    with workspace_write():
        if check is not None:
            check()
        if Profile.objects.filter(key=key).exists():
            profile_update(
                key=key,
                changes={name: value for name, value in document.items() if name != "key"},
                replace=True,
                user=user,
                if_match=if_match,
                origin=origin,
            )
        else:
            profile_create(document={**document, "key": key}, user=user, origin=origin)


def profile_save_rules(
    *,
    profile: Profile | str,
    rules: dict,
    budget: int | None = None,
    user=None,
    if_match: str | None = None,
    origin: WriteOrigin | None = None,
) -> Profile:
    """Save edits of one profile's rules (and budget), as the editor's draft shows them.

    ``rules`` has the meaning of ``CompiledWorkspace.with_profile_draft``: layer key ->
    partial rule whose given fields replace the saved ones (None removes a field), or None
    for the default rule; layers not named keep their rule. Raises ``PreconditionFailed``
    when ``if_match`` is stale and ``EntryInvalid`` (engine messages at the document path,
    e.g. ``profiles[0].rules.kb.mode``) when invalid; then nothing is written.
    """
    key = profile.key if isinstance(profile, Profile) else str(profile)
    with workspace_write():
        stored = profile_with_rules_get(key=key, lock=True)
        check_if_match(if_match, profile_etag(stored, stored.workspace_rules))
        document = _entry(stored)
        # A partial rule that is not an object is kept for the validator to report.
        document["rules"] = rules_merged(document.get("rules"), rules or {})
        if budget is not None:
            document["budget"] = budget
        _save(stored, stored.workspace_rules, document, user=user, origin=origin)
    return stored


def rule_update(
    *,
    profile: str,
    layer: str,
    changes: dict,
    replace: bool = False,
    user=None,
    if_match: str | None = None,
    origin: WriteOrigin | None = None,
) -> Profile:
    """Change the profile's rule for one layer: the given fields replace the rule's (None:
    back to the default); with ``replace`` they are the whole rule. Return the profile."""
    partial = {**RULE_CLEARED, **changes} if replace else changes
    return profile_save_rules(
        profile=profile, rules={layer: partial}, user=user, if_match=if_match, origin=origin
    )


def rule_delete(
    *,
    profile: str,
    layer: str,
    user=None,
    if_match: str | None = None,
    origin: WriteOrigin | None = None,
) -> Profile:
    """Put one layer of the profile back on the default rule. Return the profile."""
    return profile_save_rules(
        profile=profile, rules={layer: None}, user=user, if_match=if_match, origin=origin
    )

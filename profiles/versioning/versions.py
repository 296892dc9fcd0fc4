"""Profile versions: every saved change of a profile or its rules appends an immutable snapshot.

A version holds the profile's SPEC §2 document with its rules, its number (from 1, per
profile key), author, time and message. Nothing ever edits or deletes a version: a restore
appends a new one equal to the old, a deletion appends one without a document.

Every write of a profile or its rules calls ``profile_versions_record`` inside its transaction,
after writing. That one call compares the stored profile with its latest version, refuses
the write when a protected environment requires a change request
(``profiles.versioning.environments``; raising rolls the write back) and appends the new
version. Its ``origin`` (a ``WriteOrigin``, which every profile write takes and passes down)
says on whose behalf the change is made: a user's own write by default, an applied change
request, a restore, an operator's reset.
"""

import json
import unicodedata
from collections.abc import Iterable

from django.db.models import F, Max, Prefetch, Window

from profiles.activity.records import activity_record_many
from profiles.models import Profile, ProfileVersion, Rule
from profiles.notifications.webhooks import profile_version_event, webhook_events_emit
from profiles.versioning.environments import protected_environments, protected_write_check
from profiles.workspace.entity_changes import EntityChange
from profiles.workspace.fields import CURRENTNESS_FIELDS, PROFILE_FIELDS, RULE_FIELDS
from profiles.workspace.mappers import map_profile_to_resolver
from profiles.workspace.origin import WriteOrigin

RULE_DOCUMENT_FIELDS = (*RULE_FIELDS, "currentness")

# A version's message: why the change was made, in the author's words (History shows it).
VERSION_MESSAGE_MAX = 500


class VersionConflict(Exception):
    """The profile's latest version is not the one the write was based on."""

    def __init__(self, profile_key: str, expected: int | None, actual: int | None):
        self.profile_key = profile_key
        self.expected = expected
        self.actual = actual
        super().__init__(
            f'profile "{profile_key}" is at version {actual}, not at version {expected}'
        )


def version_message_error(message: str) -> str | None:
    """Return why ``message`` cannot be a version's message, or None when it can: one line of
    at most ``VERSION_MESSAGE_MAX`` characters, without control characters (a NUL, a line
    break) or lone surrogates, which PostgreSQL or the History table could not hold."""
    if len(message) > VERSION_MESSAGE_MAX:
        return f"at most {VERSION_MESSAGE_MAX} characters ({len(message)} given)"
    for character in message:
        category = unicodedata.category(character)
        if category in ("Cc", "Cs"):
            what = "a control character" if category == "Cc" else "a lone surrogate"
            return f"must not contain {what} (U+{ord(character):04X})"
    return None


# --- reading -----------------------------------------------------------------------------


def profile_documents_get(keys: Iterable[str]) -> dict[str, dict]:
    """Return the stored SPEC §2 document (with rules) of each existing profile, in 2 queries."""
    rules = Rule.objects.select_related("layer").order_by("position", "id")
    profiles = (
        Profile.objects.filter(key__in=list(keys))
        .select_related("consumer")
        .prefetch_related(Prefetch("rules", queryset=rules, to_attr="version_rules"))
    )
    documents = {}
    for profile in profiles:
        layer_keys = {rule.layer_id: rule.layer.key for rule in profile.version_rules}
        documents[profile.key] = map_profile_to_resolver(
            profile, profile.version_rules, consumer_key=profile.consumer.key, layer_keys=layer_keys
        )
    return documents


def latest_versions_get(keys: Iterable[str]) -> dict[str, ProfileVersion]:
    """Return the latest version of each profile key that has versions, in one query."""
    keys = list(keys)
    if not keys:
        return {}
    if len(keys) == 1:
        latest = ProfileVersion.objects.filter(profile_key=keys[0]).order_by("-number").first()
        return {} if latest is None else {latest.profile_key: latest}
    rows = (
        ProfileVersion.objects.filter(profile_key__in=keys)
        .annotate(top=Window(Max("number"), partition_by=[F("profile_key")]))
        .filter(number=F("top"))
    )
    return {version.profile_key: version for version in rows}


def version_list(*, profile_key: str):
    """Return a queryset of the profile's versions, newest first."""
    return (
        ProfileVersion.objects.filter(profile_key=profile_key)
        .select_related("author", "change_request")
        .order_by("-number")
    )


def version_get(*, profile_key: str, number: int) -> ProfileVersion:
    """Return one version; raise ProfileVersion.DoesNotExist."""
    return ProfileVersion.objects.select_related("author", "change_request").get(
        profile_key=profile_key, number=number
    )


def version_before(*, profile_key: str, number: int) -> ProfileVersion | None:
    """Return the version just before ``number`` (None: ``number`` is the first), one query."""
    return (
        ProfileVersion.objects.filter(profile_key=profile_key, number__lt=number)
        .order_by("-number")
        .first()
    )


def profile_version_number(*, profile_key: str) -> int | None:
    """Return the number of the profile's latest version (None: it has none)."""
    latest = latest_versions_get([profile_key]).get(profile_key)
    return None if latest is None else latest.number


# --- recording ---------------------------------------------------------------------------


def _same(before, after) -> bool:
    return json.dumps(before, sort_keys=True) == json.dumps(after, sort_keys=True)


def profile_versions_record(
    *, keys: Iterable[str], user=None, origin: WriteOrigin | None = None
) -> list[ProfileVersion]:
    """Append a version for each of these profiles whose document changed; call it inside
    the write's transaction, after writing.

    Raises ``ChangeRequestRequired`` (the caller's transaction rolls back) when a profile
    was, or now is, in a protected environment and the write is neither the application of
    that profile's change request nor a permitted staff bypass; raises ``VersionConflict``
    when ``origin.expected_versions`` names a version that is no longer the latest.
    ``origin`` says on whose behalf the change is made (None: the user's own write). Costs
    four queries whatever the number of profiles, plus one per new version.
    """
    keys = list(dict.fromkeys(keys))
    if not keys:
        return []
    origin = origin or WriteOrigin()
    documents = profile_documents_get(keys)
    latest = latest_versions_get(keys)
    changed = []
    for key in keys:
        previous = latest.get(key)
        before = previous.document if previous is not None else None
        after = documents.get(key)
        if (previous is None and after is None) or _same(before, after):
            continue
        changed.append((key, previous, before, after))
    if not changed:
        return []
    environments = {
        document.get("environment")
        for _, _, before, after in changed
        for document in (before, after)
        if document
    }
    protected = protected_environments(environments)
    author = origin.author if origin.author is not None else user
    if not getattr(author, "is_authenticated", False):
        author = None
    versions = []
    for key, previous, before, after in changed:
        number = previous.number if previous is not None else None
        if key in origin.expected_versions and origin.expected_versions[key] != number:
            raise VersionConflict(key, origin.expected_versions[key], number)
        bypassed = protected_write_check(
            profile_key=key,
            environments={(document or {}).get("environment") for document in (before, after)},
            protected=protected,
            user=user,
            change_request=origin.change_request,
            operator_action=origin.operator_action,
        )
        versions.append(
            ProfileVersion(
                profile_key=key,
                number=(number or 0) + 1,
                author=author,
                message=origin.message,
                document=after,
                source=origin.source,
                door=origin.door,
                change_request=origin.change_request,
                approvers=list(origin.approvers),
                restored_from=origin.restored_from,
                protection_bypassed=bypassed,
            )
        )
    ProfileVersion.objects.bulk_create(versions)
    # The activity log: a profile's fields and rules change only where its version is
    # recorded, so this is where every door's profile writes are logged, once.
    activity_record_many(
        [EntityChange("profile", key, before, after) for key, _, before, after in changed],
        user=user,
        origin=origin,
    )
    for version in versions:
        if version.document is not None:
            Profile.objects.filter(key=version.profile_key).update(version=version.number)
    webhook_events_emit("profile_version.created", [profile_version_event(v) for v in versions])
    return versions


# --- diff --------------------------------------------------------------------------------


def _change(path: str, before, after) -> dict:
    return {"path": path, "from": before, "to": after}


def _rule_changes(layer: str, before: dict, after: dict) -> list[dict]:
    changes = []
    for name in RULE_DOCUMENT_FIELDS:
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        if name == "currentness" and isinstance(old, dict) and isinstance(new, dict):
            for part in CURRENTNESS_FIELDS:
                if old.get(part) != new.get(part):
                    changes.append(
                        _change(f"rules.{layer}.currentness.{part}", old.get(part), new.get(part))
                    )
            continue
        changes.append(_change(f"rules.{layer}.{name}", old, new))
    return changes


def document_changes(before: dict | None, after: dict | None) -> list[dict]:
    """Return what differs between two profile documents, as ``{"path", "from", "to"}``.

    Paths use SPEC §2 names (``budget``, ``rules.kb.maxItems``,
    ``rules.kb.currentness.maxAgeDays``); ``null`` is "not given" (the default applies). A
    rule added or removed as a whole is one change at ``rules.<layer>``. Layers are listed
    by key, so the result does not depend on how the database orders JSON keys.
    """
    before = before or {}
    after = after or {}
    changes = [
        _change(name, before.get(name), after.get(name))
        for name in PROFILE_FIELDS
        if before.get(name) != after.get(name)
    ]
    old_rules = before.get("rules") or {}
    new_rules = after.get("rules") or {}
    for layer in sorted({*old_rules, *new_rules}):
        if layer not in old_rules:
            changes.append(_change(f"rules.{layer}", None, new_rules[layer]))
        elif layer not in new_rules:
            changes.append(_change(f"rules.{layer}", old_rules[layer], None))
        else:
            changes.extend(_rule_changes(layer, old_rules[layer], new_rules[layer]))
    return changes

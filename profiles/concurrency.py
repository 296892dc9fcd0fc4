"""Optimistic concurrency: ETags of profiles, layers and items, and guarded writes.

An ETag is a hash of the object's document form (SPEC §2), so it changes with any edit that
matters, however it was made (editor, API, admin, import). A writer sends the ETag it read
(``If-Match``); a stale one means someone else saved first and the write is refused.
"""

from django.db import transaction

from profiles.mappers import (
    map_item_to_resolver,
    map_layer_to_resolver,
    map_profile_to_resolver,
)
from profiles.models import Item, Layer, Profile
from profiles.services import document_etag, profile_save_rules


class PreconditionFailed(Exception):
    """The object changed since the client read it (stale ``If-Match``)."""

    def __init__(self, current_etag: str):
        super().__init__("someone else saved this first; reload to see their change")
        self.current_etag = current_etag


def profile_etag(profile: Profile, rules=None) -> str:
    """Return the ETag of a profile with its rules (``rules`` avoids a query when loaded)."""
    rules = list(profile.rules.select_related("layer")) if rules is None else rules
    layer_keys = {rule.layer_id: rule.layer.key for rule in rules}
    return document_etag(
        map_profile_to_resolver(
            profile, rules, consumer_key=profile.consumer.key, layer_keys=layer_keys
        )
    )


def layer_etag(layer: Layer) -> str:
    """Return the ETag of a layer's own fields (its items have their own ETags)."""
    document = map_layer_to_resolver(layer, [])
    document.pop("items", None)
    return document_etag(document)


def item_etag(item: Item) -> str:
    return document_etag(map_item_to_resolver(item))


def etag_matches(if_match: str | None, current: str) -> bool:
    """Return whether an ``If-Match`` header value admits the current ETag (None = no check)."""
    if if_match is None:
        return True
    candidates = [part.strip() for part in if_match.split(",")]
    return "*" in candidates or current in candidates or current.strip('"') in candidates


def profile_save_rules_checked(
    *, profile: Profile | str, rules: dict, budget: int | None = None, user=None, if_match=None
) -> Profile:
    """Save rule edits like ``profile_save_rules``, refusing them when ``if_match`` is stale.

    The profile row is locked while the ETag is compared and the edits are written, so two
    concurrent saves based on the same version cannot both apply.
    """
    key = profile.key if isinstance(profile, Profile) else str(profile)
    with transaction.atomic():
        locked = Profile.objects.select_for_update().select_related("consumer").get(key=key)
        current = profile_etag(locked)
        if not etag_matches(if_match, current):
            raise PreconditionFailed(current)
        return profile_save_rules(profile=locked, rules=rules, budget=budget, user=user)

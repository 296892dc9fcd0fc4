"""ORM reads. Every selector loads what it returns up front, in a constant number of queries."""

from dataclasses import dataclass

from django.db.models import Prefetch

from profiles.models import Consumer, Item, Layer, Profile, Rule, Scenario


@dataclass
class WorkspaceRows:
    """Every row of the workspace, in document order, with items and rules attached.

    ``layers[i].workspace_items`` and ``profiles[i].workspace_rules`` are plain lists, so the
    mapper (and a form substituting an edited object) never touches the database again.
    """

    consumers: list[Consumer]
    layers: list[Layer]
    profiles: list[Profile]


def workspace_rows_get() -> WorkspaceRows:
    """Return the whole workspace in five queries, whatever its size."""
    consumers = list(Consumer.objects.order_by("position", "id"))
    consumers_by_id = {consumer.pk: consumer for consumer in consumers}
    layers = list(
        Layer.objects.order_by("position", "id").prefetch_related(
            Prefetch(
                "items",
                queryset=Item.objects.order_by("position", "id"),
                to_attr="workspace_items",
            )
        )
    )
    layers_by_id = {layer.pk: layer for layer in layers}
    profiles = list(
        Profile.objects.order_by("position", "id").prefetch_related(
            Prefetch(
                "rules",
                queryset=Rule.objects.order_by("position", "id"),
                to_attr="workspace_rules",
            )
        )
    )
    # Attach the related rows already loaded instead of joining them again per row.
    for profile in profiles:
        profile.consumer = consumers_by_id[profile.consumer_id]
        for rule in profile.workspace_rules:
            rule.layer = layers_by_id[rule.layer_id]
            rule.profile = profile
    for layer in layers:
        for item in layer.workspace_items:
            item.layer = layer
    return WorkspaceRows(consumers=consumers, layers=layers, profiles=profiles)


def profile_get(*, key: str) -> Profile:
    """Return the profile with this key (with its consumer); raise Profile.DoesNotExist."""
    return Profile.objects.select_related("consumer").get(key=key)


def profile_list() -> list[Profile]:
    """Return every profile with its consumer, in document order."""
    return list(Profile.objects.select_related("consumer").order_by("position", "id"))


def scenario_list(*, profile: Profile | None = None) -> list[Scenario]:
    """Return the scenarios (of one profile when given), the default one first."""
    queryset = Scenario.objects.select_related("profile")
    if profile is not None:
        queryset = queryset.filter(profile=profile)
    return list(queryset.order_by("profile__position", "-is_default", "name"))


def scenario_get_default(*, profile: Profile) -> Scenario | None:
    """Return the profile's default scenario, else its first scenario, else None."""
    return (
        Scenario.objects.select_related("profile")
        .filter(profile=profile)
        .order_by("-is_default", "name")
        .first()
    )

"""ORM reads. Every selector loads what it returns up front, in a constant number of queries."""

import functools
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.db import (
    DEFAULT_DB_ALIAS,
    InterfaceError,
    NotSupportedError,
    OperationalError,
    connections,
)
from django.db.models import Count, OuterRef, Prefetch, Q, QuerySet, Subquery

from profiles.models import Consumer, Item, Layer, Profile, Rule, Scenario, WorkspaceVersion
from profiles.workspace.fields import RULE_MODEL_FIELDS


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


def document_index(row) -> int:
    """Return the index of a row's entry in the workspace document (its siblings before it).

    A row not saved yet is appended: its index is the number of siblings.
    """
    model = type(row)
    siblings = model.objects.all()
    if isinstance(row, Item):
        siblings = siblings.filter(layer_id=row.layer_id)
    if row.pk is None:
        return siblings.count()
    return siblings.filter(
        Q(position__lt=row.position) | Q(position=row.position, pk__lt=row.pk)
    ).count()


def entry_path(row) -> str:
    """Return the document path of a row's entry: ``layers[2]``, ``layers[2].items[7]``…"""
    if isinstance(row, Item):
        layer = Layer.objects.get(pk=row.layer_id)
        return f"{entry_path(layer)}.items[{document_index(row)}]"
    section = {Consumer: "consumers", Layer: "layers", Profile: "profiles"}[type(row)]
    return f"{section}[{document_index(row)}]"


def found_or_none(get, /, **lookup):
    """Return ``get(**lookup)``, or None where the getter finds nothing (it returns None or
    raises its model's ``DoesNotExist``): what every door's "or 404" starts from."""
    try:
        return get(**lookup)
    except ObjectDoesNotExist:
        return None


def consumer_get(*, key: str, lock: bool = False) -> Consumer:
    """Return the consumer with this key; raise Consumer.DoesNotExist."""
    queryset = Consumer.objects.select_for_update() if lock else Consumer.objects
    return queryset.get(key=key)


def layer_get(*, key: str, lock: bool = False) -> Layer:
    """Return the layer with this key; raise Layer.DoesNotExist."""
    queryset = Layer.objects.select_for_update() if lock else Layer.objects
    return queryset.get(key=key)


def item_get(*, layer: Layer, path: str, lock: bool = False) -> Item:
    """Return the item of this layer at ``path`` (with its layer attached)."""
    queryset = Item.objects.select_for_update() if lock else Item.objects
    item = queryset.get(layer_id=layer.pk, path=path)
    item.layer = layer
    return item


def profile_with_rules_get(*, key: str, lock: bool = False) -> Profile:
    """Return the profile with its consumer and its rules (each with its layer) loaded.

    ``profile.workspace_rules`` lists the rules in document order. Three queries.
    """
    queryset = Profile.objects.select_related("consumer")
    if lock:
        queryset = queryset.select_for_update(of=("self",))
    profile = queryset.get(key=key)
    profile.workspace_rules = list(
        Rule.objects.filter(profile_id=profile.pk)
        .select_related("layer")
        .order_by("position", "id")
    )
    return profile


# --- lists of the API (querysets: the API paginates and filters them) ----------------------


def consumer_list() -> QuerySet[Consumer]:
    """Return the consumers in document order."""
    return Consumer.objects.order_by("position", "id")


def layer_list() -> QuerySet[Layer]:
    """Return the layers in document order, each with ``item_count``."""
    return Layer.objects.annotate(item_count=Count("items")).order_by("position", "id")


def item_list(*, layer: Layer) -> QuerySet[Item]:
    """Return the items of a layer in document order."""
    return Item.objects.filter(layer=layer).order_by("position", "id")


def profile_list() -> QuerySet[Profile]:
    """Return the profiles in document order with their consumer and ``workspace_rules``."""
    return (
        Profile.objects.select_related("consumer")
        .prefetch_related(
            Prefetch(
                "rules",
                queryset=Rule.objects.select_related("layer").order_by("position", "id"),
                to_attr="workspace_rules",
            )
        )
        .order_by("position", "id")
    )


def scenario_list_all() -> QuerySet[Scenario]:
    """Return every scenario with its profile, by profile, the default one first."""
    return Scenario.objects.select_related("profile").order_by(
        "profile__position", "-is_default", "name"
    )


def layer_keys_list() -> list[str]:
    """Return every layer key (the rules of a profile may only name these)."""
    return list(Layer.objects.values_list("key", flat=True))


def consumer_keys_list() -> list[str]:
    """Return every consumer key (a profile may only name these)."""
    return list(Consumer.objects.values_list("key", flat=True))


def row_duplicate_get(instance) -> tuple[str, str | None] | None:
    """Return which unique value of ``instance`` another stored row already has, or None.

    As ``(what, other)``: ``("key", None)`` for a consumer, layer or profile; for a profile
    ``("selection", the other profile's key)`` (its consumer, objective and environment);
    ``("path", None)`` for an item in its layer, ``("name", None)`` for a scenario and
    ``("layer", None)`` for a rule in its profile.
    """
    model = type(instance)
    others = model.objects.exclude(pk=instance.pk) if instance.pk else model.objects.all()
    if isinstance(instance, Consumer | Layer | Profile) and (
        others.filter(key=instance.key).exists()
    ):
        return "key", None
    if isinstance(instance, Profile) and instance.consumer_id:
        taken = (
            others.filter(
                consumer_id=instance.consumer_id,
                objective=instance.objective,
                environment=instance.environment,
            )
            .values_list("key", flat=True)
            .first()
        )
        return None if taken is None else ("selection", taken)
    if (
        isinstance(instance, Item)
        and instance.layer_id
        and others.filter(layer_id=instance.layer_id, path=instance.path).exists()
    ):
        return "path", None
    if isinstance(instance, Scenario) and others.filter(name=instance.name).exists():
        return "name", None
    if (
        isinstance(instance, Rule)
        and instance.profile_id
        and instance.layer_id
        and others.filter(profile_id=instance.profile_id, layer_id=instance.layer_id).exists()
    ):
        return "layer", None
    return None


def scenario_get(*, name: str, lock: bool = False) -> Scenario:
    """Return the scenario with this name (with its profile); raise Scenario.DoesNotExist."""
    queryset = Scenario.objects.select_related("profile")
    if lock:
        queryset = queryset.select_for_update(of=("self",))
    return queryset.get(name=name)


def scenario_of_profile_get(*, profile: Profile, scenario_id) -> Scenario | None:
    """Return the profile's scenario with this id, or None (for any id, even "abc")."""
    try:
        scenario_id = int(str(scenario_id))
    except (TypeError, ValueError):
        return None
    return Scenario.objects.filter(pk=scenario_id, profile=profile).first()


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


# --- rows as values (export, the compiled-workspace cache) ------------------------------------

CONSUMER_COLUMNS = ("id", "key", "name", "render_format", "include_currentness")
LAYER_COLUMNS = (
    "id",
    "key",
    "name",
    "description",
    "availability",
    "applies_to_objectives",
    "applies_to_consumers",
    "requires_input",
    "item_filter",
)
ITEM_COLUMNS = ("layer_id", "path", "title", "body", "metadata")
PROFILE_COLUMNS = (
    "id",
    "key",
    "name",
    "consumer_id",
    "objective",
    "environment",
    "budget",
    "description",
    "version",  # the latest profile version's number (safe change; not in the document)
)


@dataclass
class WorkspaceSections:
    """The small sections of the workspace as named value rows (no model instances).

    ``rules`` maps a profile id to its rules in document order. Items are read separately
    (``item_values_iterate``): they are the bulk.
    """

    consumers: list
    layers: list
    profiles: list
    rules: dict[int, list]


def workspace_sections_get() -> WorkspaceSections:
    """Return consumers, layers, profiles and rules as value rows, in four queries."""
    consumers = list(
        Consumer.objects.order_by("position", "id").values_list(*CONSUMER_COLUMNS, named=True)
    )
    layers = list(Layer.objects.order_by("position", "id").values_list(*LAYER_COLUMNS, named=True))
    profiles = list(
        Profile.objects.order_by("position", "id").values_list(*PROFILE_COLUMNS, named=True)
    )
    rules: dict[int, list] = {}
    for rule in Rule.objects.order_by("profile_id", "position", "id").values_list(
        "profile_id", "layer_id", *RULE_MODEL_FIELDS, named=True
    ):
        rules.setdefault(rule.profile_id, []).append(rule)
    return WorkspaceSections(consumers=consumers, layers=layers, profiles=profiles, rules=rules)


def item_values_iterate(*, layer_ids=None, chunk_size: int = 2000):
    """Yield every item (of these layers) as a value row, in document order, through a
    server-side cursor: layer by layer, then by position."""
    queryset = Item.objects.all()
    if layer_ids is not None:
        queryset = queryset.filter(layer_id__in=list(layer_ids))
    return (
        queryset.order_by("layer__position", "layer_id", "position", "id")
        .values_list(*ITEM_COLUMNS, named=True)
        .iterator(chunk_size=chunk_size)
    )


@dataclass
class WorkspaceValues:
    """Every stored row of the workspace as named value rows, in document order: the fields
    its history records (``id`` and every tracked field; no timestamps). An import compares
    and rewrites these.

    ``items`` maps a layer id to its items, ``rules`` a profile id to its rules.
    """

    consumers: list
    layers: list
    items: dict[int, list]
    profiles: list
    rules: dict[int, list]


def _tracked_values(model, *order):
    columns = [field.attname for field in model.history.model.tracked_fields]
    return model.objects.order_by(*order).values_list(*columns, named=True)


def workspace_values_get() -> WorkspaceValues:
    """Return the whole workspace as value rows (``WorkspaceValues``) in five queries."""
    items: dict[int, list] = {}
    for item in _tracked_values(Item, "layer_id", "position", "id"):
        items.setdefault(item.layer_id, []).append(item)
    rules: dict[int, list] = {}
    for rule in _tracked_values(Rule, "profile_id", "position", "id"):
        rules.setdefault(rule.profile_id, []).append(rule)
    return WorkspaceValues(
        consumers=list(_tracked_values(Consumer, "position", "id")),
        layers=list(_tracked_values(Layer, "position", "id")),
        items=items,
        profiles=list(_tracked_values(Profile, "position", "id")),
        rules=rules,
    )


# --- history ---------------------------------------------------------------------------------

# The models whose changes make up the workspace's history.
HISTORY_MODELS = (Consumer, Layer, Item, Profile, Rule)


def history_list_recent(*, limit: int = 10) -> list:
    """Return the latest historical records of every workspace model, newest first.

    Whatever wrote them (studio, API, admin, import). Each record gets ``layer_key`` and
    ``profile_key`` where it has those columns ("" once that row is gone). Seven queries,
    whatever the size; no join, so the record of a row deleted with its layer still shows.
    """
    records = []
    for model in HISTORY_MODELS:
        queryset = model.history.select_related("history_user")
        records.extend(queryset.order_by("-history_date", "-history_id")[:limit])
    records.sort(key=lambda record: record.history_date, reverse=True)
    records = records[:limit]
    layer_ids = {getattr(record, "layer_id", None) for record in records} - {None}
    profile_ids = {getattr(record, "profile_id", None) for record in records} - {None}
    layers = dict(Layer.objects.filter(pk__in=layer_ids).values_list("pk", "key"))
    profiles = dict(Profile.objects.filter(pk__in=profile_ids).values_list("pk", "key"))
    for record in records:
        record.layer_key = layers.get(getattr(record, "layer_id", None), "")
        record.profile_key = profiles.get(getattr(record, "profile_id", None), "")
    return records


def profile_history_list(*, profile: Profile, limit: int = 12) -> list:
    """Return the latest historical records of a profile and its rules, newest first.

    A change's diff reads its ``prev_record`` (one query each, at most ``limit``).
    """
    historical_rule = Rule.history.model
    records = list(
        Profile.history.filter(id=profile.pk)
        .select_related("history_user")
        .order_by("-history_date", "-history_id")[: limit + 1]
    ) + list(
        historical_rule.objects.filter(profile_id=profile.pk)
        .select_related("history_user", "layer")
        .order_by("-history_date", "-history_id")[: limit + 1]
    )
    records.sort(key=lambda record: record.history_date, reverse=True)
    return records[:limit]


def profile_list_with_last_change() -> list[Profile]:
    """Return the profiles with ``last_change_at``/``last_change_by`` over profile and rules."""
    historical_profile = Profile.history.model
    historical_rule = Rule.history.model
    latest_profile = historical_profile.objects.filter(id=OuterRef("pk")).order_by("-history_date")
    latest_rule = historical_rule.objects.filter(profile_id=OuterRef("pk")).order_by(
        "-history_date"
    )
    profiles = list(
        Profile.objects.select_related("consumer")
        .order_by("position", "id")
        .annotate(
            profile_changed_at=Subquery(latest_profile.values("history_date")[:1]),
            profile_changed_by=Subquery(latest_profile.values("history_user__username")[:1]),
            rule_changed_at=Subquery(latest_rule.values("history_date")[:1]),
            rule_changed_by=Subquery(latest_rule.values("history_user__username")[:1]),
        )
    )
    for profile in profiles:
        candidates = [
            (profile.profile_changed_at, profile.profile_changed_by),
            (profile.rule_changed_at, profile.rule_changed_by),
        ]
        candidates = [c for c in candidates if c[0] is not None]
        at, by = max(candidates, key=lambda c: c[0]) if candidates else (profile.updated_at, None)
        profile.last_change_at, profile.last_change_by = at, by
    return profiles


# --- what the doors read besides the lists above ---------------------------------------------
# One profile, rule or row; the pickers and counts of the studio's pages; existence checks.


def rule_list_of_profile(*, profile: Profile) -> list[Rule]:
    """Return a saved profile's rules with their layers, in rule order."""
    return list(profile.rules.select_related("layer"))


def layer_exists(*, key: str) -> bool:
    """Return whether a layer has this key."""
    return Layer.objects.filter(key=key).exists()


def profile_get(*, key: str) -> Profile:
    """Return the profile with this key and its consumer; raise Profile.DoesNotExist."""
    return Profile.objects.select_related("consumer").get(key=key)


def profile_environments_get(*, keys) -> dict[str, str | None]:
    """Return the environment of each stored profile among ``keys`` (one query)."""
    rows = Profile.objects.filter(key__in=list(keys)).values_list("key", "environment")
    return {key: environment or None for key, environment in rows}


def profile_list_with_consumer() -> list[Profile]:
    """Return the profiles in document order, each with its consumer (no rules)."""
    return list(Profile.objects.select_related("consumer").order_by("position", "id"))


def scenario_list_of_profiles(*, profile_keys) -> list[Scenario]:
    """Return the scenarios of these profiles with their profile: by profile, default first."""
    return list(
        Scenario.objects.select_related("profile")
        .filter(profile__key__in=list(profile_keys))
        .order_by("profile__position", "-is_default", "name")
    )


def scenario_count(*, profile: Profile) -> int:
    """Return how many saved scenarios the profile has."""
    return Scenario.objects.filter(profile=profile).count()


def profile_history_list_with_changes(*, profile: Profile, limit: int = 12) -> list:
    """Return ``profile_history_list`` with what each change changed, read up front.

    A change (``~``) gets ``changes``: its field changes against the record before it (one
    query each, at most ``limit``); any other record gets none. Every record gets
    ``consumer_keys``, the keys of the consumers those changes name by id (one query for all).
    """
    records = profile_history_list(profile=profile, limit=limit)
    consumer_ids = set()
    for record in records:
        record.changes = []
        if record.history_type == "~":
            previous = record.prev_record
            if previous is not None:
                record.changes = record.diff_against(previous).changes
                consumer_ids.update(
                    value
                    for change in record.changes
                    if change.field == "consumer"
                    for value in (change.old, change.new)
                    if value
                )
    consumer_keys = (
        dict(Consumer.objects.filter(pk__in=consumer_ids).values_list("pk", "key"))
        if consumer_ids
        else {}
    )
    for record in records:
        record.consumer_keys = consumer_keys
    return records


def row_get(*, model, pk):
    """Return the row of ``model`` with this primary key as stored (an admin form may have
    changed its instance already); raise the model's DoesNotExist."""
    return model.objects.get(pk=pk)


def item_with_layer_get(*, pk) -> Item:
    """Return the item with this primary key and its layer; raise Item.DoesNotExist."""
    return Item.objects.select_related("layer").get(pk=pk)


def rule_with_keys_get(*, pk) -> Rule:
    """Return the rule with this primary key, its profile and layer loaded."""
    return Rule.objects.select_related("profile", "layer").get(pk=pk)


def rule_get(*, profile_key: str, layer_key: str) -> Rule:
    """Return the rule of this profile for this layer; raise Rule.DoesNotExist."""
    return Rule.objects.get(profile__key=profile_key, layer__key=layer_key)


def rule_layer_keys_list(*, profile_key: str) -> list[str]:
    """Return the layer keys of the profile's stored rules."""
    return list(Rule.objects.filter(profile__key=profile_key).values_list("layer__key", flat=True))


def workspace_counter_get() -> int | None:
    """Return the workspace's write counter (``WorkspaceVersion.counter``), None before any
    write; inside a write's transaction, its own bump included."""
    return WorkspaceVersion.objects.filter(pk=1).values_list("counter", flat=True).first()


def rows_read(sql: str, params, using: str = DEFAULT_DB_ALIAS, *, prepared: bool = False) -> list:
    """Run one read on the ``using`` database and return its rows. A persistent connection
    the server dropped (a restart, an idle timeout) is opened again once, outside a
    transaction: the resolve path needs no health check query before its statement
    (``CONN_HEALTH_CHECKS``).

    ``prepared``: on PostgreSQL, bind the parameters on the server and run the statement
    prepared on this connection (psycopg's per-connection cache of prepared statements), so
    the server plans it once rather than on every request (``statements_prepared``)."""
    connection = connections[using]
    for attempt in (0, 1):
        try:
            cursor = _prepared_cursor(connection) if prepared else None
            with cursor or connection.cursor() as cursor:
                cursor.execute(sql, params)
                return cursor.fetchall()
        except (OperationalError, InterfaceError, NotSupportedError):
            # NotSupportedError: a prepared plan whose result type a migration changed
            # ("cached plan must not change result type"); a new connection prepares anew.
            if attempt or connection.in_atomic_block:
                raise
            connection.close()
    raise AssertionError("unreachable")


def statements_prepared(connection) -> bool:
    """Whether ``rows_read(prepared=True)`` prepares on this connection: PostgreSQL, not
    behind PgBouncer's transaction pooling (``DB_POOLER=pgbouncer``: before 1.21 it does not
    keep a session's prepared statements across server connections), and not turned off
    (``DB_PREPARED_READS=0``)."""
    return (
        connection.vendor == "postgresql"
        and getattr(settings, "DB_POOLER", "") != "pgbouncer"
        and getattr(settings, "DB_PREPARED_READS", True)
    )


# A connection's prepare threshold when it has none (Django's default): psycopg then
# prepares only the statements asked to be (Django's client-side-binding cursors never are).
ONLY_WHEN_ASKED = 2**31 - 1


def _prepared_cursor(connection):
    """Return a Django cursor (query logging and execute wrappers included) over a psycopg
    server-side-binding cursor that prepares every statement it runs; None where
    ``statements_prepared`` says no."""
    if not statements_prepared(connection):
        return None
    connection.ensure_connection()
    raw = connection.connection
    if raw.prepare_threshold is None:
        raw.prepare_threshold = ONLY_WHEN_ASKED
    with connection.wrap_database_errors:
        if raw.closed:  # as ``raw.cursor()`` refuses, before any statement is run
            raise _preparing_cursor().closed_error("the connection is closed")
        # As ``BaseDatabaseWrapper._cursor`` wraps the backend's own cursors; the statements
        # read no timestamptz, so the backend's per-cursor time zone loader is not needed.
        return connection._prepare_cursor(_preparing_cursor()(raw))


@functools.cache
def _preparing_cursor():
    """psycopg's server-side-binding cursor, asking to prepare every statement it runs
    (imported here: an SQLite-only project never needs it)."""
    import psycopg

    class PreparingCursor(psycopg.Cursor):
        closed_error = psycopg.OperationalError

        def execute(self, query, params=None, *, prepare=None, binary=None):
            return super().execute(query, params, prepare=True, binary=binary)

    return PreparingCursor

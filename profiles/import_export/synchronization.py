"""The import's write: make the stored rows equal to a valid target document, phase by phase.

``workspace_synchronize`` runs the phases in the order the rows' constraints need: the rows
the target asks for are listed first (``wanted_rows``); then deletions, so a removed profile
never blocks a new one with its selection; then consumers, layers, their items, profiles
(after which the consumers no profile reads are deleted) and rules, each in one batch through
the import's ``BulkWriter``. Rows whose values are all equal are not written, and every row
written, deleted or kept is counted in the ``ImportSummary``.

It runs inside the import (``profiles.import_export.imports.workspace_import``), under the
writers' lock, in its transaction.
"""

from dataclasses import dataclass, field
from typing import Any

from profiles.authoring.profiles import profiles_park
from profiles.import_export.import_summary import ImportSummary
from profiles.models import Consumer, Item, Layer, Profile, Rule
from profiles.workspace.bulk_writes import BulkWriter
from profiles.workspace.derived import Written
from profiles.workspace.mappers import (
    canonical_string,
    map_consumer_values,
    map_item_values,
    map_layer_values,
    map_profile_values,
    map_rule_values,
)


def _upsert(
    model,
    kind: str,
    wanted: list[tuple[Any, dict]],
    existing: dict[Any, Any],
    *,
    writer: BulkWriter,
    summary: ImportSummary,
    touched: set | None = None,
    park=None,
) -> dict[Any, int]:
    """Create or update rows; ``wanted`` is [(lookup key, values)], ``existing`` maps lookup
    keys to the stored value rows (``WorkspaceValues``). Rows whose values are all equal are
    not written.

    Return the id of every wanted row by its lookup key; the lookup keys of rows created or
    updated are added to ``touched``. ``park(rows, updates)``, given, runs before any row is
    written, with the stored and new values of the rows to update (profiles move their
    selections out of each other's way there); it returns the fields it overwrote in the
    database, which the update then writes in full: the rows as read no longer say what is
    stored in those fields, so comparing with them would keep the parked values.
    """
    touched = set() if touched is None else touched
    to_create, to_update, update_fields = [], [], set()
    ids = {}
    for lookup_key, values in wanted:
        row = existing.get(lookup_key)
        if row is None:
            to_create.append((lookup_key, values))
            touched.add(lookup_key)
            continue
        ids[lookup_key] = row.id
        changed = [name for name, value in values.items() if getattr(row, name) != value]
        if changed:
            update_fields.update(changed)
            to_update.append(row._asdict() | values)
            touched.add(lookup_key)
            summary.add(kind, "updated", names=(lookup_key,))
        else:
            summary.add(kind, "unchanged")
    if park is not None and to_update:
        update_fields.update(park([existing[key] for key in touched if key in existing], to_update))
    if to_create:
        created = writer.create(model, [values for _, values in to_create])
        for (lookup_key, _), row_id in zip(to_create, created, strict=True):
            ids[lookup_key] = row_id
        summary.add(kind, "created", len(to_create), names=(key for key, _ in to_create))
    writer.update(model, to_update, sorted(update_fields))
    return ids


_KIND_BY_MODEL = {
    "profiles.Consumer": "consumers",
    "profiles.Layer": "layers",
    "profiles.Item": "items",
    "profiles.Profile": "profiles",
    "profiles.Rule": "rules",
}


SELECTION = ("consumer_id", "objective", "environment")


def _park_selections(stored_rows, updates: list[dict]) -> tuple[str, ...]:
    """Give the profiles whose selection (consumer, objective, environment) an import changes
    a selection no profile can have, before any profile is written: the file's profiles may
    take each other's selections (a swap, or a new profile taking a freed one), and the
    unique selection is checked row by row. Return the fields parked (the objective, or none):
    the update writes them for every row, so each parked row gets the file's value in the
    same transaction even when only its consumer or environment changes; the parked value is
    never committed, and no history records it."""
    before = {row.id: row for row in stored_rows}
    moving = [
        row["id"]
        for row in updates
        if any(getattr(before[row["id"]], name) != row[name] for name in SELECTION)
    ]
    if not moving:
        return ()
    profiles_park(ids=moving)
    return ("objective",)


def _delete(queryset, kind: str, summary: ImportSummary) -> None:
    """Delete in batches (history records each row); count cascaded rows under their kind."""
    _, per_model = queryset.delete()
    for label, number in per_model.items():
        if label in _KIND_BY_MODEL and number:
            summary.add(_KIND_BY_MODEL[label], "deleted", number)


@dataclass
class WantedRows:
    """The rows a target document asks for, as model values with their positions.

    ``layers`` pairs each layer's values with its items' values; ``profiles`` pairs each
    profile's values (its ``consumer`` a key) with its rules as (layer key, values).
    """

    consumers: list[dict]
    layers: list[tuple[dict, list[dict]]]
    profiles: list[tuple[dict, list[tuple[str, dict]]]]
    consumer_keys: set = field(init=False)
    layer_keys: set = field(init=False)
    profile_keys: set = field(init=False)

    def __post_init__(self) -> None:
        self.consumer_keys = {values["key"] for values in self.consumers}
        self.layer_keys = {values["key"] for values, _ in self.layers}
        self.profile_keys = {values["key"] for values, _ in self.profiles}


def wanted_rows(target: dict) -> WantedRows:
    """Return the rows of the (valid) ``target`` document as model values, each with its
    position in its list."""
    consumers = [
        map_consumer_values(entry) | {"position": index}
        for index, entry in enumerate(target.get("consumers") or [])
    ]
    layers = []
    for index, entry in enumerate(target.get("layers") or []):
        items = [
            map_item_values(item) | {"position": item_index}
            for item_index, item in enumerate(entry.get("items") or [])
        ]
        layers.append((map_layer_values(entry) | {"position": index}, items))
    profiles = []
    for index, entry in enumerate(target.get("profiles") or []):
        rules = [
            (canonical_string(layer_key), map_rule_values(rule) | {"position": rule_index})
            for rule_index, (layer_key, rule) in enumerate((entry.get("rules") or {}).items())
        ]
        profiles.append((map_profile_values(entry) | {"position": index}, rules))
    return WantedRows(consumers=consumers, layers=layers, profiles=profiles)


def workspace_synchronize(
    stored,
    target: dict,
    *,
    writer: BulkWriter,
    summary: ImportSummary,
    written: dict[tuple[int, str], Written] | None = None,
) -> set[int]:
    """Make the stored workspace (``stored``: its value rows) equal to the (valid) target.

    Return the ids of the layers whose own fields or items changed; the items created or
    changed are added to ``written`` as stored (their derived rows need no read of them).
    """
    wanted = wanted_rows(target)
    summary.name_deletions(stored, target)
    _delete_gone_profiles_and_layers(wanted, writer=writer, summary=summary)
    consumer_ids = _synchronize_consumers(stored, wanted, writer=writer, summary=summary)
    changed_layers: set = set()
    layer_ids = _synchronize_layers(
        stored, wanted, writer=writer, summary=summary, changed=changed_layers
    )
    changed_layers.update(
        _synchronize_items(
            stored, wanted, layer_ids, writer=writer, summary=summary, written=written
        )
    )
    profile_ids = _synchronize_profiles(
        stored, wanted, consumer_ids, writer=writer, summary=summary
    )
    _synchronize_rules(stored, wanted, profile_ids, layer_ids, writer=writer, summary=summary)
    return {layer_ids[key] for key in changed_layers}


def _delete_gone_profiles_and_layers(
    wanted: WantedRows, *, writer: BulkWriter, summary: ImportSummary
) -> None:
    """Delete the profiles and layers (with their items) the target does not keep.

    Deletions come first, so a removed profile never blocks a new one with its selection.
    """
    _delete(
        Profile.objects.exclude(key__in=wanted.profile_keys).order_by("pk"), "profiles", summary
    )
    gone_layers = Layer.objects.exclude(key__in=wanted.layer_keys)
    gone_items = (
        Item.objects.filter(layer__in=gone_layers).order_by("pk").values_list("pk", flat=True)
    )
    summary.add("items", "deleted", writer.delete(Item, list(gone_items)))
    _delete(gone_layers.order_by("pk"), "layers", summary)


def _synchronize_consumers(
    stored, wanted: WantedRows, *, writer: BulkWriter, summary: ImportSummary
) -> dict[str, int]:
    """Create and update the consumers; return every wanted consumer's id by key. (The
    consumers the target does not keep are deleted after the profiles moved off them.)"""
    return _upsert(
        Consumer,
        "consumers",
        [(values["key"], values) for values in wanted.consumers],
        {consumer.key: consumer for consumer in stored.consumers},
        writer=writer,
        summary=summary,
    )


def _synchronize_layers(
    stored, wanted: WantedRows, *, writer: BulkWriter, summary: ImportSummary, changed: set
) -> dict[str, int]:
    """Create and update the layers' own fields; return every wanted layer's id by key and
    add the keys of the layers created or updated to ``changed``."""
    return _upsert(
        Layer,
        "layers",
        [(values["key"], values) for values, _ in wanted.layers],
        {layer.key: layer for layer in stored.layers if layer.key in wanted.layer_keys},
        writer=writer,
        summary=summary,
        touched=changed,
    )


def _synchronize_items(
    stored,
    wanted: WantedRows,
    layer_ids: dict[str, int],
    *,
    writer: BulkWriter,
    summary: ImportSummary,
    written: dict[tuple[int, str], Written] | None,
) -> set[str]:
    """Delete the stale items of the kept layers, then create and update every layer's items
    in one batch; return the keys of the layers whose items changed.

    The items created or changed are added to ``written`` (when given) as stored.
    """
    changed_layers: set = set()
    stored_items = {}
    stale_item_ids = []
    paths_wanted = {
        layer_values["key"]: {values["path"] for values in items}
        for layer_values, items in wanted.layers
    }
    for layer in stored.layers:
        if layer.key not in wanted.layer_keys:
            continue
        wanted_paths = paths_wanted[layer.key]
        for item in stored.items.get(layer.id, ()):
            if item.path in wanted_paths:
                stored_items[(layer.key, item.path)] = item
            else:
                stale_item_ids.append(item.id)
                changed_layers.add(layer.key)
    summary.add("items", "deleted", writer.delete(Item, stale_item_ids))
    items_wanted = []
    for layer_values, items in wanted.layers:
        layer_key = layer_values["key"]
        layer_id = layer_ids[layer_key]
        for values in items:
            values["layer_id"] = layer_id
            items_wanted.append(((layer_key, values["path"]), values))
    items_touched: set = set()
    item_ids = _upsert(
        Item,
        "items",
        items_wanted,
        stored_items,
        writer=writer,
        summary=summary,
        touched=items_touched,
    )
    changed_layers.update(layer_key for layer_key, _ in items_touched)
    if written is not None:
        values_of = dict(items_wanted)
        for lookup in items_touched:
            values = values_of[lookup]
            written[(values["layer_id"], values["path"])] = Written(
                id=item_ids[lookup],
                title=values["title"],
                body=values["body"],
                metadata=values["metadata"],
                updated_at=writer.at,
            )
    return changed_layers


def _synchronize_profiles(
    stored,
    wanted: WantedRows,
    consumer_ids: dict[str, int],
    *,
    writer: BulkWriter,
    summary: ImportSummary,
) -> dict[str, int]:
    """Create and update the profiles (moving their selections out of each other's way),
    then delete the consumers the target does not keep, which no profile reads any more;
    return every wanted profile's id by key."""
    profile_ids = _upsert(
        Profile,
        "profiles",
        [
            (
                values["key"],
                {k: v for k, v in values.items() if k != "consumer"}
                | {"consumer_id": consumer_ids[values["consumer"]]},
            )
            for values, _ in wanted.profiles
        ],
        {profile.key: profile for profile in stored.profiles if profile.key in wanted.profile_keys},
        writer=writer,
        summary=summary,
        park=_park_selections,
    )
    _delete(
        Consumer.objects.exclude(key__in=wanted.consumer_keys).order_by("pk"), "consumers", summary
    )
    return profile_ids


def _synchronize_rules(
    stored,
    wanted: WantedRows,
    profile_ids: dict[str, int],
    layer_ids: dict[str, int],
    *,
    writer: BulkWriter,
    summary: ImportSummary,
) -> None:
    """Delete the kept profiles' rules the target does not keep, then create and update
    every profile's rules in one batch."""
    stored_rules = {}
    stale_rule_ids = []
    wanted_rule_keys = {
        (values["key"], layer_key) for values, rules in wanted.profiles for layer_key, _ in rules
    }
    layer_key_by_id = {layer_id: key for key, layer_id in layer_ids.items()}
    for profile in stored.profiles:
        if profile.key not in wanted.profile_keys:
            continue
        for rule in stored.rules.get(profile.id, ()):
            rule_key = (profile.key, layer_key_by_id.get(rule.layer_id))
            if rule_key in wanted_rule_keys:
                stored_rules[rule_key] = rule
            else:
                stale_rule_ids.append(rule.id)
    _delete(Rule.objects.filter(pk__in=stale_rule_ids).order_by("pk"), "rules", summary)
    rules_wanted = []
    for profile_values, rules in wanted.profiles:
        profile_key = profile_values["key"]
        for layer_key, values in rules:
            rules_wanted.append(
                (
                    (profile_key, layer_key),
                    values
                    | {"profile_id": profile_ids[profile_key], "layer_id": layer_ids[layer_key]},
                )
            )
    _upsert(Rule, "rules", rules_wanted, stored_rules, writer=writer, summary=summary)

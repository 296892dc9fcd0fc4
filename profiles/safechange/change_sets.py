"""Change sets: one change request holding changes over any entities, applied atomically.

A set is a list of entries ``{"kind": "consumer"|"layer"|"item"|"profile", "op":
"create"|"update"|"delete", "key": … (an item: "layer" and "path"), "value": {…}}``:

* ``create``: ``value`` is the whole SPEC §2 entry (its key, or an item's path, names it);
* ``update``: ``value``'s fields replace the entry's (``null`` removes a field); a profile's
  ``rules`` are partial per layer as a single-profile request's (``rules_merged``); a set
  does not rename (``value.key`` / ``value.path`` must name the entity) and does not change a
  layer's items (item entries do) nor ``governed`` (staff's, outside review);
* ``delete``: no ``value``.

It is validated against the stored workspace as a whole (``document_with_changes``, then the
engine's validator), its impact covers every saved scenario of every profile it can change
(``profiles.versioning.protection.profiles_affected`` before and after), and each entity it
touches has its ETag recorded (``entity_bases``): applying it (``change_set_write``, called by
``change_request_apply``) checks them under the writers' lock and writes every entry through the
ordinary write services, in one transaction, in an order that makes dependencies work.
"""

from collections.abc import Iterable
from dataclasses import dataclass

from django.core.exceptions import ObjectDoesNotExist
from django.db import transaction
from django.db.models import Q

from profiles.authoring.profiles import (
    profile_create,
    profile_delete,
    profile_selections_park,
    profile_update,
)
from profiles.material.consumers import consumer_create, consumer_delete, consumer_update
from profiles.material.items import item_create, item_delete, item_update
from profiles.material.layers import layer_create, layer_delete, layer_update
from profiles.models import (
    ActivityOrigin,
    ChangeRequest,
    Consumer,
    Environment,
    Item,
    Layer,
    Profile,
    ProfileVersion,
)
from profiles.notifications.webhooks import change_request_event, webhook_event_emit
from profiles.safechange.change_set_documents import (
    document_validated,
    issue_of_change,
    set_affected_profiles,
    set_entity_changes,
)
from profiles.safechange.change_set_entries import (
    ChangeSetInvalid,
    SetEntry,
    applied_order,
    change_set_entries,
    entry_at,
)
from profiles.safechange.impact import workspace_impact
from profiles.safechange.titles import change_set_text_checked
from profiles.versioning.environments import SafeChangeError
from profiles.versioning.versions import profile_documents_get
from profiles.workspace import cache
from profiles.workspace.concurrency import PreconditionFailed, document_etag, workspace_write
from profiles.workspace.entity_changes import KINDS, OPS, EntityChange
from profiles.workspace.mappers import (
    map_consumer_to_resolver,
    map_item_to_resolver,
    map_layer_to_resolver,
)
from profiles.workspace.origin import WriteOrigin
from profiles.workspace.writing import Conflict, EntryInvalid
from resolver import ValidationIssue, WorkspaceError, compile_workspace, merge_rule

# --- errors --------------------------------------------------------------------------------


class StaleChangeSet(SafeChangeError):
    """Entities the set touches changed since it was written (or rebased); nothing is written."""

    status_code = 409
    code = "STALE_CHANGE_REQUEST"
    path = "entities"

    def __init__(self, change_request: ChangeRequest, refs: list[str]):
        named = ", ".join(refs[:10]) + (f" and {len(refs) - 10} more" if len(refs) > 10 else "")
        super().__init__(
            f"{named} changed since change request #{change_request.pk} was written: rebase it "
            "to recompute its impact, then apply it",
            entities=refs,
        )


# --- the preview --------------------------------------------------------------------------------


def _compiled_after(snapshot, result: dict, entries: list[SetEntry]):
    """Compile the set's result, reusing every layer of the snapshot the set leaves alone."""
    touched = {entry.key for entry in entries if entry.kind in ("layer", "item")}
    tokens = {copy.key: copy.label for copy in snapshot.layers.values() if copy.key not in touched}
    return compile_workspace(result, previous=snapshot.compiled, tokens=tokens)


@dataclass(frozen=True)
class ChangeSetPreview:
    """What a set does to the stored workspace: its entries, the workspace it leaves, the
    entity changes, the profiles it affects and their impact."""

    entries: list[SetEntry]
    document: dict
    changes: list[EntityChange]
    affected: list[str]
    impact: list[dict]


def change_set_preview(changes, *, offset: int = 0, snapshot=None) -> ChangeSetPreview:
    """Validate a set against the committed workspace and compute its impact (writes
    nothing); raise ChangeSetInvalid."""
    entries = change_set_entries(changes)
    snapshot = snapshot or cache.workspace_get()
    touched = {entry.key for entry in entries if entry.kind in ("layer", "item")}
    before = cache.document_with_items(snapshot, touched)
    result = document_validated(before, entries)
    entity_changes = set_entity_changes(before, result, entries)
    affected = set_affected_profiles(before, result, entity_changes)
    try:
        compiled = _compiled_after(snapshot, result, entries)
    except WorkspaceError as exc:  # checked above; the engine has the last word
        indexes = {entry.ref: entry.index for entry in entries}
        raise ChangeSetInvalid(
            [issue_of_change(issue, result, indexes) for issue in exc.issues]
        ) from exc
    impact = workspace_impact(
        profiles=affected, before=snapshot.compiled, after=compiled, offset=offset
    )
    return ChangeSetPreview(entries, result, entity_changes, affected, impact)


# --- ETags of the entities ---------------------------------------------------------------------


def _refs_by_kind(refs: Iterable[str]) -> dict[str, list[str]]:
    by_kind: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for ref in refs:
        kind, _, name = ref.partition(":")
        by_kind[kind].append(name)
    return by_kind


def entity_etags_get(refs: Iterable[str]) -> dict[str, str | None]:
    """Return the current ETag of each entity (None: it does not exist), in four queries at
    most; the ETags are those of the write services' ``If-Match``."""
    refs = list(refs)
    by_kind = _refs_by_kind(refs)
    found: dict[str, str] = {}
    if by_kind["consumer"]:
        for consumer in Consumer.objects.filter(key__in=by_kind["consumer"]):
            found[f"consumer:{consumer.key}"] = document_etag(map_consumer_to_resolver(consumer))
    if by_kind["layer"]:
        for layer in Layer.objects.filter(key__in=by_kind["layer"]):
            entry = map_layer_to_resolver(layer, [])
            entry.pop("items", None)
            found[f"layer:{layer.key}"] = document_etag(entry)
    if by_kind["item"]:
        paths: dict[str, list[str]] = {}
        for name in by_kind["item"]:
            layer, _, path = name.partition("/")
            paths.setdefault(layer, []).append(path)
        wanted = Q()
        for layer, layer_paths in paths.items():
            wanted |= Q(layer__key=layer, path__in=layer_paths)
        for item in Item.objects.filter(wanted).select_related("layer"):
            found[f"item:{item.layer.key}/{item.path}"] = document_etag(map_item_to_resolver(item))
    if by_kind["profile"]:
        for key, document in profile_documents_get(by_kind["profile"]).items():
            found[f"profile:{key}"] = document_etag(document)
    return {ref: found.get(ref) for ref in refs}


def _bases(entries: list[SetEntry]) -> dict[str, str | None]:
    bases = entity_etags_get(entry.ref for entry in entries)
    issues = [
        ValidationIssue(entry_at(entry.index), f"{entry.ref} exists already")
        for entry in entries
        if entry.op == "create" and bases[entry.ref] is not None
    ]
    if issues:
        raise ChangeSetInvalid(issues)
    return bases


def change_set_refs(change_request: ChangeRequest) -> list[str]:
    """Return the refs of the entities the set touches, in the order of its entries."""
    refs = []
    for entry in change_request.entity_changes:
        if entry.get("kind") == "item":
            refs.append(f"item:{entry.get('layer')}/{entry.get('path')}")
        else:
            refs.append(f"{entry.get('kind')}:{entry.get('key')}")
    return refs


def change_set_stale(change_request: ChangeRequest) -> list[str]:
    """Return the refs of the entities that changed since the set was written or rebased
    (in the order of its entries)."""
    bases = change_request.entity_bases or {}
    refs = [ref for ref in change_set_refs(change_request) if ref in bases]
    current = entity_etags_get(refs)
    return [ref for ref in refs if current[ref] != bases[ref]]


# --- stored form --------------------------------------------------------------------------------


def _stored(preview: ChangeSetPreview) -> list[dict]:
    """Return the entries as a change request stores them: the wire shape, with the field
    diff of each against the workspace it was written (or rebased) on."""
    diffs = {}
    for change in preview.changes:
        diffs.setdefault(change.ref, change.as_dict()["fields"])
    return [{**entry.as_dict(), "fields": diffs.get(entry.ref, [])} for entry in preview.entries]


def change_set_changes(change_request: ChangeRequest) -> list[dict]:
    """Return the set's entries as given (without the stored field diffs)."""
    return [
        {name: value for name, value in entry.items() if name != "fields"}
        for entry in change_request.entity_changes
    ]


def change_set_diff(change_request: ChangeRequest) -> list[dict]:
    """Return each entry's entity change ``{kind, op, key | layer+path, fields}`` as computed
    when the set was written or last rebased."""
    return [
        {
            name: entry.get(name)
            for name in (
                "kind",
                "op",
                *(("layer", "path") if entry["kind"] == "item" else ("key",)),
            )
        }
        | {"fields": entry.get("fields", [])}
        for entry in change_request.entity_changes
    ]


def change_request_counts(change_request: ChangeRequest) -> dict[str, dict[str, int]]:
    """Return how many entities of each kind the request creates, changes and deletes (a
    created layer's items counted as item creates; one profile's request: that profile)."""
    counts = {kind: dict.fromkeys(OPS, 0) for kind in KINDS}
    if not change_request.is_change_set:
        counts["profile"]["create" if change_request.creates is not None else "update"] = 1
        return counts
    for entry in change_request.entity_changes:
        kind, op = entry.get("kind"), entry.get("op")
        if kind in counts and op in OPS:
            counts[kind][op] += 1
        if kind == "layer" and op == "create" and isinstance(entry.get("value"), dict):
            counts["item"]["create"] += len(entry["value"].get("items") or [])
    return counts


# --- what a reader sees ------------------------------------------------------------------------


def change_set_item_refs(change_request: ChangeRequest) -> set[str]:
    """Return the refs (``item:<layer>/<path>``) of the items the set writes: its item entries
    and the items of the layers it creates."""
    refs = set()
    for entry in change_request.entity_changes:
        if entry.get("kind") == "item":
            refs.add(f"item:{entry.get('layer')}/{entry.get('path')}")
        elif entry.get("kind") == "layer" and isinstance(entry.get("value"), dict):
            for item in entry["value"].get("items") or []:
                if isinstance(item, dict):
                    refs.add(f"item:{entry.get('key')}/{item.get('path')}")
    return refs


@dataclass(frozen=True)
class ChangeSetShown:
    """A set as one reader may see it. Item material (an item's path, title, body, metadata)
    is customer data: whoever may not read material (READ_MATERIAL, the rule the activity
    log applies to its item rows) sees no item entry, no item of a created layer, no ref of an
    item the set writes (entities, stale entities, the refs its impact admits), only how many
    item changes are withheld."""

    changes: list[dict]
    entity_changes: list[dict]
    entities: list[str]
    stale_entities: list[str]
    impact: list[dict]
    items_withheld: int


def _without_items(entry: dict) -> dict:
    if entry.get("kind") != "layer" or not isinstance(entry.get("value"), dict):
        return entry
    if "items" not in entry["value"]:
        return entry
    value = {name: field for name, field in entry["value"].items() if name != "items"}
    return {**entry, "value": value}


def _admitted_without(side: dict | None, units: set[str]) -> dict | None:
    if side is None:
        return None
    return {**side, "admitted": [ref for ref in side["admitted"] if ref not in units]}


def change_set_shown(
    change_request: ChangeRequest, *, material: bool, stale_entities: list[str] | None = None
) -> ChangeSetShown:
    """Return what a reader sees of the request's set (``material``: whether they may read
    material; ``stale_entities``: ``change_set_stale``'s answer when it was asked)."""
    changes = change_set_changes(change_request)
    diff = change_set_diff(change_request)
    entities = change_set_refs(change_request)
    stale = list(stale_entities or [])
    impact = list(change_request.impact)
    if material:
        return ChangeSetShown(changes, diff, entities, stale, impact, 0)
    hidden = change_set_item_refs(change_request)
    units = {ref.removeprefix("item:") for ref in hidden}
    return ChangeSetShown(
        changes=[_without_items(entry) for entry in changes if entry.get("kind") != "item"],
        entity_changes=[entry for entry in diff if entry.get("kind") != "item"],
        entities=[ref for ref in entities if ref not in hidden],
        stale_entities=[ref for ref in stale if ref not in hidden],
        impact=[
            {
                **entry,
                "before": _admitted_without(entry.get("before"), units),
                "after": _admitted_without(entry.get("after"), units),
            }
            for entry in impact
        ]
        if units
        else impact,
        items_withheld=len(hidden),
    )


def change_set_text_without_items(change_request: ChangeRequest, text: str) -> str:
    """Return ``text`` (a refusal's message, for a thread, an email or a webhook's payload,
    which readers see) with each item the set writes named by its layer only."""
    for ref in sorted(change_set_item_refs(change_request), key=len, reverse=True):
        layer = ref.removeprefix("item:").partition("/")[0]
        text = text.replace(ref, f"an item of layer {layer}")
    return text


def _fill(change_request: ChangeRequest, changes) -> ChangeSetPreview:
    """Validate ``changes`` now and store them with their bases, affected profiles, impact."""
    preview = change_set_preview(changes)
    change_request.entity_bases = _bases(preview.entries)
    change_request.entity_changes = _stored(preview)
    change_request.affected_profiles = preview.affected
    change_request.impact = preview.impact
    return preview


# --- services ------------------------------------------------------------------------------


def change_set_create(*, title=None, description="", changes, user) -> ChangeRequest:
    """Open a change request holding a set of changes over any entities.

    Validates the set against the committed workspace (ChangeSetInvalid naming
    ``changes[i]…``; creating an entity that exists is one), records the ETag of each entity
    it touches, the profiles whose answer it may change and the impact on their saved
    scenarios. ``title`` defaults to what the set does.
    """
    entries = change_set_entries(changes)
    title, description = change_set_text_checked(title, description, entries)
    change_request = ChangeRequest(
        profile_key="", title=title, description=description, author=user, changes={}
    )
    _fill(change_request, changes)
    with transaction.atomic():
        change_request.save()
        webhook_event_emit("change_request.opened", change_request_event(change_request))
    return change_request


def change_set_revise(change_request: ChangeRequest, changes) -> None:
    """Give an open set new ``changes`` (validated, bases and impact recomputed); the caller
    saves it, makes a new revision and withdraws the approvals."""
    _fill(change_request, changes)


def change_set_rebase(change_request: ChangeRequest) -> bool:
    """Move a set onto the entities as they are now (validated again, impact recomputed);
    return whether its bases moved (then the caller withdraws the approvals)."""
    previous = dict(change_request.entity_bases or {})
    _fill(change_request, change_set_changes(change_request))
    return previous != change_request.entity_bases


def change_sets_approvals_required(change_requests) -> dict[int, int]:
    """Return, per set, the approvals it needs now: the most any protected environment of the
    profiles it affects asks for (the profiles' environments as they are now, and those the
    set moves or creates them into); 1 when none is protected (two queries)."""
    change_requests = [cr for cr in change_requests if cr.is_change_set]
    keys = {key for cr in change_requests for key in cr.affected_profiles}
    current = dict(Profile.objects.filter(key__in=keys).values_list("key", "environment"))
    environments_of: dict[int, set] = {}
    for cr in change_requests:
        environments = {current.get(key) for key in cr.affected_profiles}
        for entry in cr.entity_changes:
            if entry.get("kind") == "profile" and isinstance(entry.get("value"), dict):
                environments.add(entry["value"].get("environment"))
        environments_of[cr.pk] = environments - {None}
    wanted = set().union(*environments_of.values()) if environments_of else set()
    protected = dict(
        Environment.objects.filter(key__in=wanted, requires_change_request=True).values_list(
            "key", "approvals"
        )
    )
    return {
        pk: max([1, *(protected[key] for key in environments if key in protected)])
        for pk, environments in environments_of.items()
    }


def _profile_changes(key: str, value: dict) -> dict:
    """Return ``profile_update`` changes for a set's update: its partial rules merged into the
    stored rules (read under the writers' lock)."""
    changes = {name: field for name, field in value.items() if name != "rules"}
    stored = (profile_documents_get([key]).get(key) or {}).get("rules") or {}
    if "rules" in value and value["rules"] is None:
        changes["rules"] = dict.fromkeys(stored)
    elif isinstance(value.get("rules"), dict):
        changes["rules"] = {
            layer: merge_rule(stored.get(layer), partial)
            for layer, partial in value["rules"].items()
        }
    return changes


def _write(entry: SetEntry, *, user, origin: WriteOrigin, selection: dict | None = None) -> None:
    """Write one entry through its service (the ordinary write path); ``selection`` is the
    whole selection of a profile update parked before the set's writes."""
    writes = {"user": user, "origin": origin}
    if entry.kind == "consumer":
        if entry.op == "create":
            consumer_create(document=entry.value, **writes)
        elif entry.op == "update":
            consumer_update(key=entry.key, changes=entry.value, **writes)
        else:
            consumer_delete(key=entry.key, **writes)
    elif entry.kind == "layer":
        if entry.op == "create":
            layer_create(document=entry.value, **writes)
        elif entry.op == "update":
            layer_update(key=entry.key, changes=entry.value, **writes)
        else:
            layer_delete(key=entry.key, **writes)
    elif entry.kind == "item":
        if entry.op == "create":
            item_create(layer=entry.key, document=entry.value, **writes)
        elif entry.op == "update":
            item_update(layer=entry.key, path=entry.path, changes=entry.value, **writes)
        else:
            item_delete(layer=entry.key, path=entry.path, **writes)
    elif entry.op == "create":
        profile_create(document=entry.value, **writes)
    elif entry.op == "update":
        changes = _profile_changes(entry.key, entry.value) | (selection or {})
        profile_update(key=entry.key, changes=changes, **writes)
    else:
        profile_delete(key=entry.key, **writes)


def _failure(entry: SetEntry, exc: Exception) -> ChangeSetInvalid:
    """Return the refusal of a set whose entry the write path refused (nothing is written)."""
    if isinstance(exc, EntryInvalid):
        issues = [
            ValidationIssue(entry_at(entry.index, f"value.{i.path}" if i.path else ""), i.message)
            for i in exc.field_issues
        ]
    else:
        message = getattr(exc, "message", None) or str(exc) or exc.__class__.__name__
        issues = [ValidationIssue(entry_at(entry.index), f"{entry.ref}: {message}")]
    return ChangeSetInvalid(issues or [ValidationIssue(entry_at(entry.index), str(exc))])


def change_set_write(change_request: ChangeRequest, *, user, approvers: tuple[str, ...]) -> None:
    """Apply an approved set: under the writers' lock, every entity it touches must be as it
    was written against (else StaleChangeSet naming them); then every entry goes through its
    write service, in ``applied_order``, in this one transaction. Any entry refused raises
    ChangeSetInvalid and nothing is written. The services record the profile versions
    (source ``change-request``, authored by the requester, naming the approvers) and the
    activity of every entity."""
    entries = change_set_entries(change_set_changes(change_request))
    origin = WriteOrigin(
        source=ProfileVersion.Source.CHANGE_REQUEST,
        message=change_request.title,
        author=change_request.author,
        change_request=change_request,
        approvers=approvers,
        door=ActivityOrigin.CHANGE_REQUEST,
    )
    with workspace_write():
        stale = change_set_stale(change_request)
        if stale:
            raise StaleChangeSet(change_request, stale)
        # Profiles may take each other's selections (a swap): the moving ones are parked
        # first, and each update writes its whole selection.
        selections = profile_selections_park(
            changes={e.key: e.value for e in entries if e.kind == "profile" and e.op == "update"}
        )
        for entry in applied_order(entries):
            try:
                selection = selections.get(entry.key) if entry.kind == "profile" else None
                _write(entry, user=user, origin=origin, selection=selection)
            except (EntryInvalid, Conflict, ObjectDoesNotExist, PreconditionFailed) as exc:
                raise _failure(entry, exc) from exc


# --- a set from entity changes (an import's proposal) ------------------------------------------


def _changed_fields(before: dict, after: dict, *, skip=()) -> dict:
    """Return the fields of ``after`` that differ from ``before`` (None: no longer given)."""
    return {
        name: after.get(name)
        for name in (*after, *(name for name in before if name not in after))
        if name not in skip and before.get(name) != after.get(name)
    }


def _rules_changed(before: dict, after: dict) -> dict:
    """Return the partial rules that turn ``before``'s rules into ``after``'s."""
    rules = {}
    for layer, rule in after.items():
        saved = before.get(layer)
        if saved is None:
            # A rule given whole: every field the default rule may have is named.
            rules[layer] = dict(rule)
        elif saved != rule:
            rules[layer] = _changed_fields(saved, rule)
    for layer in before:
        if layer not in after:
            rules[layer] = None
    return rules


def change_set_from_entity_changes(changes: Iterable[EntityChange]) -> list[dict]:
    """Return the set (wire shape) that makes these entity changes: creates with their whole
    entry, updates with the changed fields only (a profile's rules as partial rules), deletes.

    ``document_with_changes(before, change_set_from_entity_changes(
    workspace_entity_changes(before, after)))`` is ``after`` (tests/profiles/safechange).
    """
    changes = list(changes)
    created = {c.key for c in changes if c.kind == "layer" and c.op == "create"}
    deleted = {c.key for c in changes if c.kind == "layer" and c.op == "delete"}
    # A created layer carries its items; a deleted one takes its items with it.
    items_of: dict[str, list[dict]] = {key: [] for key in created}
    for change in changes:
        if change.kind == "item" and change.key in created:
            items_of[change.key].append(dict(change.after))
    entries = []
    for change in changes:
        if change.kind == "item" and (change.key in created or change.key in deleted):
            continue
        where = (
            {"layer": change.key, "path": change.path}
            if change.kind == "item"
            else {"key": change.key}
        )
        entry: dict = {"kind": change.kind, "op": change.op, **where}
        if change.op == "create":
            entry["value"] = dict(change.after)
            if change.kind == "layer":
                entry["value"]["items"] = items_of[change.key]
        elif change.op == "update":
            value = _changed_fields(change.before, change.after, skip=("rules", "items"))
            if change.kind == "profile":
                rules = _rules_changed(
                    change.before.get("rules") or {}, change.after.get("rules") or {}
                )
                if rules:
                    value["rules"] = rules
            entry["value"] = value
        entries.append(entry)
    return entries

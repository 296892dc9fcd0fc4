"""The item change log: what a write changed in the layers' items, for incremental recompiles.

A write records its item changes in its own transaction (``item_changes_record``, called by
``profiles.workspace.writing.workspace_changed``): one entry per item created, changed or
deleted, or one entry per layer whose items it rewrote wholesale (an import). Every writer holds the
writers' lock (``concurrency.workspace_write``) while it writes, so entry ids grow in commit
order: a reader that saw entry *n* has seen every committed entry before it, and later
entries all have higher ids.

A reader (``profiles.workspace.cache``) remembers the id of the last entry it applied and asks
for the entries from that one on (``item_changes_since``): if that entry is gone, the log was pruned
past it and the reader reads everything again. The log keeps the latest ``KEEP`` entries;
a write prunes older ones every ``PRUNE_EVERY`` entries.
"""

from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Max, Q

from profiles.models import ItemChange
from profiles.workspace.bulk_writes import rows_insert

Op = ItemChange.Op

# Entries kept after pruning (a worker further behind than this reads everything again).
KEEP = 10_000
# A write prunes when the id it wrote is a multiple of this.
PRUNE_EVERY = 1_000


def item_changes_record(
    *, items: Iterable[tuple[int, str, str]] = (), layers: Iterable[int] = ()
) -> None:
    """Record ``items`` — (layer id, path, op) of single-item writes — and the ``layers``
    whose items were rewritten wholesale. Call inside the write's transaction, under the
    writers' lock."""
    entries = [
        {"layer_id": layer_id, "path": path, "op": op, "after_prune": False}
        for layer_id, path, op in items
    ]
    entries += [
        {"layer_id": layer_id, "path": None, "op": Op.LAYER, "after_prune": False}
        for layer_id in layers
    ]
    if not entries:
        return
    # Numbered before the insert, in order (under the writers' lock, so in commit order).
    last = max(rows_insert(ItemChange, entries, numbered=True))
    if last // PRUNE_EVERY != (last - len(entries)) // PRUNE_EVERY:
        item_changes_prune(before=last - KEEP)


def item_changes_prune(*, before: int) -> int:
    """Delete the entries with ids below ``before``; mark the first one left. Return how
    many were deleted. Call under the writers' lock."""
    deleted, _ = ItemChange.objects.filter(id__lt=before).delete()
    if deleted:
        first = ItemChange.objects.order_by("id").values_list("id", flat=True).first()
        if first is not None:
            ItemChange.objects.filter(id=first).update(after_prune=True)
    return deleted


def item_changes_last() -> int | None:
    """Return the id of the latest entry (None while the log is empty)."""
    return ItemChange.objects.aggregate(last=Max("id"))["last"]


@dataclass(frozen=True)
class ItemChangeRow:
    id: int
    layer_id: int
    path: str | None
    op: str


def item_changes_since(
    after: int | None, *, limit: int, skip_layers: Iterable[int] = ()
) -> tuple[list[ItemChangeRow], bool]:
    """Return the entries after entry ``after`` (all of them for None), at most ``limit``,
    and whether they are complete: False when entries the reader has not seen were pruned,
    or when there are more than ``limit``. Entries of ``skip_layers`` (served layers, whose
    items the reader does not hold) are left out and do not count. One query.
    """
    queryset = ItemChange.objects.order_by("id")
    skip = sorted(skip_layers)
    if skip:
        queryset = queryset.filter(Q(id=after) | ~Q(layer_id__in=skip))
    if after is not None:
        queryset = queryset.filter(id__gte=after)
    rows = list(queryset.values_list("id", "layer_id", "path", "op", "after_prune")[: limit + 2])
    if after is not None:
        if not rows or rows[0][0] != after:
            return [], False  # pruned past the reader's last entry
        rows = rows[1:]
    elif rows and rows[0][4]:
        return [], False  # the log was empty for the reader, and entries since were pruned
    if len(rows) > limit:
        return [], False
    return [ItemChangeRow(*row[:4]) for row in rows], True

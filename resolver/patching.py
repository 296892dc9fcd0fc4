"""Deriving the index of an edited layer from its earlier index (incremental change).

``item_changes`` tells how a layer differs from the one an index was built for (items
matched by path and compared by identity); ``patched_index`` derives the edited layer's
index from the earlier one without rebuilding what it has already built, and
``compacted_index`` renumbers an index's slots once too many are empty (see
``resolver.index`` for slots). The earlier index is never changed: resolutions may still use
it. ``CompiledWorkspace.with_layer_changes`` and ``compile_workspace(previous=...)`` call
them.
"""

from collections import Counter
from dataclasses import dataclass

import numpy as np

from resolver.index import FieldDates, LayerIndex, item_date, summary_is_derived
from resolver.model import Item, Layer
from resolver.postings import SLOT, FlatTerms, PatchedTerms, Postings, item_tokens
from resolver.records import SharedRecords, object_array
from resolver.text import collapse
from resolver.values import canonical_values


@dataclass(frozen=True)
class ItemChanges:
    """How a layer's items changed, in its index's slots.

    ``replaced`` maps slots to the items that now take them (the same path, other content);
    ``added`` lists new items, which take new slots from the index's size on, in this order;
    ``removed`` lists the slots whose items left. ``layer_slots`` gives the slot of each item
    of the changed layer, in its order.
    """

    replaced: dict[int, Item]
    added: tuple[Item, ...]
    removed: tuple[int, ...]
    layer_slots: np.ndarray


def item_changes(index: LayerIndex, layer: Layer) -> ItemChanges | None:
    """Return how ``layer`` (the same layer, edited) differs from the index's layer.

    Items are matched by path, and an item counts as unchanged only when it is the very
    object the index holds (the validation hands back earlier items it found exactly
    equal). Return None when more than half of the items were replaced or removed: a new
    index then costs less than patching this one.
    """
    slots = dict(zip(index.path_records().tolist(), index.by_path.tolist(), strict=True))
    replaced: dict[int, Item] = {}
    added: list[Item] = []
    layer_slots = np.empty(len(layer.items), dtype=np.intp)
    items = index.items
    for position, item in enumerate(layer.items):
        slot = slots.pop(item.path, None)
        if slot is None:
            slot = index.size + len(added)
            added.append(item)
        elif items[slot] is not item:
            replaced[slot] = item
        layer_slots[position] = slot
    removed = tuple(slots.values())
    if 2 * (len(replaced) + len(removed)) > index.count:
        return None
    return ItemChanges(replaced, tuple(added), removed, layer_slots)


def patched_index(old: LayerIndex, layer: Layer, changes: ItemChanges) -> LayerIndex:
    """Return the index of ``layer``, which is the layer of ``old`` after ``changes``.

    Whatever ``old`` has built is carried over as copied arrays with only the changed slots
    rebuilt: the postings and document lengths are patched by tokenizing the replaced, added
    and removed items (the earlier ones, to take their terms out), never the whole layer. A
    removed item leaves an empty slot; when a quarter of the slots are empty they are
    compacted (renumbered) here. ``old`` is left as it was (resolutions may still use it).
    """
    if old._postings is None and old._analysed:
        old.postings  # noqa: B018 (from stored term counts: cheap, and then patched)
    new = LayerIndex.__new__(LayerIndex)
    new._analysed = None
    new._fetched = False
    size = old.size + len(changes.added)
    rebuilt = [*changes.replaced, *range(old.size, size)]
    items = list(old.items)
    items.extend(changes.added)
    for slot, item in changes.replaced.items():
        items[slot] = item
    for slot in changes.removed:
        items[slot] = None
    new.layer, new.items, new.size = layer, items, size
    new.count = old.count + len(changes.added) - len(changes.removed)
    assert new.count == len(layer.items) == len(changes.layer_slots), "changes out of step"
    new.layer_slots = changes.layer_slots
    new.paths = _grown(old.paths, size, rebuilt, lambda i: items[i].path)
    new.titles = _grown(
        old.titles, size, rebuilt, lambda i: collapse(items[i].title) or items[i].path
    )
    new.refs = _grown(old.refs, size, rebuilt, lambda i: f"{layer.key}/{items[i].path}")

    # Path order: the removed items' ranks leave, the added ones go in at their place
    # (replaced items keep their path, so their rank).
    ordered = old.path_records()
    removed_ranks = old.path_rank[list(changes.removed)] if changes.removed else None
    by_path = old.by_path
    if removed_ranks is not None:
        by_path = np.delete(by_path, removed_ranks)
        ordered = np.delete(ordered, removed_ranks)
    added = sorted(range(old.size, size), key=new.paths.__getitem__)
    at = None
    if added:
        at = np.searchsorted(ordered, object_array([new.paths[i] for i in added]))
        by_path = np.insert(by_path, at, added)
    new.by_path = by_path
    new.by_path.flags.writeable = False
    new._path_rank = None
    new._filters = _patched_filters(old, items, changes, size)
    new._field_dates = {
        name: FieldDates(
            _grown_array(
                dates.micros, size, rebuilt, lambda i, name=name: item_date(items[i], name)[0]
            ),
            _grown(dates.days, size, rebuilt, lambda i, name=name: item_date(items[i], name)[1]),
            _grown(dates.sources, size, rebuilt, lambda i, name=name: name),
        )
        for name, dates in old._field_dates.items()
    }
    new._recency = {}
    new._summaries = None
    if old._summaries is not None:
        new._summaries = _grown(old._summaries, size, rebuilt, lambda i: None)
    new._derived = None
    if old._derived is not None:
        new._derived = _grown_array(
            old._derived, size, rebuilt, lambda i: summary_is_derived(items[i])
        )
    records = new.records = SharedRecords()
    records.lines = {
        key: _grown_array(lines, size, rebuilt, lambda i, key=key: records.record(new, key, i))
        for key, lines in old.records.lines.items()
    }
    # Records last: building one may read the dates above.
    rank = new.path_rank
    for key, by_key in old.records.by_key.items():
        if removed_ranks is not None:
            by_key = np.delete(by_key, removed_ranks)
        elif not added:
            by_key = by_key.copy()
        if added:
            by_key = np.insert(
                by_key, at, object_array([records.record(new, key, i) for i in added])
            )
        for i in changes.replaced:
            by_key[rank[i]] = records.record(new, key, i)
        records.by_key[key] = by_key

    new._postings = None
    if old._postings is not None:
        new._postings = _patched_postings(old, new, changes)
    if 4 * (new.size - new.count) > new.size:
        return compacted_index(new)
    return new


def _patched_filters(old: LayerIndex, items: list, changes: ItemChanges, size: int) -> dict:
    """Return the itemFilter lookups with the changed slots moved to their values."""
    leaving = [*changes.replaced, *changes.removed]
    arriving = [*changes.replaced, *range(old.size, size)]
    filters = {}
    for field, lookup in old._filters.items():
        lookup = dict(lookup)
        for i in leaving:
            for value in set(canonical_values(old.items[i].metadata.get(field))):
                remaining = [j for j in lookup[value] if j != i]
                if remaining:
                    lookup[value] = remaining
                else:
                    del lookup[value]
        for i in arriving:
            for value in set(canonical_values(items[i].metadata.get(field))):
                lookup[value] = [*lookup.get(value, ()), i]
        filters[field] = lookup
    return filters


def _patched_postings(old: LayerIndex, new: LayerIndex, changes: ItemChanges) -> Postings:
    """Return the postings of ``new``: those of ``old`` with the changed slots retokenized."""
    terms = old._postings.terms
    if isinstance(terms, PatchedTerms):
        base, postings = terms.base, dict(terms.changed)
    else:
        base, postings = terms, {}

    def posting_of(term):
        return postings[term] if term in postings else base.get(term)

    lengths = _grown_array(old._postings.lengths, new.size, (), None)
    edits = [(i, old.items[i], new.items[i]) for i in changes.replaced]
    edits += [(i, old.items[i], None) for i in changes.removed]
    edits += [(i, None, new.items[i]) for i in range(old.size, new.size)]
    for i, earlier, item in edits:
        before = Counter(item_tokens(earlier)) if earlier is not None else {}
        tokens = item_tokens(item) if item is not None else []
        lengths[i] = len(tokens)
        after = Counter(tokens)
        for term in before.keys() | after.keys():
            tf = after.get(term)
            posting = posting_of(term)
            if term in before:
                term_ids, term_tfs = posting
                at = int(term_ids.searchsorted(i))
                if tf is None:
                    if len(term_ids) == 1:
                        postings[term] = None
                    else:
                        postings[term] = (
                            np.concatenate((term_ids[:at], term_ids[at + 1 :])),
                            np.concatenate((term_tfs[:at], term_tfs[at + 1 :])),
                        )
                elif tf != before[term]:
                    term_tfs = term_tfs.copy()
                    term_tfs[at] = tf
                    postings[term] = (term_ids, term_tfs)
            elif posting is None:
                postings[term] = (np.array([i], dtype=SLOT), np.array([float(tf)]))
            else:
                term_ids, term_tfs = posting
                at = int(term_ids.searchsorted(i))
                postings[term] = (
                    np.concatenate((term_ids[:at], (i,), term_ids[at:])),
                    np.concatenate((term_tfs[:at], (float(tf),), term_tfs[at:])),
                )
    return Postings(PatchedTerms(base, postings), lengths, int(lengths.sum()), new.count)


def compacted_index(index: LayerIndex) -> LayerIndex:
    """Return the index without empty slots: the live slots renumbered, in slot order.

    The path-ordered records stay as they are (they hold live items only); per-slot arrays
    are gathered, the postings renumbered term by term, and the itemFilter lookups left to
    be rebuilt on first use.
    """
    keep = np.sort(index.by_path)
    remap = np.full(index.size, -1, dtype=np.intp)
    remap[keep] = np.arange(index.count, dtype=np.intp)
    if index._postings is None and index._analysed:
        index.postings  # noqa: B018 (from stored term counts: cheap, and then renumbered)
    new = LayerIndex.__new__(LayerIndex)
    new._analysed = None
    new._fetched = False
    new.layer = index.layer
    new.size = new.count = index.count
    new.items = _gathered(index.items, keep)
    new.layer_slots = remap[index.layer_slots]
    new.paths = _gathered(index.paths, keep)
    new.titles = _gathered(index.titles, keep)
    new.refs = _gathered(index.refs, keep)
    new.by_path = remap[index.by_path]
    new.by_path.flags.writeable = False
    new._path_rank = None
    records = index.records
    new.records = SharedRecords(
        records.by_key,  # path order, live items only: unchanged
        records.listed,
        {key: lines[keep] for key, lines in records.lines.items()},
        records.shortest_line,  # the same live items
    )
    new._filters = {}
    new._field_dates = {
        name: FieldDates(
            dates.micros[keep], _gathered(dates.days, keep), _gathered(dates.sources, keep)
        )
        for name, dates in index._field_dates.items()
    }
    new._recency = {}
    new._summaries = None if index._summaries is None else _gathered(index._summaries, keep)
    new._derived = None if index._derived is None else index._derived[keep]
    new._postings = None
    postings = index._postings
    if postings is not None:
        new._postings = Postings(
            FlatTerms.of(
                (term, (remap[term_ids].astype(SLOT, copy=False), term_tfs))
                for term, (term_ids, term_tfs) in postings.terms.items()
            ),
            postings.lengths[keep],
            postings.total_length,
            new.count,
        )
    return new


def _grown(old: list, size: int, rebuilt, make) -> list:
    """Return a copy of a per-slot list, grown to ``size``, with the ``rebuilt`` slots made."""
    new = list(old)
    new.extend([None] * (size - len(new)))
    for i in rebuilt:
        new[i] = make(i)
    return new


def _grown_array(old: np.ndarray, size: int, rebuilt, make) -> np.ndarray:
    """Return a copy of a per-slot array, grown to ``size``, with the ``rebuilt`` slots made."""
    new = np.zeros(size, dtype=old.dtype)
    new[: len(old)] = old
    for i in rebuilt:
        new[i] = make(i)
    return new


def _gathered(values, slots: np.ndarray) -> list:
    """Return the entries of a per-slot list at ``slots`` (a new list)."""
    return object_array(values)[slots].tolist()

"""Served layers: layers whose items a store fetches per request, not held by the engine.

A support desk's tickets layer holds millions of items, but a request for one customer reads
only that customer's: with an ``itemFilter`` the layer's candidates (SPEC §4.2) are the items
matching the request's filter inputs, and the BM25 corpus (SPEC §5) is the candidates after
currentness. So a compiled workspace may hold such a layer **served**: its fields and its item
total, no items. The engine stays pure (no I/O); the protocol is:

1. ``CompiledWorkspace.needs(request)`` says what a request needs: a ``Need`` per served layer
   whose material the request can read (available, every filter input given), with the
   filter values (canonical strings, SPEC §4.2).
2. The caller fetches, for each need, the layer's items that match (a superset is fine: the
   engine applies the filter itself), as SPEC §2 item entries, with their stored analysed
   terms where it has them (``resolver.analysis``, packed), into a ``Fetched``.
3. ``CompiledWorkspace.with_material({layer key: Fetched})`` returns a workspace that holds
   those items (the layers' totals unchanged), against which every resolution of that request
   runs: resolve, ranking, the budget sweep, drafts.

A compiled workspace given a ``source`` (a callable taking the list of needs and returning
the fetched material by layer key) does the three steps itself on every resolution, so every
caller resolves as before; it calls the source once per resolution, with no needs too, so a
source can give each served layer's current total (``Fetched.total``) with every request.

A source may give the same ``Fetched`` again for a later request (a cache of a customer's
candidates, kept exact by the store): the workspace then reuses the layer index it built for
it (``Fetched.built``), so a repeated customer costs what a held layer costs.

The answer is the one ``resolve(document, request)`` gives for the document with every
item in place: the candidates, the corpus statistics and the output come from the matching
items only; the one figure of the whole layer, ``available.items``, is the total.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Need:
    """A served layer's items a request reads: those whose metadata matches every filter."""

    layer: str
    # (metadata field, canonical input value), in the layer's itemFilter order (by field).
    filters: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Fetched:
    """A served layer's items fetched for a need: SPEC §2 item entries (distinct paths, in
    the layer's order), and the analysed terms (``resolver.analysis.item_terms``, of this
    analyser version) of those the store has, by path: packed as stored (``pack_terms``,
    any bytes-like value; a damaged one's item is tokenized) or a dict of counts."""

    entries: Sequence[dict]
    terms: Mapping[str, bytes | dict] = field(default_factory=dict)
    # The layer's item total as of this fetch (None: the compiled workspace's).
    total: int | None = None
    # What the compiled workspace built from these entries, for a later request given the
    # same entries (``dataclasses.replace(fetched, total=...)`` shares it): the engine's own.
    built: dict = field(default_factory=dict, compare=False, repr=False)


MaterialSource = Callable[[list[Need]], Mapping[str, Fetched]]

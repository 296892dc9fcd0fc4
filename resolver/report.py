"""The resolution JSON (SPEC §7), produced in this one place from the layer traces.

Two forms of the same resolution: ``resolution_json`` gives it as plain Python objects (what
``CompiledWorkspace.resolve`` returns), ``encoded_resolution`` as the bytes ``json_text``
would give for those objects (what the API and the CLI write). The encoded form never builds
one object per listed item: the lists that grow with a layer are joined from JSON fragments
each layer index prepares once per item (``SharedRecords.gather`` of a ``("json", …)`` key).
Both forms come from the same functions below, which take the lists from a ``Lists`` mode.
"""

import json
from dataclasses import dataclass
from itertools import chain
from json.encoder import encode_basestring

import numpy as np

from resolver import reasons as R
from resolver.index import MICROSECONDS_PER_DAY, STALE_FLAG, UNDATED, UNKNOWN_FLAG
from resolver.records import compact_json
from resolver.text import estimate
from resolver.trace import admitted_overflow, warning
from resolver.values import format_instant


def json_text(value, *, pretty: bool = False) -> str:
    """Serialize a resolution (or an error) exactly as the CLI, the API and ``manage.py`` do.

    Compact by default: the C encoder is several times faster than an indented dump, which
    matters for a resolution with thousands of references. ``pretty`` indents for people.
    ``EncodedResolution.data`` is ``json_text(resolution).encode()``, written without it.
    """
    if pretty:
        return json.dumps(value, ensure_ascii=False, indent=2) + "\n"
    return compact_json(value) + "\n"


@dataclass(frozen=True, slots=True)
class EncodedResolution:
    """A resolution as the bytes the API and the CLI write, with its small top-level fields.

    ``data`` is exactly ``json_text(resolution).encode()`` for the resolution ``resolve``
    returns for the same request (compact JSON, UTF-8, a final newline). ``head`` holds the
    resolution's top-level fields except the three lists that grow with the layers
    (``layers``, ``references``, ``currentnessExcluded``): the status, profile, budget,
    blockers, warnings and output, for a caller that logs or routes on them without
    parsing ``data``. Read-only, like a resolution.
    """

    data: bytes
    head: dict


GROWING_FIELDS = ("layers", "references", "currentnessExcluded")


class Lists:
    """How a resolution holds its long lists: as lists of shared records (``resolve``)."""

    def gather(self, index, key: tuple, indices: np.ndarray) -> list:
        """Return the elements of the records ``key`` of some items, in their order."""
        return index.gather(key, indices)

    def unit(self, path: str, score, matched: list, date, not_current):
        """Return the materialized record of a unit built for this resolution alone."""
        return {
            "item": path,
            "score": score,
            "matchedTerms": matched,
            "date": date,
            "notCurrent": not_current,
        }

    def finish(self, parts: list[list]):
        """Return the value in the resolution of the list made of these parts, in order."""
        if len(parts) == 1:
            return parts[0]
        return list(chain.from_iterable(parts))


PLAIN = Lists()


class EncodedLists(Lists):
    """Lists as JSON fragments, each list standing in the resolution as a placeholder.

    A placeholder is the string ``"\\x00<n>"``; no string of a resolution contains U+0000
    (SPEC §2.2's text rule holds for every string of the workspace and the request), so in
    the compact JSON of the resolution ``"\\u0000<n>"`` is that placeholder and nothing else.
    ``encode`` puts the joined fragments of list ``n`` in its place.
    """

    def __init__(self):
        self.lists: list[list[list[bytes]]] = []  # each list's parts

    def gather(self, index, key: tuple, indices: np.ndarray) -> list:
        return index.gather(("json", *key), indices)

    def unit(self, path: str, score, matched: list, date, not_current) -> bytes:
        # json_fragment(Lists.unit(...)) written directly: the encoder's own string escape,
        # floats as the encoder writes them (float.__repr__).
        text = encode_basestring
        return (
            f'{{"item":{text(path)},"score":{"null" if score is None else float.__repr__(score)}'
            f',"matchedTerms":[{",".join(map(text, matched))}]'
            f',"date":{"null" if date is None else text(date)}'
            f',"notCurrent":{"null" if not_current is None else text(not_current)}}},'
        ).encode()

    def finish(self, parts: list[list]):
        parts = [part for part in parts if part]
        if not parts:
            return []
        self.lists.append(parts)
        return f"\x00{len(self.lists) - 1}"

    def encode(self, resolution: dict) -> bytes | None:
        """Return the bytes of a resolution holding placeholders, None if they cannot be told
        apart (only possible with a string that breaks the text rule)."""
        pieces = compact_json(resolution).split('"\\u0000')
        if len(pieces) != len(self.lists) + 1:
            return None
        used = set()
        out: list[bytes] = []
        text = pieces[0]
        for piece in pieces[1:]:
            end = piece.find('"')
            number = piece[:end]
            if not number.isdecimal() or int(number) >= len(self.lists) or number in used:
                return None
            used.add(number)
            out.append((text + "[").encode())
            for part in self.lists[int(number)]:
                out += part
            out[-1] = out[-1][:-1]  # the last element's comma
            text = "]" + piece[end + 1 :]
        out.append((text + "\n").encode())
        return b"".join(out)


def encoded_resolution(traces, ctx, text: str) -> EncodedResolution:
    """Return the resolution of a request as the bytes ``json_text`` would give for it."""
    lists = EncodedLists()
    resolution = resolution_json(traces, ctx, text, lists)
    data = lists.encode(resolution)
    if data is None:  # cannot happen with validated text; stay exact anyway
        data = json_text(resolution_json(traces, ctx, text)).encode()
    head = {name: value for name, value in resolution.items() if name not in GROWING_FIELDS}
    return EncodedResolution(data, head)


def resolution_json(traces, ctx, text: str, lists: Lists = PLAIN) -> dict:
    """Return the resolution of a request as plain JSON-able objects.

    With ``detail: summary`` (SPEC §7.1) the lists that grow with the layer are never built:
    only what is rendered is listed, with the full lengths in ``counts`` / ``referenceCounts``.
    ``lists`` gives the form of the long lists (see ``encoded_resolution``).
    """
    profile = ctx.profile
    summary = ctx.request.detail == "summary"
    blockers, warnings = status_findings(traces)
    status = R.BLOCKED if blockers else R.RENDERING_INCOMPLETE if warnings else R.RESOLVED
    tokens = estimate(len(text))
    by_layer = {}
    for trace in traces:
        if trace.selected and trace.admitted_units:
            by_layer[trace.layer.key] = {
                "characters": trace.block_characters,
                "estimatedTokens": estimate(trace.block_characters),
            }
    resolution = {
        "resolver": R.RESOLVER_ID,
        "profile": {
            "key": profile.key,
            "name": profile.name,
            "consumer": profile.consumer,
            "objective": profile.objective,
            "environment": profile.environment,
        },
        "now": format_instant(ctx.request.now),
        "status": status,
        "blockers": blockers,
        "warnings": warnings,
        "currentness": resolution_currentness(traces),
        "currentnessExcluded": [] if summary else currentness_excluded(traces, ctx),
        "budget": {
            "limit": profile.budget,
            "estimatedTokens": tokens,
            "remaining": profile.budget - tokens,
            "characters": len(text),
            "byLayer": by_layer,
        },
        "layers": [layer_record(trace, ctx, summary=summary, lists=lists) for trace in traces],
        "references": references(traces, rendered_only=summary, lists=lists),
        "output": None
        if blockers
        else {"format": ctx.renderer.format, "text": text, "estimatedTokens": tokens},
    }
    if summary:
        resolution["referenceCounts"] = reference_counts(traces)
        resolution["detail"] = "summary"
    return resolution


def status_findings(traces) -> tuple[list, list]:
    """4.8: blockers and warnings of the required layers, in render order."""
    blockers, warnings = [], []
    for trace in traces:
        if not trace.rule.required:
            continue
        key = trace.layer.key
        if not trace.selected:
            blockers.append(
                {"code": R.MISSING_REQUIRED_CONTEXT, "layer": key, "detail": trace.reason}
            )
        elif not len(trace.units):
            blockers.append(
                {"code": R.MISSING_REQUIRED_CONTEXT, "layer": key, "detail": R.NO_CONTENT}
            )
        elif trace.admitted_units == 0:
            blockers.append({"code": R.REQUIRED_CONTEXT_OVER_BUDGET, "layer": key, "detail": None})
        elif trace.admitted_units < len(trace.units):
            warnings.append({"code": R.RENDERING_INCOMPLETE, "layer": key, "detail": None})
    return blockers, warnings


def resolution_currentness(traces) -> str:
    flags = set()
    for trace in traces:
        if trace.inline and trace.flags is not None:
            flags.update(np.unique(trace.flags[trace.units[: trace.admitted_units]]).tolist())
    if STALE_FLAG in flags:
        return R.NOT_CURRENT
    if UNKNOWN_FLAG in flags:
        return R.UNKNOWN
    return R.CURRENT


def currentness_excluded(traces, ctx) -> list:
    """The items currentness excluded, by layer in render order, then path."""
    out = []
    for trace in traces:
        if not len(trace.excluded):
            continue
        key = trace.layer.key
        dates = trace.index.field_dates(trace.rule.currentness.field)
        paths = trace.index.paths
        for i in trace.excluded.tolist():
            micros = int(dates.micros[i])
            if micros == UNDATED:
                reason, day, age = R.UNKNOWN, None, None
            else:
                reason, day = R.STALE, dates.days[i]
                age = (ctx.now_micros - micros) // MICROSECONDS_PER_DAY
            out.append(
                {"layer": key, "item": paths[i], "reason": reason, "date": day, "ageDays": age}
            )
    return out


def layer_record(trace, ctx, *, summary: bool = False, lists: Lists = PLAIN) -> dict:
    """Return one layer's record; a summary lists only what is rendered, plus ``counts``."""
    rule = trace.rule
    layer = trace.layer
    record = {
        "layer": layer.key,
        "name": layer.display_name,
        "ruleSource": rule.source,
        "participation": rule.participation,
        "mode": rule.mode,
        "required": rule.required,
        "priority": rule.priority,
        "available": {"state": trace.available, "items": trace.layer.item_total},
        "applicable": {
            "state": trace.applicable,
            "reason": trace.applicable_reason,
            "candidates": trace.candidate_count if trace.applicable != R.SKIPPED else 0,
        },
        "currentness": {
            "state": trace.currentness_state,
            "current": trace.current,
            "stale": trace.stale,
            "unknown": trace.unknown,
            "excluded": len(trace.excluded),
            "warned": trace.warned,
        },
        "decision": {"kind": trace.kind, "reason": trace.reason, "detail": trace.detail},
    }
    if not trace.selected:
        record["materialized"] = {"items": [], "references": []}
        record["projected"] = {"facets": [], "derived": {}}
        record["rendered"] = {"items": [], "trimmed": [], "characters": 0, "estimatedTokens": 0}
        if summary:
            record["counts"] = {"items": 0, "references": 0, "trimmed": 0}
        return record
    index = trace.index
    admitted = trace.admitted_units
    if summary:
        # Rendered overflow references are a prefix of limited + beyond; NOT_RETRIEVED never is.
        limited, beyond = admitted_overflow(trace)
        skipped = trace.not_retrieved[:0]
        units = trace.units[:admitted]
    else:
        limited, beyond, skipped = trace.limited, trace.beyond, trace.not_retrieved
        units = trace.units
    references = []
    for indices, reason in (
        (limited, R.LAYER_TOKEN_LIMIT),
        (beyond, R.BEYOND_MAX_ITEMS),
        (skipped, R.NOT_RETRIEVED),
    ):
        if len(indices):
            references.append(lists.gather(index, ("materialized-ref", reason), indices))
    record["materialized"] = {
        "items": materialized_items(trace, ctx, units, lists),
        "references": lists.finish(references),
    }
    derived = {}
    if "summary" in rule.facets:
        derived["summary"] = index.derived_summaries(trace.units)
    if "excerpt" in rule.facets:
        derived["excerpt"] = len(trace.units)
    record["projected"] = {"facets": list(rule.facets), "derived": derived}
    record["rendered"] = {
        "items": lists.finish([lists.gather(index, ("path",), trace.units[:admitted])]),
        "trimmed": []
        if summary
        else lists.finish([lists.gather(index, ("path",), trace.units[admitted:])]),
        "characters": trace.block_characters,
        "estimatedTokens": estimate(trace.block_characters),
    }
    if summary:
        record["counts"] = {
            "items": len(trace.units),
            "references": len(trace.limited) + trace.beyond_count + trace.not_retrieved_count,
            "trimmed": len(trace.units) - admitted,
        }
    return record


def materialized_items(trace, ctx, units: np.ndarray, lists: Lists = PLAIN):
    """The given content units with their score, matched terms, date and not-current flag.

    Units without a score or a flag share the index's prepared records; the others (items
    with a query term, items kept by a warn policy) get a record of their own.
    """
    index = trace.index
    field = trace.rule.currentness.field if trace.rule.currentness else "updated"
    scores = trace.scores
    records = lists.gather(index, ("unit", field, scores is not None), units)
    special = np.zeros(len(units), dtype=bool)
    if scores is not None:
        special |= trace.hit[units]
    if trace.flags is not None:
        special |= trace.flags[units] != 0
    positions = np.flatnonzero(special).tolist()
    if not positions:
        return lists.finish([records])
    days = index.recency_dates(field).days
    chosen = units[positions]
    unit_scores = scores[chosen].tolist() if scores is not None else [None] * len(chosen)
    matched = []
    if scores is not None:
        matched = index.matched_terms(ctx.terms, chosen[trace.hit[chosen]])
        matched.reverse()  # popped in unit order below
    for position, i, score in zip(positions, chosen.tolist(), unit_scores, strict=True):
        flagged = warning(trace, ctx, i)
        hit = scores is not None and bool(trace.hit[i])
        records[position] = lists.unit(
            index.paths[i],
            None if score is None else round(score, 6),
            matched.pop() if hit else [],
            days[i],
            flagged[0] if flagged else None,
        )
    return lists.finish([records])


def references(traces, *, rendered_only: bool = False, lists: Lists = PLAIN):
    """Every reference of the selected layers, grouped by layer in render order.

    Within a layer: content units (trimmed inline items, or on-demand references), then
    overflow (token-limited before beyond-maxItems), then the items not retrieved. With
    ``rendered_only`` (a summary) the references that are not rendered are never built.
    """
    listed: list[list] = []
    for trace in traces:
        if not trace.selected:
            continue
        admitted = trace.admitted_units
        units = trace.units
        shown_limited, shown_beyond = admitted_overflow(trace)
        parts = [
            (units[:admitted], R.ON_DEMAND, True) if not trace.inline else None,
            (units[admitted:], R.ON_DEMAND if not trace.inline else R.BUDGET_TRIMMED, False),
            (shown_limited, R.LAYER_TOKEN_LIMIT, True),
            (trace.limited[len(shown_limited) :], R.LAYER_TOKEN_LIMIT, False),
            (shown_beyond, R.BEYOND_MAX_ITEMS, True),
            (trace.beyond[len(shown_beyond) :], R.BEYOND_MAX_ITEMS, False),
            (trace.not_retrieved, R.NOT_RETRIEVED, False),
        ]
        for part in parts:
            if part is None:
                continue
            indices, reason, rendered = part
            if len(indices) and (rendered or not rendered_only):
                listed.append(lists.gather(trace.index, ("ref", reason, rendered), indices))
    return lists.finish(listed)


def layer_ranking(trace, ctx, paths=None) -> list[dict]:
    """The ranking of one layer's retrieved items (SPEC §4.5 steps 1–5), not a SPEC §7 field.

    Every content unit, then every overflow reference (token-limited, then beyond maxItems),
    in the order step 2 ranked them, each ``{"item", "rank", "score", "matchedTerms"}``
    (rank from 1; score rounded as §7 rounds it, null when relevance was not computed). The
    resolution lists scores of content units only; this tells why an overflow item lost.
    With ``paths`` only the entries of those items are built (in rank order; an item that
    was not retrieved has none), so a page of rows costs its rows, not the layer.
    """
    if not trace.selected:
        return []
    index = trace.index
    ranked = np.concatenate([trace.units, trace.limited, trace.beyond]).astype(np.intp)
    ranks = np.arange(1, len(ranked) + 1)
    if paths is not None:
        rank_of = np.zeros(index.size, dtype=np.intp)
        rank_of[ranked] = ranks
        slots = [slot for path in paths if (slot := index.position(path)) is not None]
        wanted = np.array(sorted({slot for slot in slots if rank_of[slot]}, key=rank_of.item))
        ranked = wanted.astype(np.intp)
        ranks = rank_of[ranked] if len(ranked) else ranks[:0]
    scores = trace.scores
    matched: list[list[str]] = [[] for _ in range(len(ranked))]
    if scores is not None and len(ranked):
        hits = np.flatnonzero(trace.hit[ranked])
        for position, terms in zip(
            hits.tolist(), index.matched_terms(ctx.terms, ranked[hits]), strict=True
        ):
            matched[position] = terms
    return [
        {
            "item": index.paths[i],
            "rank": rank,
            "score": None if scores is None else round(float(scores[i]), 6),
            "matchedTerms": terms,
        }
        for i, rank, terms in zip(ranked.tolist(), ranks.tolist(), matched, strict=True)
    ]


def reference_counts(traces) -> dict:
    """SPEC §7.1: the number of entries of the full ``references`` list per reason."""
    counts = dict.fromkeys(R.REFERENCE_REASONS, 0)
    for trace in traces:
        for reason, count in layer_reference_counts(trace).items():
            counts[reason] += count
    return {reason: count for reason, count in counts.items() if count}


def layer_reference_counts(trace) -> dict:
    """The number of one layer's entries of the full ``references`` list per reason (reasons
    with none left out; empty for an omitted layer). Not a SPEC §7 field: a summary gives a
    layer's references as one number, and their reasons only for the whole resolution."""
    if not trace.selected:
        return {}
    content = R.BUDGET_TRIMMED if trace.inline else R.ON_DEMAND
    counts = dict.fromkeys(R.REFERENCE_REASONS, 0)
    counts[content] = len(trace.units) - (trace.admitted_units if trace.inline else 0)
    counts[R.LAYER_TOKEN_LIMIT] = len(trace.limited)
    counts[R.BEYOND_MAX_ITEMS] = trace.beyond_count
    counts[R.NOT_RETRIEVED] = trace.not_retrieved_count
    return {reason: count for reason, count in counts.items() if count}

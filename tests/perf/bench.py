"""Benchmark the resolver against peers run in the same process: ``python -m tests.perf.bench``.

Compares a warm ``CompiledWorkspace.resolve_json`` (request in, response bytes out) with

* bm25s and rank-bm25 ranking one 20,000-item layer for a 6-word query (score, then a stable
  sort: ties by document index, which is path order here);
* priompt's ``render`` fitting 2,000 items (20 layers × 100) to 2k/8k/32k estimated tokens
  with a chars/4 tokenizer, the same text the resolver renders;

and measures how resolution scales from 10,000 to 100,000 items, what compiling costs, and a
live-preview resolution of a mixed 2,000-item workspace. Index building is never timed, on
any side. Peers and ours run interleaved, so machine noise hits both alike. See
docs/benchmarks.md for what each row means.
"""

import argparse
import dataclasses
import gc
import json
import math
import os
import platform
import statistics
import sys
import time
from importlib import metadata

from resolver.report import json_text
from tests.perf import workloads

K1 = 1.2
B = 0.75
PEER_PACKAGES = ("bm25s", "rank-bm25", "priompt", "numpy", "scipy")


@dataclasses.dataclass(frozen=True)
class Sizes:
    retrieve_items: int = 20_000
    fit_layers: int = 20
    fit_items_per_layer: int = 100
    scaling_small: int = 10_000
    scaling_large: int = 100_000
    live_items: int = 2_000
    warmup: int = 2
    min_reps: int = 7
    max_reps: int = 41
    # Repetitions adapt so that one comparison group takes about this long.
    group_seconds: float = 6.0
    compile_reps: int = 3
    incremental_items: tuple[int, ...] = (1_000, 10_000, 50_000)


FULL = Sizes()
QUICK = Sizes(
    retrieve_items=1_500,
    fit_layers=4,
    fit_items_per_layer=25,
    scaling_small=300,
    scaling_large=3_000,
    live_items=300,
    warmup=1,
    min_reps=3,
    max_reps=3,
    group_seconds=0.2,
    compile_reps=1,
    incremental_items=(200, 1_000),
)


# --- timing -----------------------------------------------------------------------------


CLOCK = {"now": time.perf_counter_ns, "name": "wall"}


def time_once(call):
    """Return the duration of one call on the chosen clock (``--clock``), in nanoseconds.

    ``wall`` (the default) is elapsed time. ``cpu`` is this process's CPU time, which on a
    machine shared with other busy processes leaves out the time the scheduler gave to them
    (every timed call, ours and the peers', runs on one thread).
    """
    now = CLOCK["now"]
    start = now()
    call()
    return now() - start


def measure(cases, sizes):
    """Return ({name: median ns}, repetitions) for callables timed interleaved.

    Each case runs ``warmup`` times, then in rounds where every case runs once, the order
    rotating each round, so drift (thermal, other processes) spreads over all cases alike.
    """
    for call in cases.values():
        for _ in range(sizes.warmup):
            call()
    round_ns = sum(time_once(call) for call in cases.values())
    reps = int(sizes.group_seconds * 1e9 // max(round_ns, 1))
    reps = max(sizes.min_reps, min(sizes.max_reps, reps))
    names = list(cases)
    samples = {name: [] for name in names}
    for index in range(reps):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(time_once(cases[name]))
    return {name: statistics.median(values) for name, values in samples.items()}, reps


FREEZE = {"enabled": True}


def settle():
    """Collect garbage, then freeze what survives so the collector never rescans the corpora.

    With ``--no-freeze`` only collect: every collection during timing then also walks the
    harness's corpora and the compiled workspaces, as in a long-running server process.
    """
    gc.unfreeze()
    gc.collect()
    if FREEZE["enabled"]:
        gc.freeze()


# --- peers ------------------------------------------------------------------------------


def corpus_tokens(items):
    """Return each item's SPEC §5 tokens of ``title + "\\n" + body`` (the resolver's document)."""
    return [workloads.spec_tokens(f"{item['title']}\n{item['body']}") for item in items]


def query_terms(message):
    """Return the distinct query tokens in order of first appearance (SPEC §5)."""
    return list(dict.fromkeys(workloads.spec_tokens(message)))


class Bm25sPeer:
    """bm25s over pre-tokenized documents; timed part: ``get_scores`` and a stable argsort.

    ``method="atire"`` with ``idf_method="lucene"`` is exactly SPEC §5's formula
    (``idf = ln(1 + (N − df + 0.5)/(df + 0.5))``, ``tf·(k1+1)/(tf + k1·(1 − b + b·|d|/avgdl))``);
    every bm25s variant costs the same at query time (scores are precomputed per term).
    """

    name = "bm25s"

    def __init__(self, documents, terms):
        import bm25s

        self.retriever = bm25s.BM25(
            k1=K1, b=B, method="atire", idf_method="lucene", dtype="float64"
        )
        self.retriever.index(documents, show_progress=False)
        self.query_ids = self.retriever.get_tokens_ids(terms)

    def rank(self):
        import numpy as np

        scores = self.retriever.get_scores(self.query_ids)
        return scores, np.argsort(-scores, kind="stable")


class RankBm25Peer:
    """rank-bm25's ``BM25Okapi``; timed part: ``get_scores`` and a stable argsort.

    Only the idf table (built once, untimed) is switched to SPEC §5's Lucene idf, so scores
    compare; ``get_scores`` is the package's own code.
    """

    name = "rank-bm25"

    def __init__(self, documents, terms):
        from rank_bm25 import BM25Okapi

        class LuceneIdfBM25Okapi(BM25Okapi):
            def _calc_idf(self, nd):
                for word, freq in nd.items():
                    self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))

        self.index = LuceneIdfBM25Okapi(documents, k1=K1, b=B)
        self.terms = terms

    def rank(self):
        import numpy as np

        scores = self.index.get_scores(self.terms)
        return scores, np.argsort(-scores, kind="stable")


def chars_over_four_tokenizer():
    """Return a priompt tokenizer whose count is SPEC §6's estimate, ``ceil(len / 4)``."""
    from priompt.tokenizer import PriomptTokenizer

    class CharsOverFour(PriomptTokenizer):
        name = "chars/4"
        should_add_eos_token_to_each_message = False

        @classmethod
        def num_tokens(cls, text):
            return -(-len(text) // 4)

        @classmethod
        def estimate_tokens_using_char_count(cls, text):
            count = -(-len(text) // 4)
            return count, count

        @classmethod
        def encode_tokens(cls, text):
            raise NotImplementedError("chars/4 is an estimate, not a tokenizer")

        @classmethod
        def decode_tokens(cls, tokens):
            raise NotImplementedError("chars/4 is an estimate, not a tokenizer")

        @classmethod
        def get_header_string_for_message(cls, message):
            return ""

        @classmethod
        def get_header_tokens_for_message(cls, message):
            return []

        @classmethod
        def get_eos_token_id(cls):
            return 0

        @classmethod
        def get_eos_token(cls):
            return ""

        @classmethod
        def apply_chat_template(cls, messages, options=None):
            return ""

        @classmethod
        def apply_chat_template_tokens(cls, messages, options=None):
            return []

    return CharsOverFour


class PriomptPeer:
    """priompt's ``render`` fitting the resolver's markdown units by priority.

    Unit ``r`` of the admission sequence gets priority ``len(units) − r``, and the final
    newline sits at base priority (always kept). priompt keeps every scope whose priority is
    at or above the highest cutoff that fits the budget: the longest prefix of the admission
    sequence that fits, which is what SPEC §4.7 admits. Both sides fit the same text.
    """

    name = "priompt"

    def __init__(self, units):
        import priompt

        self.render_function = priompt.render
        self.tokenizer = chars_over_four_tokenizer()
        total = len(units)
        self.prompt = [priompt.Scope(unit, p=total - rank) for rank, unit in enumerate(units)]
        self.prompt.append("\n")

    def render(self, budget):
        output = self.render_function(
            self.prompt, {"token_limit": budget, "tokenizer": self.tokenizer}
        )
        return output["prompt"]


# --- ours -------------------------------------------------------------------------------


def compile_workspace(document, **options):
    from resolver import compile_workspace as compile_document

    return compile_document(document, **options)


def served(compiled, request):
    """Return what the API and the CLI write for a request: the resolution's JSON bytes.

    Every "ours" timing is this call (``CompiledWorkspace.resolve_json``: request in, the
    exact response bytes out), not ``resolve``, whose dict a server would still have to
    serialize.
    """
    return compiled.resolve_json(request).data


def layer_record(resolution, layer_key):
    return next(layer for layer in resolution["layers"] if layer["layer"] == layer_key)


def our_top(resolution, layer_key="pool"):
    """Return [(path, score)] of a retrieve layer's kept items, best first."""
    return [
        (unit["item"], unit["score"])
        for unit in layer_record(resolution, layer_key)["materialized"]["items"]
    ]


def peer_top(peer, items, count):
    scores, order = peer.rank()
    return [(items[index]["path"], float(scores[index])) for index in order[:count]]


def same_ranking(ours, theirs, tolerance=1e-6):
    return len(ours) == len(theirs) and all(
        path == peer_path and abs(score - peer_score) <= tolerance
        for (path, score), (peer_path, peer_score) in zip(ours, theirs, strict=True)
    )


# --- the benchmark ----------------------------------------------------------------------


@dataclasses.dataclass
class Row:
    id: str
    label: str
    ours_ns: float
    peer: str = ""
    peer_ns: float | None = None
    ratio_kind: str = ""
    ratio: float | None = None
    target: str = ""
    passed: bool | None = None
    reps: int = 0
    note: str = ""


def ratio_row(row_id, label, ours_ns, peer_name, peer_ns, *, faster_by=None, at_most=None, reps=0):
    """Build a row: ``at_most`` = ours/peer ≤ N; ``faster_by`` = peer/ours ≥ N."""
    if at_most is not None:
        ratio = ours_ns / peer_ns
        return Row(
            row_id,
            label,
            ours_ns,
            peer_name,
            peer_ns,
            "ours/peer",
            ratio,
            f"<= {at_most:g}x",
            ratio <= at_most,
            reps,
        )
    ratio = peer_ns / ours_ns
    return Row(
        row_id,
        label,
        ours_ns,
        peer_name,
        peer_ns,
        "peer/ours",
        ratio,
        f">= {faster_by:g}x",
        ratio >= faster_by,
        reps,
    )


def bench_retrieve(items, message, sizes, log):
    document = workloads.pool_workspace(items)
    terms = query_terms(message)
    log(f"retrieve: {len(items):,} items; query {message!r} -> terms {terms}")
    documents = corpus_tokens(items)
    peers = [Bm25sPeer(documents, terms), RankBm25Peer(documents, terms)]
    compiled = compile_workspace(document)
    request = workloads.request("retrieve", message)
    resolution = compiled.resolve(request)
    top = our_top(resolution)
    checks = {
        f"top {len(top)} ranking equals {peer.name} (paths, scores to 1e-6)": same_ranking(
            top, peer_top(peer, items, len(top))
        )
        for peer in peers
    }
    summary_request = {**request, "detail": "summary"}
    summary = compiled.resolve(summary_request)
    summary_bytes = len(served(compiled, summary_request))
    checks["summary lists only what is rendered, with the full counts"] = all(
        reference["rendered"] for reference in summary["references"]
    ) and summary["referenceCounts"] == reference_counts(resolution)
    checks["the bytes served equal json_text of resolve() (full and summary)"] = (
        served(compiled, request) == json_text(resolution).encode()
        and served(compiled, summary_request) == json_text(summary).encode()
    )
    settle()
    cases = {
        "ours": lambda: served(compiled, request),
        "ours-summary": lambda: served(compiled, summary_request),
        "ours-dict": lambda: compiled.resolve(request),
    }
    cases.update({peer.name: peer.rank for peer in peers})
    medians, reps = measure(cases, sizes)
    # Timed apart: its 40 MB of garbage per call would evict everyone's data in the group.
    dumped = [
        time_once(lambda: json_text(compiled.resolve(request)).encode())
        for _ in range(max(sizes.min_reps, 3))
    ]
    label = f"retrieve {len(items):,} items, 6-word query"
    rows = [
        ratio_row(
            "retrieve-vs-bm25s",
            label,
            medians["ours"],
            "bm25s",
            medians["bm25s"],
            at_most=2,
            reps=reps,
        ),
        ratio_row(
            "retrieve-vs-rank-bm25",
            label,
            medians["ours"],
            "rank-bm25",
            medians["rank-bm25"],
            faster_by=10,
            reps=reps,
        ),
        ratio_row(
            "retrieve-summary-vs-bm25s",
            f"{label}, detail summary",
            medians["ours-summary"],
            "bm25s",
            medians["bm25s"],
            at_most=1.5,
            reps=reps,
        ),
        Row(
            "retrieve-summary-bytes",
            f"{label}, detail summary: JSON size (full: {len(json_text(resolution)):,} bytes)",
            summary_bytes,
            target="<= 65,536 bytes",
            passed=summary_bytes <= 65_536,
            note="bytes",
        ),
        Row(
            "retrieve-dict",
            f"{label}: resolve() -> dict, not serialized (Python callers)",
            medians["ours-dict"],
            reps=reps,
            note="info",
        ),
        Row(
            "retrieve-dict-dumped",
            f"{label}: resolve() + json_text, the API's bytes before resolve_json",
            statistics.median(dumped),
            reps=len(dumped),
            note="info",
        ),
    ]
    return rows, checks


def reference_counts(resolution):
    counts = {}
    for reference in resolution["references"]:
        counts[reference["reason"]] = counts.get(reference["reason"], 0) + 1
    return counts


def bench_incremental(sizes, log):
    """Time keeping a compiled workspace current after an edit, against a warm resolve.

    Information rows per size of ``mixed_workspace``: a one-item edit and a one-item delete
    applied with ``with_layer_changes``, and the first resolution after the edit; a
    recompile of the document after a change of the profile only, and after a one-item
    change of the kb layer (``compile_workspace`` with ``previous`` and per-layer content
    tokens: the changed layer gets a new one), with the first resolution after it; and a
    warm resolution of the unchanged workspace.
    """
    rows = []
    for count in sizes.incremental_items:
        log(f"incremental: edits in a mixed workspace of {count:,} items")
        document, request = workloads.mixed_workspace(count)
        tokens = {layer["key"]: 1 for layer in document["layers"]}
        compiled = compile_workspace(document, tokens=tokens)
        served(compiled, request)
        position = next(n for n, layer in enumerate(document["layers"]) if layer["key"] == "kb")
        kb = document["layers"][position]
        middle = len(kb["items"]) // 2
        edited = dict(kb["items"][middle])
        edited["body"] += " refund edited"
        deleted = kb["items"][middle + 1]["path"]
        profile_changed = {
            **document,
            "profiles": [{**document["profiles"][0], "budget": 5000}, *document["profiles"][1:]],
        }
        layers = list(document["layers"])
        layers[position] = {
            **kb,
            "items": [*kb["items"][:middle], edited, *kb["items"][middle + 1 :]],
        }
        layer_changed = {**document, "layers": layers}
        layer_tokens = {**tokens, "kb": 2}
        settle()

        def edit(compiled=compiled, edited=edited):
            return compiled.with_layer_changes("kb", upsert=[edited], token="edited")

        def delete(compiled=compiled, deleted=deleted):
            return compiled.with_layer_changes("kb", delete=[deleted], token="deleted")

        def first_after_edit(request=request):
            changed = edit()
            return time_once(lambda: served(changed, request))

        def compile_profiles(compiled=compiled, changed=profile_changed, tokens=tokens):
            return compile_workspace(changed, previous=compiled, tokens=tokens)

        def compile_layer(compiled=compiled, changed=layer_changed, tokens=layer_tokens):
            return compile_workspace(changed, previous=compiled, tokens=tokens)

        def first_after_compile(request=request):
            changed = compile_layer()
            return time_once(lambda: served(changed, request))

        def warm(compiled=compiled, request=request):
            return served(compiled, request)

        reps = max(sizes.min_reps, 3)
        timed = [
            ("edit", "one-item edit (with_layer_changes)", edit),
            ("delete", "one-item delete (with_layer_changes)", delete),
            ("first-resolve", "first resolve after the edit", None),
            ("compile-profiles", "recompile after a profile change (tokens)", compile_profiles),
            ("compile-layer", "recompile after a one-item kb change (kb token new)", compile_layer),
            ("first-after-compile", "first resolve after that recompile", None),
            ("warm-resolve", "warm resolve", warm),
        ]
        for row_id, what, call in timed:
            if row_id == "first-resolve":
                value = statistics.median(first_after_edit() for _ in range(reps))
            elif row_id == "first-after-compile":
                value = statistics.median(first_after_compile() for _ in range(reps))
            else:
                value = statistics.median(time_once(call) for _ in range(reps))
            rows.append(
                Row(
                    f"incremental-{row_id}-{count}",
                    f"{what}, mixed {count:,} items",
                    value,
                    reps=reps,
                    note="info",
                )
            )
    return rows


def bench_fit(sizes, log):
    layers = workloads.layered_layers(sizes.fit_layers, sizes.fit_items_per_layer)
    count = sizes.fit_layers * sizes.fit_items_per_layer
    log(
        f"fit: {sizes.fit_layers} layers x {sizes.fit_items_per_layer} items, "
        f"budgets {workloads.FIT_BUDGETS}"
    )
    compiled = compile_workspace(workloads.layered_workspace(layers))
    peer = PriomptPeer(workloads.layered_markdown_units(layers))
    rows, checks = [], {}
    for budget in workloads.FIT_BUDGETS:
        request = workloads.request(f"fit-{budget}")
        ours_text = (compiled.resolve(request)["output"] or {}).get("text")
        checks[f"budget {budget}: output text equals priompt's"] = ours_text == peer.render(budget)
        settle()
        medians, reps = measure(
            {
                "ours": lambda request=request: served(compiled, request),
                "priompt": lambda budget=budget: peer.render(budget),
            },
            sizes,
        )
        rows.append(
            ratio_row(
                f"fit-{budget}-vs-priompt",
                f"fit {count:,} inline items to {budget:,} tokens",
                medians["ours"],
                "priompt",
                medians["priompt"],
                faster_by=10,
                reps=reps,
            )
        )
    return rows, checks


def bench_scaling(items, message, sizes, log):
    """Time resolution at two sizes; also return compile and first-resolve (cold) times."""
    small, large = sizes.scaling_small, sizes.scaling_large
    log(f"scaling: {small:,} vs {large:,} items (compiling both)")
    compiled, cold = {}, {}
    for count in (small, large):
        cold[count] = compile_cold(workloads.pool_workspace(items[:count]), message)
        compiled[count] = cold[count].pop("compiled")
    settle()
    rows = []
    for mode in ("retrieve", "inline"):
        request = workloads.request(mode, message)
        medians, reps = measure(
            {
                count: lambda count=count, request=request: served(compiled[count], request)
                for count in (small, large)
            },
            sizes,
        )
        ratio = medians[large] / medians[small]
        limit = 12 * (large / small) / 10
        rows.append(
            Row(
                f"scaling-{mode}",
                f"{mode} layer, {small:,} -> {large:,} items",
                medians[large],
                f"{small:,} items",
                medians[small],
                "large/small",
                ratio,
                f"<= {limit:g}x",
                ratio <= limit,
                reps,
            )
        )
    return rows, cold


def compile_cold(document, message):
    """Return the compiled workspace, the compile time and the first (cold) resolution's time.

    Indexes may be built lazily, on the first resolution that needs them; the cold figure
    (compile, then the first retrieve and inline resolutions) is what a fresh import costs.
    """
    start = CLOCK["now"]()
    compiled = compile_workspace(document)
    compile_ns = CLOCK["now"]() - start
    for mode in ("retrieve", "inline"):
        served(compiled, workloads.request(mode, message))
    return {
        "compiled": compiled,
        "compile_ns": compile_ns,
        "cold_ns": CLOCK["now"]() - start,
    }


def bench_compile(items, message, sizes, cold, log):
    count, large = sizes.scaling_small, sizes.scaling_large
    log(f"compile: {count:,} items x {sizes.compile_reps}")
    samples = [cold[count]]
    for _ in range(sizes.compile_reps - 1):
        sample = compile_cold(workloads.pool_workspace(items[:count]), message)
        del sample["compiled"]
        samples.append(sample)
    per_10k = 10_000 / count
    rows = []
    for key, what in (("compile_ns", "compile_workspace"), ("cold_ns", "compile + first resolves")):
        rows.append(
            Row(
                f"{key.removesuffix('_ns').replace('_', '-')}-per-10k",
                f"{what}, per 10,000 items (pool of {count:,})",
                statistics.median(sample[key] for sample in samples) * per_10k,
                reps=len(samples),
                note="info",
            )
        )
        rows.append(
            Row(
                f"{key.removesuffix('_ns').replace('_', '-')}-large-per-10k",
                f"{what}, per 10,000 items (pool of {large:,})",
                cold[large][key] * 10_000 / large,
                reps=1,
                note="info",
            )
        )
    return rows


def bench_live_preview(sizes, log):
    document, request = workloads.mixed_workspace(sizes.live_items)
    log(f"live preview: mixed workspace of {sizes.live_items:,} items, 6 layers")
    compiled = compile_workspace(document)
    status = compiled.resolve(request)["status"]
    settle()
    medians, reps = measure({"ours": lambda: served(compiled, request)}, sizes)
    return [
        Row(
            "live-preview",
            f"live preview, mixed {sizes.live_items:,} items ({status})",
            medians["ours"],
            reps=reps,
            note="info",
        )
    ]


def format_duration(ns, note=""):
    if ns is None:
        return ""
    if note == "bytes":
        return f"{ns:,.0f} B"
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e3:.1f} µs"


def format_report(rows, checks, header):
    columns = ("benchmark", "ours", "peer", "peer time", "ratio", "target", "result", "reps")
    table = [columns]
    for row in rows:
        result = row.note.upper() if row.passed is None else ("PASS" if row.passed else "MISS")
        ours = format_duration(row.ours_ns, row.note)
        ratio = f"{row.ratio_kind} {row.ratio:.2f}x" if row.ratio is not None else ""
        table.append(
            (
                row.label,
                ours,
                row.peer,
                format_duration(row.peer_ns),
                ratio,
                row.target,
                result,
                str(row.reps),
            )
        )
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    lines = [*header, ""]
    for index, line in enumerate(table):
        lines.append(
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        )
        if index == 0:
            lines.append("  ".join("-" * width for width in widths))
    lines.append("")
    lines.append("sanity checks (apples to apples):")
    lines.extend(f"  {'ok  ' if passed else 'FAIL'}  {name}" for name, passed in checks.items())
    return "\n".join(lines)


def load_average():
    """Return the 1-minute load average (other processes skew every figure), if known."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def environment():
    versions = {}
    for package in PEER_PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "machine": platform.machine(),
        "system": platform.system(),
        "cpus": os.cpu_count(),
        "packages": versions,
    }


def run(sizes, log=print):
    """Run every benchmark group; return (rows, checks)."""
    rows, checks = [], {}
    largest = max(sizes.retrieve_items, sizes.scaling_large)
    start = time.perf_counter()
    items = workloads.generate_items(largest)
    log(f"generated {largest:,} items in {time.perf_counter() - start:.1f} s")
    message = workloads.benchmark_query()

    group_rows, group_checks = bench_retrieve(items[: sizes.retrieve_items], message, sizes, log)
    rows += group_rows
    checks.update(group_checks)
    group_rows, group_checks = bench_fit(sizes, log)
    rows += group_rows
    checks.update(group_checks)
    group_rows, cold = bench_scaling(items, message, sizes, log)
    rows += group_rows
    rows += bench_compile(items, message, sizes, cold, log)
    del items
    settle()
    rows += bench_live_preview(sizes, log)
    rows += bench_incremental(sizes, log)
    gc.unfreeze()
    return rows, checks


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m tests.perf.bench", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes and 3 repetitions: a smoke run, not figures",
    )
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--no-freeze",
        action="store_true",
        help="do not gc.freeze() the set-up objects before timing (see docs/benchmarks.md)",
    )
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="time elapsed (wall) or this process's CPU time (cpu: for a shared, busy machine)",
    )
    options = parser.parse_args(argv)
    FREEZE["enabled"] = not options.no_freeze
    CLOCK["now"] = time.process_time_ns if options.clock == "cpu" else time.perf_counter_ns
    CLOCK["name"] = options.clock
    sizes = QUICK if options.quick else FULL

    def log(message):
        print(f"# {message}", file=sys.stderr, flush=True)

    started = time.perf_counter()
    load_before = load_average()
    rows, checks = run(sizes, log)
    env = environment()
    env["load_average"] = {"start": load_before, "end": load_average()}
    env["gc_freeze"] = FREEZE["enabled"]
    env["clock"] = CLOCK["name"]
    mode = "quick smoke run: tiny sizes, not figures" if options.quick else "full run"
    header = [
        f"Context Studio resolver benchmark ({mode})",
        f"python {env['python']} on {env['system']} {env['machine']}, {env['cpus']} CPUs; "
        + ", ".join(f"{name} {version}" for name, version in env["packages"].items()),
        "medians of interleaved repetitions after warmup; ratios of medians; "
        f"1-minute load average {env['load_average']['start']} at start, "
        f"{env['load_average']['end']} at end; gc.freeze() {'on' if FREEZE['enabled'] else 'off'}; "
        f"{CLOCK['name']} clock",
    ]
    print(format_report(rows, checks, header))
    print(f"\n{len(rows)} rows in {time.perf_counter() - started:.0f} s")
    if options.json:
        with open(options.json, "w", encoding="utf-8") as handle:
            json.dump(
                {
                    "mode": "quick" if options.quick else "full",
                    "environment": env,
                    "sizes": dataclasses.asdict(sizes),
                    "rows": [dataclasses.asdict(row) for row in rows],
                    "checks": checks,
                },
                handle,
                indent=2,
            )
    missed = [row.id for row in rows if row.passed is False]
    if options.strict and (missed or not all(checks.values())):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

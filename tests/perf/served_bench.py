"""The served path's first meeting against the held layer, the engine alone, at a customer's
real size: ``python -m tests.perf.served_bench`` (issue 35 item 2).

The generated desk (``tests.perf.desk``: 100 tickets a customer, ~65 terms a ticket) and its
requests, with every item's terms in the form its store keeps them (``pack_terms`` where the
engine has it, else the older JSON text), resolved by ``CompiledWorkspace.resolve_json``:

* **first meeting** — the tickets layer served, each request's customer given as a new
  ``Fetched`` (its 100 entries and stored terms): the engine builds the customer's items and
  postings, then resolves;
* **cached** — the same, each customer's ``Fetched`` given again (its index reused);
* **held** — every ticket held (postings built once, beforehand).

No database: what a worker does with the rows once they are read. Also the held layers'
compile from stored terms (every index's postings built, the whole desk) and the bytes of
the stored terms. Process CPU per request, median over interleaved rounds. Reported, never
asserted. Runs on an older tree too (the same file), so two trees compare side by side.
"""

import argparse
import statistics
import time

from resolver import analysis, compile_workspace
from resolver.served import Fetched
from tests.perf.desk import desk_requests, generate_desk

PACKED = hasattr(analysis, "pack_terms")


def stored(item: dict):
    terms = analysis.item_terms(item.get("title"), item.get("body"))
    return analysis.pack_terms(terms) if PACKED else analysis.encode_terms(terms)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=int, default=10_000)
    parser.add_argument(
        "--kb", type=int, default=None, help="knowledge-base articles (default: tickets / 10)"
    )
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)

    desk = generate_desk(args.tickets, kb=args.kb)
    document = desk.document()
    analysed = {
        key: {item["path"]: stored(item) for item in items} for key, items in desk.items.items()
    }
    requests = desk_requests(desk, args.requests, seed=7)

    by_customer: dict[str, list[dict]] = {}
    for item in desk.items["tickets"]:
        by_customer.setdefault(item["metadata"]["customer_id"], []).append(item)
    tickets_terms = analysed["tickets"]
    cached_fetched = {}

    def fetched(customer: str) -> Fetched:
        entries = by_customer.get(customer, [])
        return Fetched(
            entries=entries, terms={e["path"]: tickets_terms[e["path"]] for e in entries}
        )

    def source(cached: bool):
        def read(needs):
            out = {}
            for need in needs:
                customer = dict(need.filters)["customer_id"]
                if cached:
                    if customer not in cached_fetched:
                        cached_fetched[customer] = fetched(customer)
                    out[need.layer] = cached_fetched[customer]
                else:
                    out[need.layer] = fetched(customer)
            return out

        return read

    skeleton = {
        **document,
        "layers": [
            {**layer, "items": []} if layer["key"] == "tickets" else layer
            for layer in document["layers"]
        ],
    }
    held_analysed = {key: terms for key, terms in analysed.items() if key != "tickets"}
    served_total = {"tickets": len(desk.items["tickets"])}
    first = compile_workspace(
        skeleton, served=served_total, source=source(False), analysed=held_analysed
    )
    cached = compile_workspace(
        skeleton, served=served_total, source=source(True), analysed=held_analysed
    )

    compiles = []
    for _ in range(3):
        started = time.process_time()
        held = compile_workspace(document, analysed=analysed)
        for index in held.indexes:
            index.postings  # noqa: B018 (built from the stored terms)
        compiles.append(time.process_time() - started)

    runs = {"first meeting": first, "cached": cached, "held": held}
    for compiled in runs.values():
        for request in requests:
            compiled.resolve_json(request)
    for request in requests:
        assert first.resolve_json(request).data == held.resolve_json(request).data
    figures = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, compiled in runs.items():
            started = time.process_time()
            for request in requests:
                compiled.resolve_json(request)
            figures[name].append((time.process_time() - started) / len(requests))
    medians = {name: statistics.median(values) * 1000 for name, values in figures.items()}
    size = sum(len(value) for terms in analysed.values() for value in terms.values())
    items = sum(len(terms) for terms in analysed.values())
    print(
        f"served bench: {args.tickets} tickets ({len(by_customer)} customers), "
        f"{len(desk.items['kb'])} kb articles, "
        f"{len(requests)} summary requests, terms stored {'packed' if PACKED else 'as JSON'} "
        f"({size / items:.0f} bytes an item), {args.rounds} rounds, CPU per request (median)"
    )
    for name, value in medians.items():
        print(f"  {name:<14} {value:7.3f} ms   {value / medians['held']:.2f} × held")
    print(
        f"  held compile, every layer's postings from stored terms ({items} items): "
        f"{min(compiles) * 1000:.0f} ms (best of 3)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

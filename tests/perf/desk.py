"""The generated support desk of issue 20, for the scale benchmark (``scale_bench``).

``generate_desk(N)``: N tickets over N/100 customers (exactly ``tickets_per_customer`` each,
in a seeded random order; ``itemFilter: {customer_id: customer_id}``, metadata
``customer_id``, ``status`` and, for 98 %, an ``updated`` date), N/10 knowledge-base articles
(unscoped) and 40 policies (with a ``summary``), ~65 distinct SPEC §5 terms per item, and two
profiles: ``support-answer`` (tickets retrieved with currentness, kb retrieved, policies
inline) and ``ticket-history`` (the customer's latest tickets). A pure function of its
arguments: text comes from ``tests.perf.workloads``' Zipf vocabulary with fixed seeds.

``Desk.skeleton`` is the workspace without items (what ``import_workspace`` loads first),
``Desk.batches(layer)`` the items as NDJSON bodies for ``POST /api/v1/layers/<key>/bulk``,
``Desk.document()`` the whole workspace (what the answers are checked against).
"""

import datetime
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path

from tests.perf import workloads

SEED = 20261203
TODAY = datetime.date(2026, 11, 29)
TICKETS_PER_CUSTOMER = 100
POLICIES = 40
BATCH_LINES = 10_000
# ~65 distinct SPEC §5 terms per item (title + body), as in the measurements.
BODY_WORDS = (50, 130)
SUPPORT_PROFILE = "support-answer"
HISTORY_PROFILE = "ticket-history"
PROFILES = (SUPPORT_PROFILE, HISTORY_PROFILE)


@dataclass
class Desk:
    """A generated support desk: the workspace without items, and each layer's items."""

    skeleton: dict
    items: dict[str, list[dict]]
    customers: list[str]
    seed: int

    def document(self) -> dict:
        """Return the whole workspace document (SPEC §2): the skeleton with every item."""
        layers = [{**layer, "items": self.items[layer["key"]]} for layer in self.skeleton["layers"]]
        return {**self.skeleton, "layers": layers}

    def batches(self, layer_key: str, lines: int = BATCH_LINES):
        """Yield the layer's items as NDJSON bodies of at most ``lines`` items each."""
        items = self.items[layer_key]
        for start in range(0, len(items), lines):
            chunk = items[start : start + lines]
            yield "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in chunk).encode()

    def item_count(self) -> int:
        return sum(len(items) for items in self.items.values())


def customer_key(index: int) -> str:
    return f"C-{index:06d}"


def generate_desk(
    tickets: int,
    *,
    tickets_per_customer: int = TICKETS_PER_CUSTOMER,
    kb: int | None = None,
    policies: int = POLICIES,
    seed: int = SEED,
) -> Desk:
    """Return the desk of issue 20: ``tickets`` tickets over ``tickets / tickets_per_customer``
    customers (exactly that many each, in a seeded random order), ``kb`` articles (default
    ``tickets / 10``) and ``policies`` policies. A pure function of its arguments."""
    kb = tickets // 10 if kb is None else kb
    customer_count = max(1, math.ceil(tickets / tickets_per_customer))
    customers = [customer_key(index) for index in range(customer_count)]
    owners = [index % customer_count for index in range(tickets)]
    random.Random(seed).shuffle(owners)

    text = workloads.TextGenerator(seed + 1)
    width = max(7, len(str(tickets - 1)))
    ticket_items = []
    for index, owner in enumerate(owners):
        metadata = {"customer_id": customers[owner], "status": text.rng.choice(STATUSES)}
        # A few tickets carry no date: currentness's "unknown" has something to decide.
        if text.rng.random() >= 0.02:
            metadata["updated"] = text.date(TODAY, 400)
        ticket_items.append(
            {
                "path": f"T-{index:0{width}d}",
                "title": text.title(),
                "body": text.body(BODY_WORDS),
                "metadata": metadata,
            }
        )

    text = workloads.TextGenerator(seed + 2)
    width = max(6, len(str(kb - 1)))
    kb_items = [
        {
            "path": f"kb-{index:0{width}d}",
            "title": text.title(),
            "body": text.body(BODY_WORDS),
            "metadata": {"updated": text.date(TODAY, 1000)},
        }
        for index in range(kb)
    ]

    text = workloads.TextGenerator(seed + 3)
    policy_items = [
        {
            "path": f"policy-{index:03d}",
            "title": text.title(),
            "body": text.body(BODY_WORDS),
            "metadata": {"updated": text.date(TODAY, 700), "summary": text.title() + "."},
        }
        for index in range(policies)
    ]
    return Desk(
        skeleton=desk_skeleton(),
        items={"tickets": ticket_items, "kb": kb_items, "policies": policy_items},
        customers=customers,
        seed=seed,
    )


STATUSES = ("open", "pending", "solved", "closed")


def desk_skeleton() -> dict:
    """Return the workspace without items: one consumer, three layers, two profiles.

    ``support-answer`` retrieves the customer's current tickets and knowledge-base articles
    beside every policy's summary; ``ticket-history`` lists the customer's latest tickets.
    """
    return {
        "version": 1,
        "consumers": [
            {
                "key": "support-assistant",
                "name": "Support assistant",
                "render": {"format": "markdown", "includeCurrentness": False},
            }
        ],
        "layers": [
            {
                "key": "policies",
                "name": "Support policies",
                "description": "The rules agents and assistants must follow.",
            },
            {
                "key": "tickets",
                "name": "Customer tickets",
                "description": "Every ticket of the customer.",
                "requiresInput": ["customer_id"],
                "itemFilter": {"customer_id": "customer_id"},
            },
            {"key": "kb", "name": "Knowledge base", "description": "Help-center articles."},
        ],
        "profiles": [
            {
                "key": SUPPORT_PROFILE,
                "name": "Support answer",
                "consumer": "support-assistant",
                "objective": "answer-ticket",
                "budget": 4000,
                "rules": {
                    "policies": {
                        "participation": "include",
                        "mode": "inline",
                        "required": True,
                        "priority": 100,
                        "facets": ["summary"],
                    },
                    "tickets": {
                        "mode": "retrieve",
                        "priority": 80,
                        "maxItems": 5,
                        "maxTokens": 1500,
                        "currentness": {
                            "maxAgeDays": 180,
                            "onStale": "exclude",
                            "onUnknown": "exclude",
                        },
                    },
                    "kb": {
                        "mode": "retrieve",
                        "priority": 60,
                        "maxItems": 3,
                        "facets": ["excerpt"],
                    },
                },
            },
            {
                "key": HISTORY_PROFILE,
                "name": "Ticket history",
                "consumer": "support-assistant",
                "objective": "summarize-history",
                "budget": 3000,
                "rules": {
                    "tickets": {
                        "mode": "inline",
                        "priority": 80,
                        "order": "recency",
                        "maxItems": 10,
                        "facets": ["body", "meta.status"],
                        "currentness": {"maxAgeDays": 365, "onStale": "warn", "onUnknown": "warn"},
                    },
                    "policies": {"participation": "exclude"},
                    "kb": {"participation": "exclude"},
                },
            },
        ],
    }


def desk_requests(desk: Desk, count: int, *, seed: int, profiles=(SUPPORT_PROFILE,)) -> list:
    """Return ``count`` summary requests: random customers, random 4–8 word messages."""
    rng = random.Random(seed)
    text = workloads.TextGenerator(seed)
    requests = []
    for _ in range(count):
        request = workloads.request(
            rng.choice(profiles),
            text.query(rng.randint(4, 8)),
            customer_id=rng.choice(desk.customers),
        )
        requests.append({**request, "detail": "summary"})
    return requests


def write_desk(desk: Desk, folder: Path, lines: int = BATCH_LINES) -> list[Path]:
    """Write ``workspace.json`` (the skeleton) and ``<layer>-<n>.ndjson`` batches."""
    folder.mkdir(parents=True, exist_ok=True)
    skeleton = folder / "workspace.json"
    skeleton.write_text(json.dumps(desk.skeleton, indent=2, ensure_ascii=False) + "\n")
    written = [skeleton]
    for layer in desk.skeleton["layers"]:
        for number, body in enumerate(desk.batches(layer["key"], lines), 1):
            path = folder / f"{layer['key']}-{number:04d}.ndjson"
            path.write_bytes(body)
            written.append(path)
    return written

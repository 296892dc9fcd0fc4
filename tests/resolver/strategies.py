"""Hypothesis strategies for valid workspace documents (SPEC §2) and requests (SPEC §3).

A generated :class:`Scenario` holds a workspace document, a request for one of its profiles and
what the tests need to judge the resolution without re-implementing the resolver: the index of
the selected profile and, per item, a marker string that occurs nowhere else in the document
(in its path and body, and in its title when it has one), so a test can tell whether an item
leaked into the JSON.
"""

import datetime as dt
import random
from dataclasses import dataclass, field

from hypothesis import strategies as st

NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)

CONSUMER_KEYS = ["assistant", "summarizer"]
OBJECTIVE_KEYS = ["answer-ticket", "draft-reply"]
ENVIRONMENTS = [None, "production", "staging"]
LAYER_KEYS = ["policies", "customer", "tickets", "kb", "glossary", "notes"]
INPUT_KEYS = ["customer_id", "region"]

# Values of the metadata fields an itemFilter maps (`customer_id`, `region`) and of the inputs
# that feed it. Numbers, lists and nulls exercise the canonical comparison of SPEC §4.2.
CUSTOMER_VALUES = ["C-1", "C-2", 7, 7.0, ["C-1", "C-3"], None]
REGION_VALUES = ["eu", "us", True]
INPUT_VALUES = {
    "customer_id": ["C-1", "C-2", "C-3", "7", 7, "", None],
    "region": ["eu", "us", "true", True, "", None],
}

# Words for titles, bodies and messages. The letter "q" never occurs in them, so the item
# markers ("zq<n>x") can only come from the marker itself.
WORDS = [
    "refund",
    "Refunds",
    "refunded",
    "card",
    "cards",
    "wallet",
    "arrived",
    "arrive",
    "login",
    "password",
    "invoice",
    "dispute",
    "the",
    "and",
    "my",
    "not",
    "is",
    "Ｒｅｆｕｎｄ",
    "ＣＡＲＤ",
    "Straße",
    "STRASSE",
    "naïve",
    "café",
    "日本語",
    "🎉",
    "a&b",
    "<b>",
    '"x"',
    "x>y",
    "under_score",
    "2026",
    "5-10",
    "e-mail",
]
MESSAGE_WORDS = [word for word in WORDS if word not in {"a&b", "<b>", '"x"', "x>y"}]

FACETS = ["body", "summary", "excerpt", "meta.tags", "meta.updated", "meta.count", "meta.extra"]


@dataclass
class Scenario:
    """A valid workspace document, a request for it, and what tests need to judge a result."""

    document: dict
    request: dict
    profile_index: int
    markers: dict[tuple[str, str], str] = field(default_factory=dict)  # (layer, path) -> marker


SEEDS = st.integers(0, 2**32 - 1)


@st.composite
def words(draw, min_size=0, max_size=12, vocabulary=WORDS):
    """Return ``min_size`` to ``max_size`` words of ``vocabulary`` joined by spaces."""
    size = draw(st.integers(min_size, max_size))
    return random_words(random.Random(draw(SEEDS)), size, vocabulary)


def random_words(rng, size, vocabulary=WORDS):
    return " ".join(rng.choice(vocabulary) for _ in range(size))


# Item content comes from a seeded generator, one draw per item: generating it draw by draw
# made the examples slow without finding anything the structure draws do not.


def random_date(rng):
    """Return a metadata date value: a date, a datetime string, or something that is no date."""
    hours = rng.randint(-30 * 24, 800 * 24)
    day = (NOW - dt.timedelta(hours=hours)).date()
    return rng.choice(
        [
            day,
            day.isoformat(),
            f"{day.isoformat()}T10:30:00Z",
            f"{day.isoformat()} 23:15",
            f"{day.isoformat()}T01:00:00+05:00",
            "yesterday",
            20261120,
        ]
    )


def random_body(rng):
    # Mostly short paragraphs; a long one now and then crosses the 300-character cut.
    paragraphs = [
        random_words(rng, rng.choice([rng.randint(0, 12), rng.randint(0, 12), rng.randint(40, 70)]))
        for _ in range(rng.randint(0, 3))
    ]
    separator = rng.choice(["\n\n", "\n  \n", "\n\n\n"])
    return separator.join(paragraphs) + rng.choice(["", "\n", "  \n"])


def random_metadata(rng):
    meta = {}
    for name, values in [("customer_id", CUSTOMER_VALUES), ("region", REGION_VALUES)]:
        if rng.random() < 0.7:
            meta[name] = rng.choice(values)
    for name in ["updated", "reviewed", "date"]:
        if rng.random() < 0.5:
            meta[name] = random_date(rng)
    if rng.random() < 0.5:
        meta["summary"] = rng.choice(["", "  ", None, 42, random_words(rng, rng.randint(1, 80))])
    if rng.random() < 0.5:
        meta["tags"] = rng.sample(["billing", "eu", 3, True], rng.randint(0, 3))
    if rng.random() < 0.5:
        meta["count"] = rng.choice([0, 7, 7.0, 2.5, -1])
    if rng.random() < 0.5:
        meta["extra"] = rng.choice([{"b": 1, "a": "x"}, False, None])
    return meta


def random_item(rng, path, marker):
    """Return an item whose path, title and body all carry ``marker``."""
    title = rng.choice(["", "   ", None, None, None]) or random_words(rng, rng.randint(0, 5))
    return {
        "path": f"{path}-{marker}",
        "title": f"{title} {marker}" if title.strip() else title,
        "body": f"{random_body(rng)} {marker}",
        "metadata": random_metadata(rng),
    }


@st.composite
def layers(draw, key, counter):
    """Return one layer document; its items carry fresh markers taken from ``counter``."""
    layer = {"key": key, "name": draw(st.sampled_from(["", key.title(), "  Spaced \n name "]))}
    availability = draw(st.sampled_from([None, None, "auto", "auto", "unavailable", "unknown"]))
    if availability is not None:
        layer["availability"] = availability
    if draw(st.integers(0, 3)) == 3:
        layer["appliesTo"] = {
            "objectives": draw(st.lists(st.sampled_from([*OBJECTIVE_KEYS, "other"]), unique=True)),
            "consumers": draw(st.lists(st.sampled_from([*CONSUMER_KEYS, "other"]), unique=True)),
        }
    if draw(st.integers(0, 3)) == 3:
        layer["requiresInput"] = draw(
            st.lists(st.sampled_from(INPUT_KEYS), min_size=1, unique=True)
        )
    if draw(st.integers(0, 2)) == 2:
        fields = draw(st.lists(st.sampled_from(INPUT_KEYS), min_size=1, unique=True))
        layer["itemFilter"] = {name: name for name in fields}
    # Mostly layers with material; now and then an empty one.
    min_items = 0 if draw(st.integers(0, 7)) == 7 else 1
    paths = draw(
        st.lists(
            st.sampled_from(["a", "b", "c", "d", "e", "f", "g"]), min_size=min_items, unique=True
        )
    )
    items = [random_item(random.Random(draw(SEEDS)), path, f"zq{next(counter)}x") for path in paths]
    layer["items"] = items
    return layer


@st.composite
def currentness(draw):
    record = {"maxAgeDays": draw(st.integers(0, 400))}
    for name, values in [
        ("field", ["updated", "reviewed"]),
        ("onStale", ["warn", "exclude"]),
        ("onUnknown", ["warn", "exclude"]),
    ]:
        if draw(st.integers(0, 2)) < 2:
            record[name] = draw(st.sampled_from(values))
    return record


@st.composite
def rules(draw):
    """Return a rule with a random subset of its fields, valid by SPEC §2.1."""
    candidates = {
        "participation": st.sampled_from(["auto", "auto", "include", "exclude"]),
        "mode": st.sampled_from(["inline", "retrieve", "on-demand"]),
        "required": st.sampled_from([False, False, False, True]),
        "priority": st.sampled_from([0, 10, 50, 50, 90, -5, 2.5]),
        "maxItems": st.sampled_from([None, 5, 2, 1, 0]),
        "maxTokens": st.sampled_from([None, 400, 60, 20, 1]),
        "order": st.sampled_from(["relevance", "recency", "path"]),
        "facets": st.lists(st.sampled_from(FACETS), min_size=1, max_size=3, unique=True),
        "currentness": currentness(),
    }
    # Each field is given two times out of three; the others take the default rule's value.
    rule = {name: draw(value) for name, value in candidates.items() if draw(st.integers(0, 2)) < 2}
    if rule.get("required") and (
        rule.get("participation") == "exclude" or rule.get("maxItems") == 0
    ):
        rule["required"] = False
    return rule


@st.composite
def workspaces(draw):
    """Return ``(document, markers)``: a valid workspace document and its item markers."""
    counter = iter(range(1, 10_000))
    consumers = [
        {
            "key": key,
            "name": key.title(),
            "render": {
                "format": draw(st.sampled_from(["markdown", "xml"])),
                "includeCurrentness": draw(st.booleans()),
            },
        }
        for key in CONSUMER_KEYS
    ]
    layer_keys = draw(st.lists(st.sampled_from(LAYER_KEYS), min_size=1, max_size=5, unique=True))
    layer_docs = [draw(layers(key, counter)) for key in layer_keys]
    selections = draw(
        st.lists(
            st.tuples(
                st.sampled_from(CONSUMER_KEYS),
                st.sampled_from(OBJECTIVE_KEYS),
                st.sampled_from(ENVIRONMENTS),
            ),
            min_size=1,
            max_size=3,
            unique=True,
        )
    )
    profiles = []
    for index, (consumer, objective, environment) in enumerate(selections):
        ruled = [key for key in layer_keys if draw(st.integers(0, 3)) < 3]
        profiles.append(
            {
                "key": f"profile-{index}",
                "name": f"Profile {index}",
                "consumer": consumer,
                "objective": objective,
                "environment": environment,
                "budget": draw(st.one_of(st.integers(100, 5000), st.integers(1, 100))),
                "rules": {key: draw(rules()) for key in ruled},
            }
        )
    document = {"version": 1, "consumers": consumers, "layers": layer_docs, "profiles": profiles}
    markers = {
        (layer["key"], item["path"]): item["path"].rsplit("-", 1)[1]
        for layer in layer_docs
        for item in layer["items"]
    }
    return document, markers


@st.composite
def requests(draw, document):
    """Return ``(request, profile_index)`` for a profile of ``document``."""
    index = draw(st.integers(0, len(document["profiles"]) - 1))
    profile = document["profiles"][index]
    if draw(st.booleans()):
        request = {"profile": profile["key"]}
    else:
        request = {"consumer": profile["consumer"], "objective": profile["objective"]}
        if profile["environment"] is not None or draw(st.booleans()):
            request["environment"] = profile["environment"]
    request_input = {}
    message = draw(st.one_of(st.none(), words(0, 8, MESSAGE_WORDS)))
    if message is not None or draw(st.booleans()):
        request_input["message"] = message
    for key in INPUT_KEYS:
        if draw(st.integers(0, 3)) < 3:
            request_input[key] = draw(st.sampled_from(INPUT_VALUES[key]))
    request["input"] = request_input
    request["now"] = draw(
        st.sampled_from(
            [
                "2026-11-29T12:00:00Z",
                "2026-11-29",
                "2026-11-29 08:00",
                "2026-11-29T12:00:00+02:00",
                "2025-06-01T00:00:00Z",
            ]
        )
    )
    if draw(st.booleans()):
        request["format"] = draw(st.sampled_from([None, "markdown", "xml"]))
    if draw(st.integers(0, 3)) == 3:
        keys = [layer["key"] for layer in document["layers"]]
        chosen = draw(st.lists(st.sampled_from(keys), unique=True, max_size=2))
        request["availability"] = {
            key: draw(st.sampled_from(["auto", "unavailable", "unknown"])) for key in chosen
        }
    return request, index


@st.composite
def scenarios(draw):
    document, markers = draw(workspaces())
    request, index = draw(requests(document))
    return Scenario(document=document, request=request, profile_index=index, markers=markers)


def canonical(value):
    """Return the canonical string of a scalar (SPEC §4.2), for the values generated here."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return value


def is_provided(request_input, key):
    """Return whether an input key is provided: present, not null and not ``""`` (SPEC §3)."""
    return request_input.get(key) not in (None, "")


def passes_item_filter(item, item_filter, request_input):
    """Return whether ``item`` is a candidate of a layer with ``item_filter`` (SPEC §4.2)."""
    for name, input_key in item_filter.items():
        if not is_provided(request_input, input_key):
            return False
        wanted = canonical(request_input[input_key])
        value = item.get("metadata", {}).get(name)
        values = value if isinstance(value, list) else [value]
        if not any(
            v is not None and not isinstance(v, dict) and canonical(v) == wanted for v in values
        ):
            return False
    return True


def filtered_out_markers(scenario):
    """Return the markers of items that an itemFilter keeps out of the scenario's request."""
    request_input = scenario.request.get("input", {})
    return {
        scenario.markers[(layer["key"], item["path"])]
        for layer in scenario.document["layers"]
        if layer.get("itemFilter")
        for item in layer["items"]
        if not passes_item_filter(item, layer["itemFilter"], request_input)
    }

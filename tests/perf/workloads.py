"""Deterministic synthetic workspaces for the resolver benchmark.

Every builder is a pure function of its arguments: text comes from a fixed vocabulary drawn
with ``random.Random(seed)`` under a Zipf–Mandelbrot law (function words most frequent, then
support-desk words, then a long tail of made-up words), so two runs — or two machines — build
byte-identical workspaces and the figures compare.

Item paths are zero-padded (``doc-000042``), so path order is index order: a peer that breaks
score ties by document index breaks them exactly as the resolver breaks them by path.
"""

import datetime
import itertools
import random
import re
import unicodedata

import snowballstemmer

SEED = 20261129
NOW = "2026-11-29T12:00:00Z"
VOCABULARY_SIZE = 20_000
ZIPF_EXPONENT = 1.0
ZIPF_SHIFT = 2.7
QUERY_POOL = 2000


def _words(text):
    return tuple(text.split())


# SPEC §5, checked before stemming.
STOPWORDS = frozenset(
    _words(
        "a an and are as at be but by can do for from has have how i if in is it its me my no not "
        "of on or our so than that the their them then there these they this to was we were what "
        "when where which who why will with you your"
    )
)

# The head of the distribution, roughly in English frequency order; most are stopwords.
FUNCTION_WORDS = _words(
    "the to and of a in is it you that for on with was as i be this have not are at but we "
    "your my they can if or so do will all just about would there what when from has been "
    "an by which should could their our me no more also only then than some any these very "
    "after before into out up because over still again"
)

# Mid-frequency words of a support desk, with inflections so stemming matters.
DOMAIN_WORDS = _words(
    "account accounts refund refunds refunded refunding order orders ordered payment payments "
    "invoice invoices invoiced customer customers delivery deliveries delivered shipping "
    "shipped ticket tickets password passwords login logins error errors subscription "
    "subscriptions plan plans billing bill billed charge charges charged card cards email "
    "emails address addresses update updates updated cancel cancelled cancellation return "
    "returns returned replace replaced replacement warranty device devices battery screen app "
    "sync synced backup backups export exported import imported report reports dashboard "
    "permission permissions admin user users team teams workspace integration integrations "
    "webhook webhooks token tokens api timeout timeouts latency outage outages incident "
    "incidents escalation escalated policy policies discount discounts coupon credit credits "
    "balance statement tax receipt receipts tracking carrier package packages damaged missing "
    "late arrive arrived arriving received sent failed failing declined approved pending "
    "processed processing contract renewal renewed trial upgrade upgraded downgrade migration "
    "migrated server servers region regions storage quota limit limits usage invoice-run "
    "support agent agents reply replied customer-facing priority urgent week weeks month "
    "months day days hour hours morning yesterday today again never always "
    "problem problems issue issues question questions answer answers help helped working "
    "broken restart restarted install installed version versions release notes setting "
    "settings configure configured network connection connected disconnect slow fast error-rate"
)

_SYLLABLE_ONSETS = _words("b c d f g h j k l m n p r s t v w z br cr dr fl gr pl pr st tr")
_SYLLABLE_VOWELS = _words("a e i o u ai ea io ou")
_SYLLABLE_CODAS = ["", "", "", "n", "r", "s", "l", "t", "x", "nd", "st"]

_TOKEN_RUN = re.compile(r"[^\W_]+")
_STEMMER = snowballstemmer.stemmer("english")
_STEMS: dict[str, str] = {}


def spec_tokens(text):
    """Return the tokens of ``text`` exactly as SPEC §5 defines them (stems, stopwords out).

    An independent implementation for the peers: they get the very tokens the resolver uses,
    computed before any timed region.
    """
    tokens = []
    for word in _TOKEN_RUN.findall(unicodedata.normalize("NFKC", text).casefold()):
        if word in STOPWORDS:
            continue
        stem = _STEMS.get(word)
        if stem is None:
            stem = _STEMS[word] = _STEMMER.stemWord(word)
        tokens.append(stem)
    return tokens


def build_vocabulary(size=VOCABULARY_SIZE, seed=SEED):
    """Return ``size`` distinct words in rank order (rank 1 = most frequent).

    The vocabulary has its own seed: every text stream (corpus, queries) shares it.
    """
    rng = random.Random(seed)
    words = list(dict.fromkeys(FUNCTION_WORDS))
    domain = [w for w in dict.fromkeys(DOMAIN_WORDS) if w not in words]
    rng.shuffle(domain)
    words.extend(domain)
    seen = set(words)
    while len(words) < size:
        word = "".join(
            rng.choice(_SYLLABLE_ONSETS)
            + rng.choice(_SYLLABLE_VOWELS)
            + rng.choice(_SYLLABLE_CODAS)
            for _ in range(rng.choice((1, 2, 2, 2, 3)))
        )
        if len(word) > 2 and word not in seen:
            seen.add(word)
            words.append(word)
    return words[:size]


class TextGenerator:
    """Zipf-distributed words, sentences, titles and bodies from one seeded stream."""

    def __init__(self, seed=SEED, vocabulary_size=VOCABULARY_SIZE):
        self.rng = random.Random(seed)
        self.words = build_vocabulary(vocabulary_size)
        weights = [
            1.0 / (rank + ZIPF_SHIFT) ** ZIPF_EXPONENT for rank in range(1, len(self.words) + 1)
        ]
        self.cum_weights = list(itertools.accumulate(weights))
        # Titles and queries use content words only: the vocabulary past the function words.
        head = len(dict.fromkeys(FUNCTION_WORDS))
        self.content_words = self.words[head:]
        self.content_cum_weights = list(itertools.accumulate(weights[head:]))

    def draw(self, count):
        return self.rng.choices(self.words, cum_weights=self.cum_weights, k=count)

    def draw_content(self, count):
        return self.rng.choices(self.content_words, cum_weights=self.content_cum_weights, k=count)

    def title(self):
        words = self.draw_content(self.rng.randint(3, 7))
        return " ".join(words).capitalize()

    def body(self, words=(40, 120)):
        """Return 40–120 words (or ``words``: the least and most) in 1–3 paragraphs of
        sentences, no trailing whitespace."""
        rng = self.rng
        words = self.draw(rng.randint(*words))
        sentences = []
        start = 0
        while start < len(words):
            end = min(len(words), start + rng.randint(5, 16))
            sentence = words[start:end]
            if len(sentence) > 6 and rng.random() < 0.3:
                cut = rng.randint(2, len(sentence) - 2)
                sentence[cut] += ","
            text = " ".join(sentence)
            sentences.append(text[0].upper() + text[1:] + ("?" if rng.random() < 0.08 else "."))
            start = end
        paragraph_count = min(len(sentences), rng.choice((1, 2, 2, 3)))
        size = -(-len(sentences) // paragraph_count)
        paragraphs = [" ".join(sentences[i : i + size]) for i in range(0, len(sentences), size)]
        return "\n\n".join(paragraphs)

    def query(self, word_count=6, pool=QUERY_POOL):
        """Return a message of ``word_count`` content words with distinct stems.

        Words come from the ``pool`` most frequent content words, Zipf-weighted: what users
        type matches some material (a word of the long tail would match nothing and make
        scoring trivially cheap).
        """
        chosen, stems = [], set()
        while len(chosen) < word_count:
            word = self.rng.choices(
                self.content_words[:pool], cum_weights=self.content_cum_weights[:pool]
            )[0]
            tokens = spec_tokens(word)
            if len(tokens) != 1 or tokens[0] in stems:
                continue
            stems.add(tokens[0])
            chosen.append(word)
        return " ".join(chosen)

    def date(self, today=datetime.date(2026, 11, 29), max_age_days=400):
        return (today - datetime.timedelta(days=self.rng.randrange(max_age_days))).isoformat()


def generate_items(count, seed=SEED, prefix="doc", customers=50):
    """Return ``count`` items; ``generate_items(n)`` is a prefix of ``generate_items(m > n)``."""
    text = TextGenerator(seed)
    width = max(6, len(str(count - 1)))
    items = []
    for index in range(count):
        items.append(
            {
                "path": f"{prefix}-{index:0{width}d}",
                "title": text.title(),
                "body": text.body(),
                "metadata": {
                    "updated": text.date(),
                    "customer_id": f"C-{text.rng.randrange(customers)}",
                },
            }
        )
    return items


def benchmark_query(seed=SEED, word_count=6):
    """Return the 6-word benchmark message (its own stream: independent of corpus size)."""
    return TextGenerator(seed + 1).query(word_count)


def _consumer():
    return {"key": "bench", "name": "Benchmark consumer", "render": {"format": "markdown"}}


def pool_workspace(items, *, budget=4000, max_items=10):
    """Return one layer ``pool`` holding ``items`` and two profiles over it.

    ``retrieve``: BM25 against the message, the first ``max_items`` kept (SPEC §4.5).
    ``inline``: every item inline in path order, fitted to the budget (SPEC §4.7).
    """
    return {
        "version": 1,
        "consumers": [_consumer()],
        "layers": [{"key": "pool", "name": "Pool", "items": items}],
        "profiles": [
            {
                "key": "retrieve",
                "consumer": "bench",
                "objective": "retrieve",
                "budget": budget,
                "rules": {
                    "pool": {"participation": "include", "mode": "retrieve", "maxItems": max_items}
                },
            },
            {
                "key": "inline",
                "consumer": "bench",
                "objective": "inline",
                "budget": budget,
                "rules": {"pool": {"participation": "include", "mode": "inline", "order": "path"}},
            },
        ],
    }


def request(profile, message=None, **inputs):
    """Return a SPEC §3 request with a fixed ``now`` (resolution is then deterministic)."""
    payload = dict(inputs)
    if message is not None:
        payload["message"] = message
    return {"profile": profile, "input": payload, "now": NOW}


FIT_BUDGETS = (2000, 8000, 32000)


def layered_layers(layer_count=20, items_per_layer=100, seed=SEED):
    """Return ``layer_count`` layers of ``items_per_layer`` items, in render order.

    Layer ``i`` gets priority ``layer_count - i``, so render order (priority desc, key asc)
    is list order.
    """
    items = generate_items(layer_count * items_per_layer, seed=seed + 2)
    layers = []
    for index in range(layer_count):
        chunk = items[index * items_per_layer : (index + 1) * items_per_layer]
        layers.append(
            {
                "key": f"layer-{index:02d}",
                "name": f"Layer {index:02d}",
                "items": [
                    {**item, "path": f"item-{position:03d}"} for position, item in enumerate(chunk)
                ],
            }
        )
    return layers


def layered_workspace(layers, budgets=FIT_BUDGETS):
    """Return a workspace fitting all ``layers`` inline, one profile ``fit-<budget>`` per budget."""
    rules = {
        layer["key"]: {
            "participation": "include",
            "mode": "inline",
            "priority": len(layers) - index,
            "order": "path",
        }
        for index, layer in enumerate(layers)
    }
    return {
        "version": 1,
        "consumers": [_consumer()],
        "layers": layers,
        "profiles": [
            {
                "key": f"fit-{budget}",
                "consumer": "bench",
                "objective": f"fit-{budget}",
                "budget": budget,
                "rules": rules,
            }
            for budget in budgets
        ],
    }


def layered_markdown_units(layers):
    """Return the markdown text each item adds to the output, in admission order.

    Concatenating the first ``k`` units and a final newline gives exactly the resolver's
    output text (SPEC §6.1) when ``k`` items are admitted: ``## layer`` heads the first item of
    each layer, and blocks and items are joined by a blank line. The priompt peer renders
    these units, so both sides fit the same text to the same budget.
    """
    units = []
    for layer in layers:
        for position, item in enumerate(layer["items"]):
            head = f"## {layer['name']}\n\n" if position == 0 else ""
            separator = "\n\n" if units else ""
            units.append(f"{separator}{head}### {item['title']}\n{item['body'].rstrip()}")
    return units


def mixed_workspace(item_count=2000, seed=SEED):
    """Return (workspace, request) of a realistic support workspace for the live preview.

    Six layers exercising every stage: a required inline policy layer with summaries, tickets
    filtered by customer with currentness and recency, retrieved KB articles with excerpts,
    on-demand runbooks, an out-of-scope layer and an unavailable one.
    """
    items = generate_items(item_count, seed=seed + 3)
    shares = {"policies": 0.05, "tickets": 0.35, "kb": 0.35, "runbooks": 0.1, "notes": 0.1}
    layers, start = [], 0
    for key, share in shares.items():
        end = start + int(item_count * share)
        layers.append({"key": key, "name": key.capitalize(), "items": items[start:end]})
        start = end
    layers.append(
        {"key": "archive", "name": "Archive", "availability": "unavailable", "items": items[start:]}
    )
    by_key = {layer["key"]: layer for layer in layers}
    by_key["tickets"].update(
        requiresInput=["customer_id"], itemFilter={"customer_id": "customer_id"}
    )
    by_key["notes"]["appliesTo"] = {"objectives": ["internal-review"]}
    workspace = {
        "version": 1,
        "consumers": [_consumer()],
        "layers": layers,
        "profiles": [
            {
                "key": "support-answer",
                "consumer": "bench",
                "objective": "answer-ticket",
                "budget": 6000,
                "rules": {
                    "policies": {
                        "mode": "inline",
                        "required": True,
                        "priority": 100,
                        "facets": ["summary"],
                    },
                    "tickets": {
                        "mode": "inline",
                        "priority": 80,
                        "order": "recency",
                        "maxItems": 5,
                        "facets": ["body", "meta.customer_id"],
                        "currentness": {
                            "maxAgeDays": 90,
                            "onStale": "warn",
                            "onUnknown": "exclude",
                        },
                    },
                    "kb": {
                        "mode": "retrieve",
                        "priority": 60,
                        "maxItems": 5,
                        "maxTokens": 1500,
                        "facets": ["excerpt"],
                    },
                    "runbooks": {"mode": "on-demand", "priority": 40, "maxItems": 20},
                    "notes": {"mode": "inline", "priority": 20},
                    "archive": {"participation": "include", "priority": 10},
                },
            }
        ],
    }
    message = TextGenerator(seed + 4).query(8)
    return workspace, request("support-answer", message, customer_id="C-7")

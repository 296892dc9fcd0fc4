"""Typed, validated workspace: frozen dataclasses built once by ``compile_workspace``."""

from dataclasses import dataclass, field

PARTICIPATIONS = ("auto", "include", "exclude")
MODES = ("inline", "retrieve", "on-demand")
ORDERS = ("relevance", "recency", "path")
FORMATS = ("markdown", "xml")
AVAILABILITIES = ("auto", "unavailable", "unknown")
ON_POLICIES = ("exclude", "warn")


@dataclass(frozen=True, slots=True)
class Consumer:
    key: str
    name: str
    format: str = "markdown"
    include_currentness: bool = False


@dataclass(frozen=True, slots=True)
class Currentness:
    max_age_days: int
    field: str = "updated"
    on_stale: str = "exclude"
    on_unknown: str = "exclude"


@dataclass(frozen=True, slots=True)
class Rule:
    participation: str = "auto"
    mode: str = "inline"
    required: bool = False
    priority: float = 0
    max_items: int | None = None
    max_tokens: int | None = None
    order: str | None = None
    facets: tuple[str, ...] = ("body",)
    currentness: Currentness | None = None
    source: str = "default"

    @property
    def effective_order(self) -> str:
        """Return the order, defaulting to relevance for retrieve and path otherwise."""
        if self.order:
            return self.order
        return "relevance" if self.mode == "retrieve" else "path"


DEFAULT_RULE = Rule()


class TextReference:
    """An item's body held outside the workspace (e.g. in a file every server process maps),
    read only when a stage needs it: to render the item, its summary or excerpt, or to count
    its terms when none were given. ``text()`` returns the body; two references are equal
    exactly when they stand for the same text. A caller that gives an item such a body
    validated the text when it stored it: the engine takes it as given."""

    __slots__ = ()

    def text(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Item:
    path: str
    title: str
    body: str | TextReference
    metadata: dict

    @property
    def body_text(self) -> str:
        """Return the body (read through its reference when it is held elsewhere)."""
        body = self.body
        return body if body.__class__ is str else body.text()


@dataclass(frozen=True, slots=True)
class Layer:
    key: str
    name: str
    description: str
    availability: str
    objectives: tuple[str, ...]
    consumers: tuple[str, ...]
    requires_input: tuple[str, ...]
    item_filter: tuple[tuple[str, str], ...]  # (metadata field, input key), by field name
    items: tuple[Item, ...]
    # The number of items of the whole layer when ``items`` holds only some of them (a
    # served layer, ``resolver.served``: the items one request fetched); None: ``items``.
    total: int | None = None

    @property
    def display_name(self) -> str:
        return " ".join(self.name.split()) or self.key

    @property
    def item_total(self) -> int:
        """Return the number of items of the whole layer (SPEC §4.2 ``available.items``)."""
        return len(self.items) if self.total is None else self.total


@dataclass(frozen=True, slots=True)
class Profile:
    key: str
    name: str
    consumer: str
    objective: str
    environment: str | None
    budget: int
    rules: dict = field(default_factory=dict)  # layer key -> Rule (only rules the profile gives)
    description: str = ""

    def rule_for(self, layer_key: str) -> Rule:
        return self.rules.get(layer_key, DEFAULT_RULE)

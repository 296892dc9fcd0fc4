"""The checks of a workspace document's entries (SPEC §2), building the typed model as they go.

``_Builder`` walks the document (consumers, layers and their items, profiles and their rules)
in document order, checking each entry's fields with the primitives of
``resolver.validation.primitives`` and the references between entries; it reuses the layers
and items of an earlier build that are unchanged (see ``build_workspace``).
"""

import datetime as dt
import operator
from collections.abc import Mapping
from dataclasses import dataclass

from resolver.errors import ValidationIssue
from resolver.limits import (
    MAX_BODY_CHARS,
    MAX_METADATA_VALUES,
    MAX_NAME_CHARS,
    MAX_TITLE_CHARS,
    TEXT_RULE_MESSAGE,
    violates_text_rule,
)
from resolver.model import (
    AVAILABILITIES,
    FORMATS,
    MODES,
    ON_POLICIES,
    ORDERS,
    PARTICIPATIONS,
    Consumer,
    Currentness,
    Item,
    Layer,
    Profile,
    Rule,
    TextReference,
)
from resolver.validation.fields import (
    APPLIES_FIELDS,
    BASE_FACETS,
    CONSUMER_FIELDS,
    CURRENTNESS_FIELDS,
    FIELD_RE,
    ITEM_FIELDS,
    LAYER_FIELDS,
    PROFILE_FIELDS,
    RENDER_FIELDS,
    RESERVED_FIELDS,
    RULE_FIELDS,
    TOP_FIELDS,
)
from resolver.validation.primitives import _MISSING, ValueChecks, _join, _Stop
from resolver.values import canonical


@dataclass(frozen=True)
class Workspace:
    """A validated workspace document as typed objects, in document order."""

    consumers: tuple[Consumer, ...]
    layers: tuple[Layer, ...]
    profiles: tuple[Profile, ...]


class _Builder(ValueChecks):
    """The entry checks of a document (or of one entry), on top of the value checks."""

    def __init__(self, document, *, first_only: bool = False):
        super().__init__(first_only=first_only)
        self.document = document
        self.unchanged_layers: Mapping[str, Layer] = {}
        self.earlier_layers: Mapping[str, Layer] = {}
        # Served layers (``resolver.served``): their entries' items are not read; the layer
        # holds no items and this total.
        self.served_layers: Mapping[str, int] = {}

    def run(self) -> tuple[Workspace | None, list[ValidationIssue]]:
        try:
            workspace = self.workspace(self.document)
        except _Stop:
            workspace = None
        if self.issues:
            return None, self.issues
        return workspace, []

    def entry(self, check) -> list[ValidationIssue]:
        """Run ``check(self)`` on one entry and return its issues."""
        check(self)  # not first_only: nothing stops it
        return self.issues

    # -- document --------------------------------------------------------------------------

    def workspace(self, document) -> Workspace:
        doc = self.obj(document, "", TOP_FIELDS)
        if doc is None:
            if document is None:
                self.error("", "must be an object")
            return Workspace((), (), ())
        # Keys are gathered first so cross-references can be checked wherever they appear.
        self.consumer_keys = _keys_of(doc.get("consumers"))
        self.layer_keys = _keys_of(doc.get("layers"))
        consumers: list[Consumer] = []
        layers: list[Layer] = []
        profiles: list[Profile] = []
        for name in doc:
            if name == "version":
                version = doc["version"]
                if self.bad_text(version, "version"):
                    continue
                if version is not None and (isinstance(version, bool) or version != 1):
                    self.error("version", "must be 1")
            elif name == "consumers":
                consumers = self.consumers(doc["consumers"])
            elif name == "layers":
                layers = self.layers(doc["layers"])
            elif name == "profiles":
                profiles = self.profiles(doc["profiles"])
        return Workspace(tuple(consumers), tuple(layers), tuple(profiles))

    def consumers(self, value) -> list[Consumer]:
        out, seen = [], {}
        for i, raw in enumerate(self.list_of(value, "consumers")):
            consumer = self.consumer(raw, f"consumers[{i}]", seen)
            if consumer is not None:
                out.append(consumer)
        return out

    def consumer(self, raw, path: str, seen: dict | None = None) -> Consumer | None:
        c = self.obj(raw, path, CONSUMER_FIELDS)
        if c is None:
            if raw is None:
                self.error(path, "must be an object")
            return None
        key = self.key(c.get("key"), _join(path, "key"))
        if key is not None:
            self.unique(key, seen, path, "consumer")
        name = self.bounded_string(c.get("name"), _join(path, "name"), MAX_NAME_CHARS)
        rpath = _join(path, "render")
        render = self.obj(c.get("render"), rpath, RENDER_FIELDS) or {}
        fmt = self.enum(render.get("format"), f"{rpath}.format", FORMATS, "markdown")
        dates = self.boolean(render.get("includeCurrentness"), f"{rpath}.includeCurrentness", False)
        if key is None:
            return None
        return Consumer(key, name or "", fmt, dates)

    def layers(self, value) -> list[Layer]:
        out, seen = [], {}
        for i, raw in enumerate(self.list_of(value, "layers")):
            layer = self.layer(raw, f"layers[{i}]", seen)
            if layer is not None:
                out.append(layer)
        return out

    def layer(self, raw, path: str, seen: dict | None = None, *, items: bool = True):
        if self.unchanged_layers and isinstance(raw, dict) and isinstance(raw.get("key"), str):
            unchanged = self.unchanged_layers.get(raw["key"])
            if unchanged is not None:
                # Validated when it was first built: only its key counts among the others.
                self.unique(unchanged.key, seen, path, "layer")
                return unchanged
        lay = self.obj(raw, path, LAYER_FIELDS)
        if lay is None:
            if raw is None:
                self.error(path, "must be an object")
            return None
        key = self.key(lay.get("key"), _join(path, "key"))
        if key is not None:
            self.unique(key, seen, path, "layer")
        name = self.bounded_string(lay.get("name"), _join(path, "name"), MAX_NAME_CHARS)
        description = self.bounded_string(
            lay.get("description"), _join(path, "description"), MAX_NAME_CHARS
        )
        availability = self.enum(
            lay.get("availability"), _join(path, "availability"), AVAILABILITIES, "auto"
        )
        apath = _join(path, "appliesTo")
        applies = self.obj(lay.get("appliesTo"), apath, APPLIES_FIELDS) or {}
        objectives = self.string_list(applies.get("objectives"), f"{apath}.objectives", keys=True)
        consumers = self.string_list(applies.get("consumers"), f"{apath}.consumers", keys=True)
        requires = self.string_list(lay.get("requiresInput"), _join(path, "requiresInput"))
        item_filter = self.item_filter(lay.get("itemFilter"), _join(path, "itemFilter"))
        total = self.served_layers.get(key) if key is not None and items else None
        items = items and total is None
        earlier = self.earlier_layers.get(key) if key is not None and items else None
        layer_items = self.items(lay.get("items"), _join(path, "items"), earlier) if items else []
        if key is None:
            return None
        layer = Layer(
            key=key,
            name=name or "",
            description=description or "",
            availability=availability,
            objectives=objectives,
            consumers=consumers,
            requires_input=requires,
            item_filter=tuple(sorted(item_filter)),
            items=tuple(layer_items),
            total=total,
        )
        if earlier is not None and _same_layer(layer, earlier):
            return earlier
        return layer

    def item_filter(self, value, path: str) -> list[tuple[str, str]]:
        out = []
        if value is None or self.bad_text(value, path):
            return out
        if not isinstance(value, dict):
            self.error(path, "must be an object")
            return out
        for field_name, input_key in value.items():
            if isinstance(field_name, str) and violates_text_rule(field_name):
                self.error(path, "a key " + TEXT_RULE_MESSAGE)
                continue
            fpath = f"{path}.{field_name}"
            field_text = self.string(field_name, fpath, required=True)
            if field_text == "":
                self.error(fpath, "metadata field must be a non-empty string")
                continue
            input_text = self.string(input_key, fpath, required=True)
            if input_text == "":
                self.error(fpath, "input key must be a non-empty string")
                continue
            if field_text is not None and input_text is not None:
                out.append((field_text, input_text))
        return out

    def items(self, value, path: str, earlier: Layer | None = None) -> list[Item]:
        out, seen = [], {}
        known = {item.path: item for item in earlier.items} if earlier is not None else None
        for i, raw in enumerate(self.list_of(value, path)):
            if known:
                same = _earlier_item(raw, known)
                if same is not None and same.path not in seen:
                    # Validated when it was first built; only its path's uniqueness is new.
                    seen[same.path] = f"{path}[{i}]"
                    out.append(same)
                    continue
            item = self.item(raw, f"{path}[{i}]", seen)
            if item is not None:
                out.append(item)
        return out

    def item(self, raw, path: str, seen: dict | None = None) -> Item | None:
        plain = plain_item(raw, seen)
        if plain is not None:
            if seen is not None:
                seen[plain.path] = path
            return plain
        return self.checked_item(raw, path, seen)

    def checked_item(self, raw, path: str, seen: dict | None = None) -> Item | None:
        """Check an item entry field by field (``item`` without its shortcut)."""
        it = self.obj(raw, path, ITEM_FIELDS)
        if it is None:
            if raw is None:
                self.error(path, "must be an object")
            return None
        prefix = f"{path}." if path else ""
        ppath = prefix + "path"
        item_path = self.string(it.get("path"), ppath, required=True)
        if item_path is not None:
            if not 1 <= len(item_path) <= 255:
                self.error(ppath, "must be 1 to 255 characters")
                item_path = None
            elif item_path != item_path.strip():
                self.error(ppath, "must not start or end with whitespace")
                item_path = None
            elif seen is not None and item_path in seen:
                self.error(ppath, f'duplicate path "{item_path}" (first at {seen[item_path]})')
                item_path = None
            elif seen is not None:
                seen[item_path] = path
        title = self.bounded_string(it.get("title"), prefix + "title", MAX_TITLE_CHARS)
        body = it.get("body")
        if not isinstance(body, TextReference):  # else validated where it is held
            body = self.bounded_string(body, prefix + "body", MAX_BODY_CHARS) or ""
        metadata = self.metadata(it.get("metadata"), prefix + "metadata")
        if item_path is None:
            return None
        return Item(item_path, title or "", body, metadata)

    def profiles(self, value) -> list[Profile]:
        out, seen, triples = [], {}, {}
        for i, raw in enumerate(self.list_of(value, "profiles")):
            profile = self.profile(raw, f"profiles[{i}]", seen, triples)
            if profile is not None:
                out.append(profile)
        return out

    def profile(
        self, raw, path: str, seen: dict | None = None, triples: dict | None = None
    ) -> Profile | None:
        p = self.obj(raw, path, PROFILE_FIELDS)
        if p is None:
            if raw is None:
                self.error(path, "must be an object")
            return None
        key = self.key(p.get("key"), _join(path, "key"))
        if key is not None:
            self.unique(key, seen, path, "profile")
        name = self.bounded_string(p.get("name"), _join(path, "name"), MAX_NAME_CHARS)
        description = self.bounded_string(
            p.get("description"), _join(path, "description"), MAX_NAME_CHARS
        )
        consumer = self.key(p.get("consumer", _MISSING), _join(path, "consumer"))
        if consumer is not None and consumer not in self.consumer_keys:
            self.error(_join(path, "consumer"), f'consumer "{consumer}" does not exist')
            consumer = None
        objective = self.key(p.get("objective", _MISSING), _join(path, "objective"))
        environment = self.key(p.get("environment"), _join(path, "environment"), required=False)
        budget = self.integer(
            p.get("budget", _MISSING), _join(path, "budget"), minimum=1, required=True
        )
        if triples is not None and consumer is not None and objective is not None:
            triple = (consumer, objective, environment)
            if triple in triples:
                self.error(
                    path,
                    f"another profile ({triples[triple]}) already has consumer "
                    f'"{consumer}", objective "{objective}" and environment '
                    f"{'none' if environment is None else repr(environment)}",
                )
            else:
                triples[triple] = path
        rules = self.rules(p.get("rules"), _join(path, "rules"))
        if None in (key, consumer, objective, budget):
            return None
        return Profile(
            key=key,
            name=name or "",
            consumer=consumer,
            objective=objective,
            environment=environment,
            budget=budget,
            rules=rules,
            description=description or "",
        )

    def rules(self, value, path: str) -> dict:
        if value is None or self.bad_text(value, path):
            return {}
        if not isinstance(value, dict):
            self.error(path, "must be an object")
            return {}
        out = {}
        for raw_key, raw in value.items():
            layer_key = self.rule_layer(raw_key, path)
            if layer_key is None:
                continue
            rule = self.rule(raw, f"{path}.{raw_key}")
            if rule is not None:
                out[layer_key] = rule
        return out

    def rule_layer(self, raw_key, path: str) -> str | None:
        """Return the layer key of a rule in the rules mapping at ``path``, None if invalid."""
        if isinstance(raw_key, str) and violates_text_rule(raw_key):
            self.error(path, "a key " + TEXT_RULE_MESSAGE)
            return None
        rpath = f"{path}.{raw_key}"
        layer_key = self.string(raw_key, rpath, required=True)
        if layer_key is None:
            return None
        if layer_key not in self.layer_keys:
            self.error(rpath, f'layer "{layer_key}" does not exist')
            return None
        return layer_key

    def rule(self, raw, path: str) -> Rule | None:
        r = self.obj(raw, path, RULE_FIELDS)
        if r is None:
            return None
        participation = self.enum(
            r.get("participation"), f"{path}.participation", PARTICIPATIONS, "auto"
        )
        mode = self.enum(r.get("mode"), f"{path}.mode", MODES, "inline")
        required = self.boolean(r.get("required"), f"{path}.required", False)
        priority = self.number(r.get("priority"), f"{path}.priority", 0)
        max_items = self.integer(r.get("maxItems"), f"{path}.maxItems", minimum=0)
        max_tokens = self.integer(r.get("maxTokens"), f"{path}.maxTokens", minimum=1)
        order = self.enum(r.get("order"), f"{path}.order", ORDERS, None)
        facets = self.facets(r.get("facets"), f"{path}.facets")
        currentness = self.currentness(r.get("currentness"), f"{path}.currentness")
        if required and participation == "exclude":
            self.error(f"{path}.required", "a required layer cannot have participation exclude")
        if required and max_items == 0:
            self.error(f"{path}.maxItems", "a required layer cannot have maxItems 0")
        return Rule(
            participation=participation,
            mode=mode,
            required=required,
            priority=priority,
            max_items=max_items,
            max_tokens=max_tokens,
            order=order,
            facets=facets,
            currentness=currentness,
            source="profile",
        )

    def facets(self, value, path: str) -> tuple[str, ...]:
        if value is None or self.bad_text(value, path):
            return ("body",)
        if not isinstance(value, list):
            self.error(path, "must be a list")
            return ("body",)
        if not value:
            self.error(path, "must not be empty")
            return ("body",)
        out = []
        for i, facet in enumerate(value):
            fpath = f"{path}[{i}]"
            if self.bad_text(facet, fpath):
                continue
            if not isinstance(facet, str) or not (
                facet in BASE_FACETS
                or (facet.startswith("meta.") and FIELD_RE.fullmatch(facet[5:]))
            ):
                self.error(fpath, "must be body, summary, excerpt or meta.<field>")
                continue
            if facet in out:
                self.error(fpath, f'duplicate facet "{facet}"')
                continue
            out.append(facet)
        return tuple(out) or ("body",)

    def currentness(self, value, path: str) -> Currentness | None:
        c = self.obj(value, path, CURRENTNESS_FIELDS)
        if c is None:
            return None
        max_age = self.integer(
            c.get("maxAgeDays", _MISSING), f"{path}.maxAgeDays", minimum=0, required=True
        )
        field_name = c.get("field")
        if field_name is None or self.bad_text(field_name, f"{path}.field"):
            field_name = "updated"
        elif not isinstance(field_name, str) or not FIELD_RE.fullmatch(field_name):
            self.error(f"{path}.field", "must match ^[A-Za-z_][A-Za-z0-9_-]*$")
            field_name = "updated"
        elif field_name in RESERVED_FIELDS:
            self.error(f"{path}.field", "must not be ref, title or not-current")
            field_name = "updated"
        on_stale = self.enum(c.get("onStale"), f"{path}.onStale", ON_POLICIES, "exclude")
        on_unknown = self.enum(c.get("onUnknown"), f"{path}.onUnknown", ON_POLICIES, "exclude")
        if max_age is None:
            return None
        return Currentness(max_age, field_name, on_stale, on_unknown)


_ITEM_FIELD_SET = frozenset(ITEM_FIELDS)


_ITEM_KEYS = frozenset(ITEM_FIELDS)
# Metadata values an item of the common shape holds: scalars of exactly these types (a
# subclass may behave otherwise), alone or in a list. None of them is a container.
_PLAIN_SCALARS = frozenset({str, int, float, bool, type(None), dt.date, dt.datetime})


def plain_item(raw, seen: dict | None) -> Item | None:
    """Return the item of an entry of the common shape that has no problem, else None.

    The shortcut of ``_Builder.item``: an exact dict with only item fields (exact strings),
    an exact-string path of 1 to 255 characters without outer whitespace and not in
    ``seen``, title and body absent, None or exact strings within their limits, metadata
    absent, None or an exact dict with exact-string keys whose values are scalars of
    ``_PLAIN_SCALARS`` or lists of them (level 2 of 4), at most ``MAX_METADATA_VALUES`` in
    all, and no text breaking the text rule. Such an entry is one the full checks
    (``checked_item``) accept, building this same item; for any other (None), they decide.
    ``seen`` is not changed.
    """
    if raw.__class__ is not dict or not raw.keys() <= _ITEM_KEYS:
        return None
    for key in raw:
        if key.__class__ is not str:
            return None
    path = raw.get("path")
    if path.__class__ is not str or not 0 < len(path) <= 255 or path != path.strip():
        return None
    if seen is not None and path in seen:
        return None
    title = raw.get("title")
    if title is None:
        title = ""
    elif title.__class__ is not str or len(title) > MAX_TITLE_CHARS:
        return None
    body = raw.get("body")
    if body is None:
        body = ""
    elif body.__class__ is not str or len(body) > MAX_BODY_CHARS or violates_text_rule(body):
        return None
    texts = [path, title]
    metadata = raw.get("metadata")
    if metadata is None:
        metadata = {}
    elif metadata.__class__ is not dict:
        return None
    else:
        values = 0
        scalars = _PLAIN_SCALARS
        for key, value in metadata.items():
            if key.__class__ is not str:
                return None
            texts.append(key)
            kind = value.__class__
            if kind is str:
                texts.append(value)
            elif kind is list:
                for element in value:
                    if element.__class__ is str:
                        texts.append(element)
                    elif element.__class__ not in scalars:
                        return None
                values += len(value) - 1
            elif kind not in scalars:
                return None
            values += 1
        if values > MAX_METADATA_VALUES:
            return None
    if violates_text_rule("".join(texts)):
        return None
    return Item(path, title, body, metadata)


def _earlier_item(raw, known: dict) -> Item | None:
    """Return the item of ``known`` (path -> Item) that the entry ``raw`` builds again exactly.

    Exactly: every field with the type it has in the item (a string given as a number, or
    metadata equal only by ``==``, counts as changed); None when there is no such item.
    """
    if raw.__class__ is not dict or not raw.keys() <= _ITEM_FIELD_SET:
        return None
    path = raw.get("path")
    item = known.get(path) if path.__class__ is str else None
    if item is None:
        return None
    title, body, metadata = raw.get("title"), raw.get("body"), raw.get("metadata")
    if title is None:
        title = ""
    if body is None:
        body = ""
    if metadata is None:
        metadata = {}
    if (
        title.__class__ is str
        and (body.__class__ is str or isinstance(body, TextReference))
        and title == item.title
        and body == item.body
        and same_value(metadata, item.metadata)
    ):
        return item
    return None


_TEXT = frozenset((str, type(None)))  # equal values of these types are the same


def same_value(a, b) -> bool:
    """Return whether two loaded values are the same, types included, all the way down.

    Stricter than ``==``, which holds for ``1 == 1.0 == True`` and ``-0.0 == 0.0``: values
    that are ``==`` may still render or match differently (SPEC §4.2 canonical strings, JSON
    objects in facets). Mapping keys must be strings (others are never the same), and their
    order is free, as it is everywhere in resolution. NaN is never the same as anything.
    """
    kind = a.__class__
    if kind is not b.__class__ or a != b:
        return False
    if kind is dict:
        if not _TEXT.issuperset(map(type, a)):
            return False
        if _TEXT.issuperset(map(type, a.values())):
            return True
        return all(same_value(value, b[key]) for key, value in a.items())
    if kind is list or kind is tuple:
        return _TEXT.issuperset(map(type, a)) or all(map(same_value, a, b))
    if kind is float:
        return repr(a) == repr(b)
    if kind is str or kind is int or kind is bool or a is None:
        return True
    # Dates and datetimes (offsets), and anything else: the same value written the same way.
    return repr(a) == repr(b)


def _same_layer(layer: Layer, earlier: Layer) -> bool:
    """Return whether a layer built again is the earlier one: same fields, same item objects."""
    return (
        layer.key == earlier.key
        and layer.name == earlier.name
        and layer.description == earlier.description
        and layer.availability == earlier.availability
        and layer.objectives == earlier.objectives
        and layer.consumers == earlier.consumers
        and layer.requires_input == earlier.requires_input
        and layer.item_filter == earlier.item_filter
        and layer.total == earlier.total
        and len(layer.items) == len(earlier.items)
        and all(map(operator.is_, layer.items, earlier.items))
    )


def _keys_of(value) -> set:
    keys = set()
    if isinstance(value, list):
        for element in value:
            if isinstance(element, dict):
                key = element.get("key")
                if isinstance(key, (str, int, float)) and not isinstance(key, bool):
                    keys.add(canonical(key))
    return keys

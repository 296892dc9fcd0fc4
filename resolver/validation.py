"""Validation of workspace documents (SPEC §2): every error, in document order, with its path.

The same messages serve the CLI, the import, the API and the editor; ``build_workspace`` turns
a valid document into the typed model at the same time, so nothing is checked twice.
"""

import datetime as dt
import math
import re
from dataclasses import dataclass

from resolver.errors import ValidationIssue
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
)
from resolver.values import canonical

KEY_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
FIELD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
RESERVED_FIELDS = ("ref", "title", "not-current")
BASE_FACETS = ("body", "summary", "excerpt")

TOP_FIELDS = ("version", "consumers", "layers", "profiles")
CONSUMER_FIELDS = ("key", "name", "render")
RENDER_FIELDS = ("format", "includeCurrentness")
LAYER_FIELDS = (
    "key",
    "name",
    "description",
    "availability",
    "appliesTo",
    "requiresInput",
    "itemFilter",
    "items",
)
APPLIES_FIELDS = ("objectives", "consumers")
ITEM_FIELDS = ("path", "title", "body", "metadata")
PROFILE_FIELDS = (
    "key",
    "name",
    "description",
    "consumer",
    "objective",
    "environment",
    "budget",
    "rules",
)
RULE_FIELDS = (
    "participation",
    "mode",
    "required",
    "priority",
    "maxItems",
    "maxTokens",
    "order",
    "facets",
    "currentness",
)
CURRENTNESS_FIELDS = ("maxAgeDays", "field", "onStale", "onUnknown")

_MISSING = object()


@dataclass(frozen=True)
class Workspace:
    """A validated workspace document as typed objects, in document order."""

    consumers: tuple[Consumer, ...]
    layers: tuple[Layer, ...]
    profiles: tuple[Profile, ...]


def validate_workspace(document) -> list[ValidationIssue]:
    """Return every error of a workspace document, in document order ([] when valid)."""
    return _Builder(document).run()[1]


def build_workspace(document, *, first_only: bool = False) -> tuple[Workspace | None, list]:
    """Return ``(workspace, issues)``; the workspace is None when there is any issue."""
    return _Builder(document, first_only=first_only).run()


class _Stop(Exception):
    """Raised to stop at the first issue when only the first is wanted."""


class _Builder:
    def __init__(self, document, *, first_only: bool = False):
        self.document = document
        self.first_only = first_only
        self.issues: list[ValidationIssue] = []

    # -- reporting -------------------------------------------------------------------------

    def error(self, path: str, message: str) -> None:
        self.issues.append(ValidationIssue(path, message))
        if self.first_only:
            raise _Stop

    def run(self) -> tuple[Workspace | None, list[ValidationIssue]]:
        try:
            workspace = self.workspace(self.document)
        except _Stop:
            workspace = None
        if self.issues:
            return None, self.issues
        return workspace, []

    # -- primitives ------------------------------------------------------------------------

    def obj(self, value, path: str, allowed: tuple[str, ...]) -> dict | None:
        """Return the mapping at path (None when absent), reporting unknown fields."""
        if value is None:
            return None
        if not isinstance(value, dict):
            self.error(path, "must be an object")
            return None
        for key in value:
            if key not in allowed:
                self.error(_join(path, str(key)), "unknown field")
        return value

    def string(self, value, path: str, *, required: bool = False, default: str = "") -> str | None:
        if value is None or value is _MISSING:
            if required:
                self.error(path, "is required")
                return None
            return default
        if isinstance(value, str):
            return value
        if isinstance(value, (bool, int, float, dt.date)):
            if isinstance(value, float) and not math.isfinite(value):
                self.error(path, "must be a string")
                return None
            return canonical(value)
        self.error(path, "must be a string")
        return None

    def key(self, value, path: str, *, required: bool = True) -> str | None:
        text = self.string(value, path, required=required, default=None)
        if text is None:
            return None
        if not KEY_RE.fullmatch(text):
            self.error(path, f"must match ^[a-z0-9][a-z0-9_-]{{0,63}}$ (got {text!r})")
            return None
        return text

    def enum(self, value, path: str, choices: tuple[str, ...], default: str | None):
        if value is None or value is _MISSING:
            return default
        if not isinstance(value, str) or value not in choices:
            self.error(path, "must be one of " + ", ".join(choices))
            return default
        return value

    def boolean(self, value, path: str, default: bool) -> bool:
        if value is None or value is _MISSING:
            return default
        if not isinstance(value, bool):
            self.error(path, "must be true or false")
            return default
        return value

    def integer(self, value, path: str, *, minimum: int, required: bool = False):
        if value is None or value is _MISSING:
            if required:
                self.error(path, "is required")
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(path, "must be an integer")
            return None
        if value < minimum:
            self.error(path, f"must be an integer >= {minimum}")
            return None
        return value

    def number(self, value, path: str, default: float) -> float:
        if value is None or value is _MISSING:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.error(path, "must be a number")
            return default
        if not math.isfinite(value):
            self.error(path, "must be a finite number")
            return default
        return value

    def list_of(self, value, path: str) -> list:
        if value is None:
            return []
        if not isinstance(value, list):
            self.error(path, "must be a list")
            return []
        return value

    def string_list(self, value, path: str, *, keys: bool = False) -> tuple[str, ...]:
        out = []
        for i, element in enumerate(self.list_of(value, path)):
            element_path = f"{path}[{i}]"
            text = (
                self.key(element, element_path)
                if keys
                else self.string(element, element_path, required=True)
            )
            if text is None:
                continue
            if not keys and not text:
                self.error(element_path, "must be a non-empty string")
                continue
            out.append(text)
        return tuple(out)

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
            path = f"consumers[{i}]"
            c = self.obj(raw, path, CONSUMER_FIELDS)
            if c is None:
                if raw is None:
                    self.error(path, "must be an object")
                continue
            key = self.key(c.get("key"), f"{path}.key")
            if key is not None:
                if key in seen:
                    self.error(f"{path}.key", f'duplicate consumer key "{key}" ({seen[key]})')
                else:
                    seen[key] = f"first at {path}"
            name = self.string(c.get("name"), f"{path}.name")
            render = self.obj(c.get("render"), f"{path}.render", RENDER_FIELDS) or {}
            fmt = self.enum(render.get("format"), f"{path}.render.format", FORMATS, "markdown")
            dates = self.boolean(
                render.get("includeCurrentness"), f"{path}.render.includeCurrentness", False
            )
            if key is not None:
                out.append(Consumer(key, name or "", fmt, dates))
        return out

    def layers(self, value) -> list[Layer]:
        out, seen = [], {}
        for i, raw in enumerate(self.list_of(value, "layers")):
            path = f"layers[{i}]"
            lay = self.obj(raw, path, LAYER_FIELDS)
            if lay is None:
                if raw is None:
                    self.error(path, "must be an object")
                continue
            key = self.key(lay.get("key"), f"{path}.key")
            if key is not None:
                if key in seen:
                    self.error(f"{path}.key", f'duplicate layer key "{key}" ({seen[key]})')
                else:
                    seen[key] = f"first at {path}"
            name = self.string(lay.get("name"), f"{path}.name")
            description = self.string(lay.get("description"), f"{path}.description")
            availability = self.enum(
                lay.get("availability"), f"{path}.availability", AVAILABILITIES, "auto"
            )
            applies = self.obj(lay.get("appliesTo"), f"{path}.appliesTo", APPLIES_FIELDS) or {}
            objectives = self.string_list(
                applies.get("objectives"), f"{path}.appliesTo.objectives", keys=True
            )
            consumers = self.string_list(
                applies.get("consumers"), f"{path}.appliesTo.consumers", keys=True
            )
            requires = self.string_list(lay.get("requiresInput"), f"{path}.requiresInput")
            item_filter = []
            raw_filter = lay.get("itemFilter")
            if raw_filter is not None and not isinstance(raw_filter, dict):
                self.error(f"{path}.itemFilter", "must be an object")
            elif raw_filter:
                for field_name, input_key in raw_filter.items():
                    fpath = f"{path}.itemFilter.{field_name}"
                    field_text = self.string(field_name, fpath, required=True)
                    if field_text == "":
                        self.error(fpath, "metadata field must be a non-empty string")
                        continue
                    input_text = self.string(input_key, fpath, required=True)
                    if input_text == "":
                        self.error(fpath, "input key must be a non-empty string")
                        continue
                    if field_text is not None and input_text is not None:
                        item_filter.append((field_text, input_text))
            items = self.items(lay.get("items"), f"{path}.items")
            if key is not None:
                out.append(
                    Layer(
                        key=key,
                        name=name or "",
                        description=description or "",
                        availability=availability,
                        objectives=objectives,
                        consumers=consumers,
                        requires_input=requires,
                        item_filter=tuple(sorted(item_filter)),
                        items=tuple(items),
                    )
                )
        return out

    def items(self, value, path: str) -> list[Item]:
        out, seen = [], {}
        for i, raw in enumerate(self.list_of(value, path)):
            ipath = f"{path}[{i}]"
            it = self.obj(raw, ipath, ITEM_FIELDS)
            if it is None:
                if raw is None:
                    self.error(ipath, "must be an object")
                continue
            item_path = self.string(it.get("path"), f"{ipath}.path", required=True)
            if item_path is not None:
                if not 1 <= len(item_path) <= 255:
                    self.error(f"{ipath}.path", "must be 1 to 255 characters")
                    item_path = None
                elif item_path != item_path.strip():
                    self.error(f"{ipath}.path", "must not start or end with whitespace")
                    item_path = None
                elif item_path in seen:
                    self.error(
                        f"{ipath}.path",
                        f'duplicate path "{item_path}" (first at {seen[item_path]})',
                    )
                    item_path = None
                else:
                    seen[item_path] = f"{path}[{i}]"
            title = self.string(it.get("title"), f"{ipath}.title")
            body = self.string(it.get("body"), f"{ipath}.body")
            metadata = it.get("metadata")
            if metadata is None:
                metadata = {}
            elif not isinstance(metadata, dict):
                self.error(f"{ipath}.metadata", "must be an object")
                metadata = {}
            if item_path is not None:
                out.append(Item(item_path, title or "", body or "", metadata))
        return out

    def profiles(self, value) -> list[Profile]:
        out, seen, triples = [], {}, {}
        for i, raw in enumerate(self.list_of(value, "profiles")):
            path = f"profiles[{i}]"
            p = self.obj(raw, path, PROFILE_FIELDS)
            if p is None:
                if raw is None:
                    self.error(path, "must be an object")
                continue
            key = self.key(p.get("key"), f"{path}.key")
            if key is not None:
                if key in seen:
                    self.error(f"{path}.key", f'duplicate profile key "{key}" ({seen[key]})')
                else:
                    seen[key] = f"first at {path}"
            name = self.string(p.get("name"), f"{path}.name")
            description = self.string(p.get("description"), f"{path}.description")
            consumer = self.key(p.get("consumer", _MISSING), f"{path}.consumer")
            if consumer is not None and consumer not in self.consumer_keys:
                self.error(f"{path}.consumer", f'consumer "{consumer}" does not exist')
                consumer = None
            objective = self.key(p.get("objective", _MISSING), f"{path}.objective")
            environment = self.key(p.get("environment"), f"{path}.environment", required=False)
            budget = self.integer(
                p.get("budget", _MISSING), f"{path}.budget", minimum=1, required=True
            )
            if consumer is not None and objective is not None:
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
            rules = self.rules(p.get("rules"), f"{path}.rules")
            if None not in (key, consumer, objective, budget):
                out.append(
                    Profile(
                        key=key,
                        name=name or "",
                        consumer=consumer,
                        objective=objective,
                        environment=environment,
                        budget=budget,
                        rules=rules,
                        description=description or "",
                    )
                )
        return out

    def rules(self, value, path: str) -> dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.error(path, "must be an object")
            return {}
        out = {}
        for raw_key, raw in value.items():
            rpath = f"{path}.{raw_key}"
            layer_key = self.string(raw_key, rpath, required=True)
            if layer_key is None:
                continue
            if layer_key not in self.layer_keys:
                self.error(rpath, f'layer "{layer_key}" does not exist')
                continue
            rule = self.rule(raw, rpath)
            if rule is not None:
                out[layer_key] = rule
        return out

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
        if value is None:
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
        if field_name is None:
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


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _keys_of(value) -> set:
    keys = set()
    if isinstance(value, list):
        for element in value:
            if isinstance(element, dict):
                key = element.get("key")
                if isinstance(key, (str, int, float)) and not isinstance(key, bool):
                    keys.add(canonical(key))
    return keys

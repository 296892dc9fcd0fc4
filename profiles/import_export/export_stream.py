"""The workspace document, streamed layer by layer (API export, studio download, the command).

A large workspace is never held as one document or one string: the small sections
(consumers, layers, profiles, rules) are read first as value rows, then every item through
one server-side cursor in document order, and each layer is serialized as soon as its last
item is read. The chunks joined are byte for byte the serialization of the whole document
(``dump_yaml(document)``, ``json.dumps(document, ...)``), which the tests check.

The reads run in one transaction (REPEATABLE READ on PostgreSQL), so an export is one
consistent snapshot even while others write.
"""

import json
from collections.abc import Iterator

from django.db import connection, transaction

from profiles.workspace.mappers import (
    map_consumer_to_resolver,
    map_layer_to_resolver,
    map_profile_to_resolver,
)
from profiles.workspace.selectors import item_values_iterate, workspace_sections_get
from resolver.documents import dump_yaml

EXPORT_FORMATS = ("yaml", "json", "json-compact")
CONTENT_TYPES = {
    "yaml": "application/yaml; charset=utf-8",
    "json": "application/json",
    "json-compact": "application/json",
}


class UnknownLayer(LookupError):
    """The export was asked for one layer that does not exist."""


def workspace_sections(*, layer: str | None = None) -> Iterator[tuple[str, object]]:
    """Yield ("head", {version, consumers}), then ("layer", layer document) per layer, then
    ("profiles", [...]), all from one snapshot. With ``layer``, only that layer is exported
    (consumers and profiles are left out: such a file imports with ``?layer=``)."""
    with transaction.atomic():
        if connection.vendor == "postgresql" and not connection.savepoint_ids:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        sections = workspace_sections_get()
        layers = sections.layers
        if layer is not None:
            layers = [row for row in layers if row.key == layer]
            if not layers:
                raise UnknownLayer(layer)
        head: dict = {"version": 1}
        if layer is None:
            head["consumers"] = [map_consumer_to_resolver(row) for row in sections.consumers]
        yield "head", head
        # Items come in the layers' order (position, id), so one pass pairs them up.
        stream = item_values_iterate(
            layer_ids=[row.id for row in layers] if layer is not None else None
        )
        pending = next(stream, None)
        for row in layers:
            items = []
            while pending is not None and pending.layer_id == row.id:
                items.append(pending)
                pending = next(stream, None)
            yield "layer", map_layer_to_resolver(row, items)
        if layer is None:
            consumer_keys = {row.id: row.key for row in sections.consumers}
            layer_keys = {row.id: row.key for row in sections.layers}
            profiles = [
                map_profile_to_resolver(
                    row,
                    sections.rules.get(row.id, []),
                    consumer_key=consumer_keys.get(row.consumer_id, ""),
                    layer_keys=layer_keys,
                )
                for row in sections.profiles
            ]
            yield "profiles", profiles


def workspace_document_read(*, layer: str | None = None) -> dict:
    """Return the stored workspace (or one layer) as a whole document, read like an export."""
    document: dict = {}
    for kind, value in workspace_sections(layer=layer):
        if kind == "head":
            document.update(value)
            document["layers"] = []
        elif kind == "layer":
            document["layers"].append(value)
        else:
            document["profiles"] = value
    return document


def workspace_export_chunks(*, format: str, layer: str | None = None) -> Iterator[str]:
    """Yield the export in ``format`` a layer at a time (see the module docstring).

    ``yaml`` is ``dump_yaml(document)``; ``json`` is ``json.dumps(document, indent=2,
    ensure_ascii=False) + "\n"`` (the export command's file); ``json-compact`` is the API's
    JSON (compact separators, as DRF's JSONRenderer writes it).
    """
    if format not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {format!r} (use yaml or json)")
    sections = workspace_sections(layer=layer)
    if format == "yaml":
        return _yaml_chunks(sections)
    return _json_chunks(sections, pretty=format == "json")


def _yaml_chunks(sections) -> Iterator[str]:
    layers_started = False
    for kind, value in sections:
        if kind == "head":
            yield dump_yaml(value)
        elif kind == "layer":
            # A block sequence under a top-level key is not indented, so one layer dumped
            # under "layers:" is exactly its part of the whole document.
            text = dump_yaml({"layers": [value]})
            yield text[len("layers:\n") :] if layers_started else text
            layers_started = True
        else:
            if not layers_started:
                yield dump_yaml({"layers": []})
                layers_started = True
            yield dump_yaml({kind: value})
    if not layers_started:
        yield dump_yaml({"layers": []})


def _json_value(value, *, pretty: bool, depth: int) -> str:
    if pretty:
        text = json.dumps(value, indent=2, ensure_ascii=False)
        # JSON strings escape their newlines, so indenting every line indents the value.
        return text.replace("\n", "\n" + "  " * depth)
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    # As DRF's JSONRenderer: these two are valid JSON but not valid JavaScript.
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _json_chunks(sections, *, pretty: bool) -> Iterator[str]:
    colon = ": " if pretty else ":"

    def member(name: str, first: bool) -> str:
        return ("{" if first else ",") + ("\n  " if pretty else "") + json.dumps(name) + colon

    def close_layers(count: int) -> str:
        return "\n  ]" if pretty and count else "]"

    layer_count, layers_open = 0, False
    for kind, value in sections:
        if kind == "head":
            yield "".join(
                member(name, position == 0) + _json_value(item, pretty=pretty, depth=1)
                for position, (name, item) in enumerate(value.items())
            )
            yield member("layers", False) + "["
            layers_open = True
        elif kind == "layer":
            lead = ("," if layer_count else "") + ("\n    " if pretty else "")
            yield lead + _json_value(value, pretty=pretty, depth=2)
            layer_count += 1
        else:
            if layers_open:
                yield close_layers(layer_count)
                layers_open = False
            yield member(kind, False) + _json_value(value, pretty=pretty, depth=1)
    if layers_open:
        yield close_layers(layer_count)
    yield "\n}\n" if pretty else "}"

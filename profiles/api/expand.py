"""Expand a reference: the one way a reader gets an item's full text outside the output.

Privacy rule: a ref is available only when the resolution of the same request, on the same
snapshot of the workspace, lists it for a selected layer (inline, a reference of any reason,
or trimmed by the budget). Those are the layer's candidates after its itemFilter, so another
customer's item is never among them. Everything else gets the same answer as a ref that does
not exist. (A service; it belongs in profiles.services.)
"""

from profiles import cache
from profiles.api.exceptions import ref_not_available
from profiles.mappers import json_safe


def available_refs(resolution: dict) -> set[tuple[str, str]]:
    """Return (layer key, item path) of every item the resolution offers."""
    refs = set()
    for layer in resolution["layers"]:
        if layer["decision"]["kind"] == "omitted":
            continue
        materialized = layer["materialized"]
        for entry in (*materialized["items"], *materialized["references"]):
            refs.add((layer["layer"], entry["item"]))
    for reference in resolution["references"]:
        refs.add((reference["layer"], reference["item"]))
    return refs


def request_expand(*, request: dict, ref: str) -> dict:
    """Resolve ``request`` and return the item ``ref`` names if the resolution offers it.

    Raise ``RequestError`` for a bad request and ApiError ``REF_NOT_AVAILABLE`` otherwise.
    """
    snapshot = cache.workspace_get()
    resolution = snapshot.compiled.resolve(request)
    layer_key, separator, path = ref.partition("/")
    if not separator or (layer_key, path) not in available_refs(resolution):
        raise ref_not_available()
    layer = next(entry for entry in snapshot.document["layers"] if entry["key"] == layer_key)
    item = next(entry for entry in layer.get("items") or [] if entry["path"] == path)
    return {
        "ref": ref,
        "layer": layer_key,
        "item": path,
        "title": item.get("title") or "",
        "body": item.get("body") or "",
        "metadata": json_safe(item.get("metadata") or {}),
    }

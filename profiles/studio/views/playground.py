"""The playground: one sample input resolved by every profile (or the environments of one
consumer + objective), one row each: status, estimated tokens, what it admits, its first
blocker, and a link to the editor with that input loaded.

At most ``PLAYGROUND_PAGE`` profiles are resolved per page; the page counts as many
resolutions as it resolves in the "resolve" scope (the API's rate). Each row resolves
through ``profile_resolve``, as every door does (the itemFilter applies as anywhere).
"""

from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from profiles.resolution.sweep import PLAYGROUND_PAGE, playground_resolve
from profiles.studio.draft import (
    sample_form,
    sample_query,
    sample_values_from_query,
    sample_values_from_scenario,
)
from profiles.studio.throttling import throttle_refusal
from profiles.workspace import cache
from profiles.workspace.permissions import READ_CONFIG, RESOLVE, capability_required
from resolver import reasons as R


def playground_row(entry: dict, resolution: dict, editor_query: str) -> dict:
    """Return one profile's row: its selection, status, tokens, what it admits, why not."""
    url = reverse("profile-editor", args=[entry["key"]])
    row = {
        "key": entry["key"],
        "name": entry.get("name") or "",
        "consumer": entry["consumer"],
        "objective": entry["objective"],
        "environment": entry.get("environment"),
        "editor_url": f"{url}?{editor_query}" if editor_query else url,
    }
    if "error" in resolution:
        row["error"] = resolution["error"]
        return row
    layers = resolution["layers"]
    inline = [layer for layer in layers if layer["decision"]["kind"] == R.INLINE]
    findings = resolution["blockers"] or resolution["warnings"]
    row.update(
        {
            "status": resolution["status"],
            "tokens": resolution["budget"]["estimatedTokens"],
            "limit": resolution["budget"]["limit"],
            "items": sum(len(layer["rendered"]["items"]) for layer in inline),
            "references": len(resolution["references"]),  # a summary lists the rendered ones
            "layers": sum(1 for layer in layers if layer["rendered"]["items"]),
            "first_finding": findings[0] if findings else None,
        }
    )
    return row


@capability_required(RESOLVE, READ_CONFIG)
@require_GET
def profile_playground(request):
    """Resolve the sample input of the query (else an empty one, now) for a page of profiles."""
    cached = cache.workspace_get()
    document = cached.document
    entries = list(document.get("profiles") or [])
    pairs = sorted({(e["consumer"], e["objective"]) for e in entries})
    chosen = request.GET.get("selection", "")
    pair = next((p for p in pairs if f"{p[0]}/{p[1]}" == chosen), None)
    if pair is not None:
        entries = [e for e in entries if (e["consumer"], e["objective"]) == pair]
    page = Paginator(entries, PLAYGROUND_PAGE).get_page(request.GET.get("page"))
    values = sample_values_from_query(request.GET) or sample_values_from_scenario(None)
    sample = sample_form(values, document)
    context = {
        "sample": sample,
        "pairs": [f"{c}/{o}" for c, o in pairs],
        "selection": chosen if pair is not None else "",
        "page": page,
        "total": len(entries),
        "rows": [],
    }
    if sample.is_valid():
        keys = [entry["key"] for entry in page.object_list]
        refusal = throttle_refusal(request, scope="resolve", cost=max(1, len(keys)))
        if refusal is not None:
            return refusal
        resolutions = playground_resolve(
            profile_keys=keys, request=sample.as_request(), compiled=cached.compiled
        )
        editor_query = sample_query(sample)
        context["rows"] = [
            playground_row(entry, resolution, editor_query)
            for entry, resolution in zip(page.object_list, resolutions, strict=True)
        ]
        parts = [editor_query] if editor_query else []
        if context["selection"]:
            parts.append(urlencode({"selection": context["selection"]}))
        context["query"] = "&".join(parts)
    return render(request, "profiles/playground.html", context)

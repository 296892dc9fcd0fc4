"""The playground: one sample input resolved by every profile (or the environments of one
consumer + objective), one row each: status, estimated tokens, what it admits, its first
blocker, and a link to the editor with that input loaded.

Opened without an input (a link that carries no sample field), each profile resolves its own
default scenario instead, as the profile list shows it; a profile without a scenario says to
type an input first.

At most ``PLAYGROUND_PAGE`` profiles are resolved per page; the page counts as many
resolutions as it resolves in the "resolve" scope (the API's rate). Each row resolves
through ``profile_resolve``, as every door does (the itemFilter applies as anywhere).
"""

from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from profiles.resolution.sweep import (
    PLAYGROUND_PAGE,
    playground_resolve,
    playground_resolve_each,
)
from profiles.studio.draft import (
    sample_form,
    sample_query,
    sample_values_from_query,
    sample_values_from_scenario,
)
from profiles.studio.presenters import first_finding
from profiles.studio.scenario_links import scenario_parameter
from profiles.studio.throttling import throttle_refusal
from profiles.workspace import cache
from profiles.workspace.permissions import READ_CONFIG, RESOLVE, capability_required
from profiles.workspace.selectors import scenario_list_of_profiles
from resolver import reasons as R


def _entry_row(entry: dict, editor_query: str) -> dict:
    url = reverse("profile-editor", args=[entry["key"]])
    return {
        "key": entry["key"],
        "name": entry.get("name") or "",
        "consumer": entry["consumer"],
        "objective": entry["objective"],
        "environment": entry.get("environment"),
        "editor_url": f"{url}?{editor_query}" if editor_query else url,
    }


def playground_row(entry: dict, resolution: dict, editor_query: str) -> dict:
    """Return one profile's row: its selection, status (and why, in the profile list's
    words), tokens, what it admits."""
    row = _entry_row(entry, editor_query)
    if "error" in resolution:
        row["error"] = resolution["error"]
        return row
    layers = resolution["layers"]
    inline = [layer for layer in layers if layer["decision"]["kind"] == R.INLINE]
    row.update(
        {
            "status": resolution["status"],
            "tokens": resolution["budget"]["estimatedTokens"],
            "limit": resolution["budget"]["limit"],
            "items": sum(len(layer["rendered"]["items"]) for layer in inline),
            "references": len(resolution["references"]),  # a summary lists the rendered ones
            "layers": sum(1 for layer in layers if layer["rendered"]["items"]),
            "why": first_finding(resolution),
        }
    )
    return row


@capability_required(RESOLVE, READ_CONFIG)
@require_GET
def profile_playground(request):
    """Resolve the sample input of the query for a page of profiles (no input in the query:
    each profile's default scenario)."""
    cached = cache.workspace_get()
    document = cached.document
    entries = list(document.get("profiles") or [])
    pairs = sorted({(e["consumer"], e["objective"]) for e in entries})
    chosen = request.GET.get("selection", "")
    pair = next((p for p in pairs if f"{p[0]}/{p[1]}" == chosen), None)
    if pair is not None:
        entries = [e for e in entries if (e["consumer"], e["objective"]) == pair]
    page = Paginator(entries, PLAYGROUND_PAGE).get_page(request.GET.get("page"))
    typed = sample_values_from_query(request.GET)
    sample = sample_form(typed or sample_values_from_scenario(None), document)
    context = {
        "sample": sample,
        "typed": typed is not None,
        "pairs": [f"{c}/{o}" for c, o in pairs],
        "selection": chosen if pair is not None else "",
        "page": page,
        "total": len(entries),
        "rows": [],
    }
    if typed is None:
        return _default_scenarios_page(request, context, page.object_list, cached)
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


def _default_scenarios_page(request, context: dict, entries: list[dict], cached):
    """Return the playground opened without an input: each profile of the page resolves its
    default scenario (else its first one); a profile without one asks for an input."""
    defaults = {}
    for scenario in scenario_list_of_profiles(profile_keys=[e["key"] for e in entries]):
        defaults.setdefault(scenario.profile.key, scenario)
    requests = [
        (e["key"], defaults[e["key"]].as_request()) for e in entries if e["key"] in defaults
    ]
    if requests:
        refusal = throttle_refusal(request, scope="resolve", cost=len(requests))
        if refusal is not None:
            return refusal
    resolutions = dict(
        zip(
            [key for key, _ in requests],
            playground_resolve_each(requests=requests, compiled=cached.compiled),
            strict=True,
        )
    )
    rows = []
    for entry in entries:
        scenario = defaults.get(entry["key"])
        if scenario is None:
            rows.append({**_entry_row(entry, ""), "no_scenario": True})
            continue
        query = urlencode({"scenario": scenario_parameter(scenario)})
        row = playground_row(entry, resolutions[entry["key"]], query)
        row["scenario"] = scenario
        rows.append(row)
    context["rows"] = rows
    context["has_scenario"] = bool(defaults)
    context["query"] = (
        urlencode({"selection": context["selection"]}) if context["selection"] else ""
    )
    return render(request, "profiles/playground.html", context)

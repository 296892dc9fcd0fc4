"""Two profiles side by side on the same sample input: the rules that differ, and how their
resolutions differ (status, tokens, decisions per layer, what each puts in the context).

When the two render different formats (their consumers' ``render.format``, or the request's
override), a line-by-line text diff is all formatting: the page says so and leads with the
diff of the admitted items per layer, the text diff one click away (issue 38 item 15). The
page always names the input both resolved (a scenario, or typed input) and its values.
"""

from django.shortcuts import render
from django.views.decorators.http import require_GET

from profiles.authoring.rules import RULE_FORM_FIELDS
from profiles.resolution.services import profile_resolve
from profiles.safechange.text_diff import output_text, text_diff
from profiles.studio import presenters
from profiles.studio.draft import (
    SUMMARY,
    profile_document,
    sample_form,
    sample_values_from_query,
    sample_values_from_scenario,
)
from profiles.studio.forms.editor import rule_form_values
from profiles.studio.scenario_links import scenario_from_parameter
from profiles.studio.throttling import throttled
from profiles.workspace import cache
from profiles.workspace.fields import PROFILE_FIELDS
from profiles.workspace.permissions import READ_CONFIG, RESOLVE, capability_required
from profiles.workspace.selectors import profile_list_with_consumer, scenario_list_of_profiles
from resolver import ResolverError

# The fields shown when they differ: what selects a profile, and its budget.
COMPARED_PROFILE_FIELDS = tuple(
    name for name in PROFILE_FIELDS if name not in ("key", "name", "description")
)


def _flat_rule(rule: dict | None) -> dict[str, str]:
    """Return a rule's fields as the editor names them, as text ("" = not given)."""
    values = rule_form_values(rule, "profile" if rule is not None else "default")
    return {name: values[name] for name in RULE_FORM_FIELDS}


def rule_differences(document: dict, first: dict, second: dict) -> list[dict]:
    """Return, per layer, the rule fields whose values differ between two profile entries."""
    rows = []
    first_rules, second_rules = first.get("rules") or {}, second.get("rules") or {}
    for layer in document["layers"]:
        key = layer["key"]
        a, b = first_rules.get(key), second_rules.get(key)
        flat_a, flat_b = _flat_rule(a), _flat_rule(b)
        fields = [
            {"name": name, "a": flat_a[name], "b": flat_b[name]}
            for name in RULE_FORM_FIELDS
            if flat_a[name] != flat_b[name]
        ]
        if fields or (a is None) != (b is None):
            rows.append(
                {
                    "layer": key,
                    "a_source": "default rule" if a is None else "rule",
                    "b_source": "default rule" if b is None else "rule",
                    "fields": fields,
                }
            )
    return rows


def layer_decisions(first: dict, second: dict) -> list[dict]:
    """Return each layer's decision and admitted units in both resolutions, in A's order."""
    by_layer = {record["layer"]: record for record in second["layers"]}
    rows = []
    for record in first["layers"]:
        other = by_layer.get(record["layer"])
        if other is None:
            continue
        a, b = record["decision"], other["decision"]
        rows.append(
            {
                "layer": record["layer"],
                "a": a,
                "b": b,
                "a_admitted": len(record["rendered"]["items"]),
                "b_admitted": len(other["rendered"]["items"]),
                "a_tokens": record["rendered"]["estimatedTokens"],
                "b_tokens": other["rendered"]["estimatedTokens"],
                "same": (a["kind"], a["reason"]) == (b["kind"], b["reason"])
                and record["rendered"]["items"] == other["rendered"]["items"],
            }
        )
    return rows


def rendered_format(document: dict, profile: dict, resolution: dict, request: dict) -> str:
    """Return the format a resolution renders: its output's, or (blocked: no output) the
    request's override, else its consumer's ``render.format`` (SPEC §2, §3)."""
    output = resolution.get("output")
    if output is not None:
        return output["format"]
    if request.get("format"):
        return request["format"]
    consumer = next(
        (entry for entry in document["consumers"] if entry["key"] == profile["consumer"]), {}
    )
    return (consumer.get("render") or {}).get("format") or "markdown"


def _admitted_units(resolution: dict) -> dict[str, dict[str, str]]:
    """Return, per layer key, each unit the resolution put in the context with how: inline,
    on request, or a reference (with its reason). Only what it admitted: a layer's
    ``itemFilter`` left everything else out already."""
    units: dict[str, dict[str, str]] = {}
    for record in resolution["layers"]:
        how = "on request" if record["decision"]["kind"] == "on-demand" else "inline"
        for path in record["rendered"]["items"]:
            units.setdefault(record["layer"], {})[path] = how
    for ref in resolution["references"]:
        if ref["rendered"]:
            units.setdefault(ref["layer"], {}).setdefault(
                ref["item"], f"reference ({ref['reason']})"
            )
    return units


def admitted_diff(first: dict, second: dict) -> list[dict]:
    """Return, per layer (A's render order, then B's own), the admitted units only in A,
    only in B and in both (each ``{"path", "a", "b"}``: how each side admits it), for the
    layers where either side admits something."""
    a_units, b_units = _admitted_units(first), _admitted_units(second)
    names = {record["layer"]: record["name"] for record in (*second["layers"], *first["layers"])}
    order = [record["layer"] for record in first["layers"]]
    order += [record["layer"] for record in second["layers"] if record["layer"] not in order]
    rows = []
    for layer in order:
        a, b = a_units.get(layer, {}), b_units.get(layer, {})
        if not a and not b:
            continue
        rows.append(
            {
                "layer": layer,
                "name": names.get(layer, layer),
                "only_a": [{"path": path, "a": a[path]} for path in a if path not in b],
                "only_b": [{"path": path, "b": b[path]} for path in b if path not in a],
                "both": [{"path": path, "a": a[path], "b": b[path]} for path in a if path in b],
                "same": a == b,
            }
        )
    return rows


def input_used(chosen, request: dict) -> dict:
    """Return what the page says of the input both profiles resolved: the scenario's name
    (or "typed input") and the values sent."""
    values = [(name, value) for name, value in (request.get("input") or {}).items()]
    for name in ("now", "format"):
        if request.get(name):
            values.append((name, request[name]))
    for layer, state in (request.get("availability") or {}).items():
        values.append((f"availability of {layer}", state))
    return {
        "source": f"scenario “{chosen.name}”" if chosen is not None else "typed input",
        "values": values,
    }


@capability_required(RESOLVE, READ_CONFIG)
@require_GET
@throttled("resolve", cost=2)  # two profiles resolved
def profile_compare(request):
    """Compare profile ``a`` with profile ``b`` on one sample input (a scenario or typed)."""
    cached = cache.workspace_get()
    document = cached.document
    profiles = profile_list_with_consumer()
    keys = [profile.key for profile in profiles]
    a = request.GET.get("a") if request.GET.get("a") in keys else (keys[0] if keys else None)
    b = request.GET.get("b") if request.GET.get("b") in keys else None
    if b is None and a is not None:
        entry = profile_document(document, a)
        # A sibling by default: same consumer and objective, another environment.
        siblings = [
            other["key"]
            for other in document["profiles"]
            if other["key"] != a
            and (other["consumer"], other["objective"]) == (entry["consumer"], entry["objective"])
        ]
        b = siblings[0] if siblings else next((k for k in keys if k != a), None)
    scenarios = scenario_list_of_profiles(profile_keys=[k for k in (a, b) if k])
    chosen = scenario_from_parameter(scenarios, request.GET.get("scenario"))
    typed = sample_values_from_query(request.GET)
    if chosen is not None and (typed is None or request.GET.get("load")):
        values = sample_values_from_scenario(chosen)  # "Load" (or nothing typed)
    elif typed is not None:
        values, chosen = typed, None  # what is in the fields now
    else:
        chosen = next((s for s in scenarios if s.profile.key == a), None)
        values = sample_values_from_scenario(chosen)
    sample = sample_form(values, document)
    context = {
        "profiles": profiles,
        "a": a,
        "b": b,
        "scenarios": scenarios,
        "chosen": chosen,
        "sample": sample,
    }
    if a and b and sample.is_valid():
        first, second = profile_document(document, a), profile_document(document, b)
        context["profile_rows"] = [
            {"name": name, "a": first.get(name), "b": second.get(name)}
            for name in COMPARED_PROFILE_FIELDS
            if first.get(name) != second.get(name)
        ]
        context["rule_rows"] = rule_differences(document, first, second)
        request_document = {**sample.as_request(), "detail": SUMMARY}
        context["input_used"] = input_used(chosen, request_document)
        try:
            resolutions = [
                profile_resolve(profile=key, request=request_document, compiled=cached.compiled)
                for key in (a, b)
            ]
        except ResolverError as exc:
            context["error"] = exc.message
        else:
            context["resolutions"] = resolutions
            context["decisions"] = layer_decisions(*resolutions)
            context["changes"] = presenters.what_changed(*resolutions)
            context["admitted"] = admitted_diff(*resolutions)
            formats = [
                rendered_format(document, entry, resolution, request_document)
                for entry, resolution in zip((first, second), resolutions, strict=True)
            ]
            context["formats"] = formats
            context["formats_differ"] = formats[0] != formats[1]
            # The rendered text of both for the same sample, line by line (issue 21).
            context["text"] = text_diff(
                *(output_text(resolution) for resolution in resolutions),
                scenario=chosen.name if chosen is not None else "typed input",
                before_label=a,
                after_label=b,
            )
    return render(request, "profiles/compare.html", context)

"""The profile editor: the page, its live preview and one view per action.

The page template owns its fragments (``profiles/editor.html#preview``, ``#sample-input``,
``#unsaved-badge``, ``#layer-rows``…). A change in the form posts to ``profile_preview`` and
swaps only the preview; the form being edited is never replaced. Each action has its own
view (load or save a scenario; Save and Discard are ``editor_save``), and each view checks
permissions itself: a client can post to any of them.
"""

from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from profiles.models import Profile, Scenario
from profiles.safechange.selectors import change_request_open_count
from profiles.studio import handoff, item_rows, presenters
from profiles.studio.draft import (
    SAMPLE_PARAMETERS,
    Draft,
    draft_from_post,
    draft_from_saved,
    item_titles,
    preview_context,
    rank_draft,
    resolve_draft,
    sample_query,
    sample_values_from_query,
    sample_values_from_scenario,
    saved_resolution,
    scenario_matches,
    scenario_save,
)
from profiles.studio.lookups import profile_or_404
from profiles.studio.scenario_links import scenario_from_parameter, scenario_parameter
from profiles.studio.throttling import throttled
from profiles.versioning.environments import profile_write_refusal
from profiles.workspace import cache
from profiles.workspace.concurrency import profile_etag
from profiles.workspace.origin import STUDIO as STUDIO_ORIGIN
from profiles.workspace.parameters import whole_number
from profiles.workspace.permissions import READ_CONFIG, RESOLVE, WRITE_RULES, capability_required
from profiles.workspace.selectors import (
    profile_history_list_with_changes,
    scenario_get_default,
    scenario_list,
    scenario_of_profile_get,
)
from profiles.workspace.validation import WorkspaceValidationError
from profiles.workspace.writing import Conflict


def _loaded_scenario(request, profile: Profile, scenarios=None) -> Scenario | None:
    """Return the scenario the posted sample input was loaded from (None: none).

    Looked up in ``scenarios`` when the caller has them, else with one query.
    """
    chosen = whole_number(request.POST.get("loaded_scenario", ""))
    if chosen is None:
        return None
    if scenarios is not None:
        return next((s for s in scenarios if s.pk == chosen), None)
    scenario = scenario_of_profile_get(profile=profile, scenario_id=chosen)
    if scenario is not None:
        scenario.profile = profile
    return scenario


def _scenario_context(profile, draft, scenarios, loaded) -> dict:
    """Return what the scenario picker shows: the scenarios, which is loaded, whether edited."""
    return {
        "scenarios": scenarios,
        "loaded_scenario": loaded,
        "scenario_edited": loaded is not None and not scenario_matches(loaded, draft.sample),
        "share_url": _share_url(profile, draft, loaded),
    }


def _share_url(profile: Profile, draft: Draft, loaded: Scenario | None) -> str:
    """Return the editor's URL carrying this sample input: a link that opens what you see."""
    url = reverse("profile-editor", args=[profile.key])
    if loaded is not None and scenario_matches(loaded, draft.sample):
        return f"{url}?scenario={scenario_parameter(loaded)}"
    query = sample_query(draft.sample)
    return f"{url}?{query}" if query else url


def _scenarios(profile: Profile) -> list[Scenario]:
    return scenario_list(profile=profile)


def _safe_change(request, profile: Profile) -> dict:
    """Return what the editor's header shows of safe change: whether a direct save is refused
    here (then it offers "Propose change"), the profile's version, its open change requests."""
    refusal = profile_write_refusal(user=request.user, environments=[profile.environment])
    return {
        "protected": refusal is not None,
        "version": profile.version,
        "open_requests": change_request_open_count(profile_key=profile.key),
    }


def editor_page(
    request, profile, draft, cached, *, loaded=None, status=200, scenarios=None, preview_of=None
):
    """Return the whole editor page on ``draft`` (the safe-change views open it too: the
    preview of a change request, a proposal refused as stale). ``preview_of``: the change
    request previewed, read-only (no Save, Propose or Discard)."""
    scenarios = _scenarios(profile) if scenarios is None else scenarios
    context = preview_context(profile, draft, cached)
    context.update(_scenario_context(profile, draft, scenarios, loaded))
    context["history"] = [
        presenters.history_entry(record)
        for record in profile_history_list_with_changes(profile=profile)
    ]
    context["safe"] = _safe_change(request, profile)
    context["preview_of"] = preview_of
    context["row_filters"] = item_rows.ROW_FILTERS
    return render(request, "profiles/editor.html", context, status=status)


@capability_required(RESOLVE, READ_CONFIG)
@require_GET
@throttled("preview")
def profile_editor(request, key):
    """Show the editor on the saved profile.

    The sample input comes from the link (``?scenario=`` with the scenario's id, or its name:
    ``scenario_links``; or the sample's own fields: a shared preview), else from the profile's
    default scenario. Nothing is remembered across visits: a link opens what it names, a bare
    link the default scenario (Save and Discard come back with the link of the sample input).
    """
    profile = profile_or_404(key)
    cached = cache.workspace_get()
    scenarios = _scenarios(profile)
    loaded = None
    shared = sample_values_from_query(request.GET)
    if request.GET.get("scenario"):
        loaded = scenario_from_parameter(scenarios, request.GET["scenario"])
        if loaded is None:
            raise Http404("no such scenario for this profile")
        values = sample_values_from_scenario(loaded)
    elif shared is not None:
        values = shared
    else:
        loaded = scenario_get_default(profile=profile)
        values = sample_values_from_scenario(loaded)
    draft = draft_from_saved(cached.document, profile.key, values, etag=profile_etag(profile))
    return editor_page(request, profile, draft, cached, loaded=loaded, scenarios=scenarios)


def _preview_response(request, profile, draft, cached, *, loaded, sample: str = "") -> HttpResponse:
    """Return the preview with its out-of-band companions: the unsaved badge and the
    scenario state; the page's URL becomes the shareable link of this sample input.

    With ``sample`` (the re-rendered sample input, the request's target), the preview goes
    out of band too.
    """
    context = preview_context(profile, draft, cached)
    context.update(_scenario_context(profile, draft, None, loaded))
    context["row_filters"] = item_rows.ROW_FILTERS
    if not request.htmx:
        return render(request, "profiles/editor.html#preview", context)
    preview = render_to_string("profiles/editor.html#preview", context, request=request)
    badge = render_to_string(
        "profiles/editor.html#unsaved-badge", {**context, "oob": True}, request=request
    )
    if sample:
        parts = [sample, f'<div id="preview" hx-swap-oob="innerHTML">{preview}</div>', badge]
    else:
        state = render_to_string(
            "profiles/editor.html#scenario-state", {**context, "oob": True}, request=request
        )
        parts = [preview, badge, state]
    response = HttpResponse("".join(parts))
    response["HX-Replace-Url"] = context["share_url"]
    return response


@capability_required(RESOLVE, READ_CONFIG)
@require_POST
@throttled("preview")
def profile_preview(request, key):
    """Resolve the posted draft and return the preview (never writes)."""
    profile = profile_or_404(key)
    cached = cache.workspace_get()
    draft = draft_from_post(request.POST, cached.document, profile.key)
    loaded = _loaded_scenario(request, profile)
    return _preview_response(request, profile, draft, cached, loaded=loaded)


def _sample_response(request, profile, draft, cached, *, loaded, scenarios, status=200):
    """Return the sample input (replaced in place) and the preview of the new sample.

    Without htmx, the whole page. The focused control keeps its id, so htmx puts the focus
    back on it after the swap: loading never sends the keyboard to the top of the page.
    """
    if not request.htmx:
        return editor_page(
            request, profile, draft, cached, loaded=loaded, status=status, scenarios=scenarios
        )
    context = {"draft": draft, "profile": profile}
    context.update(_scenario_context(profile, draft, scenarios, loaded))
    sample = render_to_string("profiles/editor.html#sample-input", context, request=request)
    response = _preview_response(request, profile, draft, cached, loaded=loaded, sample=sample)
    response.status_code = status
    return response


@capability_required(RESOLVE, READ_CONFIG)
@require_POST
@throttled("preview")
def profile_scenario_load(request, key):
    """Replace the sample input by a saved scenario's; the unsaved rule edits stay."""
    profile = profile_or_404(key)
    cached = cache.workspace_get()
    scenarios = _scenarios(profile)
    chosen = next((s for s in scenarios if str(s.pk) == request.POST.get("scenario")), None)
    data = request.POST.copy()
    if chosen is not None:
        for name in list(data):
            if name in SAMPLE_PARAMETERS or name.startswith(("input:", "avail:")):
                del data[name]
        data.update(sample_values_from_scenario(chosen))
    draft = draft_from_post(data, cached.document, profile.key)
    if chosen is None:
        draft.general_errors.append("Choose a scenario to load.")
        loaded = _loaded_scenario(request, profile, scenarios)
        return _sample_response(
            request, profile, draft, cached, loaded=loaded, scenarios=scenarios, status=400
        )
    draft.notice = f"Loaded scenario “{chosen.name}”."
    return _sample_response(request, profile, draft, cached, loaded=chosen, scenarios=scenarios)


@capability_required(WRITE_RULES)
@require_POST
def profile_scenario_save(request, key):
    """Save the sample input as a named scenario of the profile."""
    profile = profile_or_404(key)
    cached = cache.workspace_get()
    draft = draft_from_post(request.POST, cached.document, profile.key)
    scenarios = _scenarios(profile)
    loaded = _loaded_scenario(request, profile, scenarios)
    name = request.POST.get("scenario_name", "").strip()
    taken = False
    if not name:
        draft.scenario_error = "Give the scenario a name to save it."
    elif not draft.sample.is_valid():
        draft.scenario_error = "Fix the sample input first."
    else:
        try:
            loaded = scenario_save(
                profile=profile,
                name=name,
                sample=draft.sample,
                user=request.user,
                origin=STUDIO_ORIGIN,
            )
        except WorkspaceValidationError as exc:
            draft.scenario_error = "Scenario not saved — " + "; ".join(
                issue.message for issue in exc.issues
            )
        except Conflict as exc:
            draft.scenario_error = f"Scenario not saved — {exc.message}"
            taken = True
        else:
            draft.notice = f"Scenario “{name}” saved."
            scenarios = _scenarios(profile)
    status = 409 if taken else 400 if draft.scenario_error else 200
    return _sample_response(
        request, profile, draft, cached, loaded=loaded, scenarios=scenarios, status=status
    )


# --- what the preview loads on demand -----------------------------------------------------------


def _page_number(text: str | None) -> int:
    number = whole_number(text)
    return number if number is not None and number < 10**6 else 0


@capability_required(RESOLVE, READ_CONFIG)
@require_POST
@throttled("preview")
def profile_preview_rows(request, key):
    """Return a layer's item rows, a stage at a time: the first rows of every stage, or the
    next page of one stage ("show more"), optionally only what changed / is left out /
    was trimmed. Resolves the draft in full: this is where a layer's size is paid, on demand.
    """
    profile = profile_or_404(key)
    cached = cache.workspace_get()
    layer = request.POST.get("layer", "")
    if layer not in {entry["key"] for entry in cached.document["layers"]}:
        return HttpResponseBadRequest("unknown layer")
    draft = draft_from_post(request.POST, cached.document, profile.key)
    resolution = resolve_draft(draft, cached, detail="full")
    if resolution is None:
        return HttpResponse('<p class="muted">Fix the highlighted fields to see the items.</p>')
    row_filter = request.POST.get("rows", "all")
    row_filter = row_filter if row_filter in item_rows.ROW_FILTERS else "all"
    saved = None
    if row_filter == "changed":
        saved = saved_resolution(profile.key, draft.sample.as_request(), cached, detail="full")
    groups = item_rows.layer_rows(resolution, layer, saved=saved, row_filter=row_filter)
    group_name = request.POST.get("group")
    start = _page_number(request.POST.get("start"))
    if group_name:
        groups = [group for group in groups if group["name"] == group_name]
        size = item_rows.PAGE
    else:
        start, size = 0, item_rows.ROWS
    pages = {group["name"]: group["rows"][start : start + size] for group in groups}
    # Rank, score and matched terms of the shown rows only (the resolution's references
    # carry none): one more run of the stages, whatever the layer's size.
    ranking = rank_draft(
        draft, cached, layer, paths=[row["item"] for rows in pages.values() for row in rows]
    )
    for group in groups:
        shown = item_rows.ranked(pages[group["name"]], ranking)
        titles = item_titles(layer, [row["item"] for row in shown], cached)
        group["shown"] = [item_rows.item_row(row, titles) for row in shown]
        group["next_start"] = start + len(shown)
        group["rest"] = max(0, group["count"] - group["next_start"])
    context = {
        "profile": profile,
        "layer": layer,
        "groups": groups,
        "row_filter": row_filter,
        "row_filter_label": item_rows.ROW_FILTERS[row_filter],
        "page_size": item_rows.PAGE,
    }
    template = "profiles/editor.html#more-rows" if group_name else "profiles/editor.html#layer-rows"
    return render(request, template, context)


@capability_required(RESOLVE, READ_CONFIG)
@require_POST
@throttled("preview")
def profile_preview_cut(request, key):
    """Return the units the budget trimmed or the rules cut, a page at a time."""
    profile = profile_or_404(key)
    cached = cache.workspace_get()
    draft = draft_from_post(request.POST, cached.document, profile.key)
    resolution = resolve_draft(draft, cached, detail="full")
    units = item_rows.cut_units(resolution) if resolution is not None else []
    start = _page_number(request.POST.get("start"))
    size = item_rows.PAGE if start else item_rows.ROWS
    shown = units[start : start + size]
    context = {
        "profile": profile,
        "units": shown,
        "next_start": start + len(shown),
        "rest": max(0, len(units) - start - len(shown)),
        "page_size": item_rows.PAGE,
    }
    return render(request, "profiles/editor.html#cut-units", context)


@capability_required(RESOLVE, READ_CONFIG)
@require_POST
@throttled("preview")
def profile_preview_handoff(request, key):
    """Return this exact preview request as curl, Python and JavaScript, with its answer."""
    profile = profile_or_404(key)
    cached = cache.workspace_get()
    draft = draft_from_post(request.POST, cached.document, profile.key)
    if not draft.is_valid():
        return HttpResponse('<p class="muted">Fix the highlighted fields first.</p>')
    call = handoff.api_call(
        request,
        profile=profile.key,
        sample=draft.sample.as_request(),
        saved_rules=draft.rules.saved_rules,
        overrides=draft.rule_overrides(),
        budget=draft.budget_value(),
        saved_budget=draft.saved_budget,
        pin_now=request.POST.get(handoff.PIN_NOW_FIELD) == "on",
    )
    resolution = resolve_draft(draft, cached, detail=call.detail)
    if resolution is None:
        return HttpResponse('<p class="muted">Fix the highlighted fields first.</p>')
    context = {
        "call": call,
        "snippets": handoff.snippets(call),
        "answer": handoff.json(resolution),
        "sample_now": draft.sample.as_request().get("now", ""),
        "pin_now_field": handoff.PIN_NOW_FIELD,
        "profile": profile,
    }
    return render(request, "profiles/editor.html#handoff", context)

"""Studio pages of safe change: change requests (lists, a request with its rules diff and
per-scenario impact, review actions, the preview of a request's draft) and promotion. A
profile's history and the environments are ``versioning``'s; the editor's Save, with its
impact summary and "Propose change", is ``editor_save``.

Every view checks its capability itself (``profiles.workspace.permissions``); the services
enforce the rest (self-approval, approvals, stale bases, protection).
"""

from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from profiles.models import ChangeRequest, Profile
from profiles.safechange.change_requests import (
    change_request_apply,
    change_request_close,
    change_request_diff,
    change_request_rebase,
    change_request_reject,
    changes_applied,
    draft_impact,
)
from profiles.safechange.errors import ChangesInvalid
from profiles.safechange.impact import (
    IMPACT_SCOPE,
    impact_gained_lost,
    impact_max_scenarios,
    impact_summary,
)
from profiles.safechange.promotion import profile_promote
from profiles.safechange.reviews import change_request_approve_reviewed, change_request_open
from profiles.safechange.selectors import (
    ChangeRequestStanding,
    change_request_etag,
    change_request_list,
    change_request_list_filtered,
    change_request_profile_keys_list,
    scenario_ids_by_name_get,
)
from profiles.studio.draft import draft_from_saved, sample_values_from_scenario
from profiles.studio.entity_rows import change_set_context
from profiles.studio.lookups import change_request_or_404, profile_or_404
from profiles.studio.throttling import throttle_refusal, throttled
from profiles.studio.views.editor import editor_page
from profiles.studio.views.reviews import review_context
from profiles.studio.views.versioning import diff_rows
from profiles.versioning.environments import SafeChangeError
from profiles.versioning.versions import latest_versions_get
from profiles.workspace import cache
from profiles.workspace.concurrency import PreconditionFailed, profile_etag
from profiles.workspace.parameters import positive_integer, whole_number
from profiles.workspace.permissions import (
    READ_CONFIG,
    READ_MATERIAL,
    RESOLVE,
    WRITE_RULES,
    capability_required,
    require,
    user_can,
)
from profiles.workspace.selectors import scenario_of_profile_get
from profiles.workspace.writing import EntryInvalid

TABS = {
    "open": "Open",
    "applied": "Applied",
    "closed": "Closed",
    "all": "All",
    "mine": "Mine",
    "review": "To review",
    "requested": "Review requests for me",
}
# The statuses each status tab lists ("closed": by its author or rejected by a reviewer).
TAB_STATUSES = {
    "open": [ChangeRequest.Status.OPEN],
    "applied": [ChangeRequest.Status.APPLIED],
    "closed": [ChangeRequest.Status.CLOSED, ChangeRequest.Status.REJECTED],
    "all": [],
    "mine": [],
    "review": [],
    "requested": [ChangeRequest.Status.OPEN],
}
# Longest title search kept (a title is at most 200 characters).
TITLE_SEARCH_MAX = 200


# --- change requests -----------------------------------------------------------------------


@capability_required(READ_CONFIG)
@require_GET
def change_request_list_page(request):
    """Change requests by status (open, applied, closed, all), mine, and those waiting for my
    review; every list filtered the same way, by profile and by words of the title."""
    tab = request.GET.get("tab", "open")
    if tab not in TABS:
        tab = "open"
    profile_keys = change_request_profile_keys_list()
    profile_key = request.GET.get("profile", "")
    if profile_key not in profile_keys:
        profile_key = ""
    title = " ".join(request.GET.get("q", "").split())[:TITLE_SEARCH_MAX]
    people = {
        "mine": {"author": request.user},
        "review": {"reviewer": request.user},
        "requested": {"requested_of": request.user},
    }.get(tab, {})
    queryset = change_request_list_filtered(
        statuses=TAB_STATUSES[tab], profile_key=profile_key, title=title, **people
    )
    page = Paginator(queryset, 50).get_page(request.GET.get("page"))
    current = {
        key: version.number
        for key, version in latest_versions_get({cr.profile_key for cr in page}).items()
    }
    standing = ChangeRequestStanding(page)
    rows = [
        {
            "change_request": change_request,
            "environment": standing.environments[change_request.pk],
            "summary": impact_summary(change_request.impact),
            "approvals": len(standing.counted_for(change_request)),
            "required": standing.required[change_request.pk],
            "stale": change_request.status == ChangeRequest.Status.OPEN
            and current.get(change_request.profile_key) != change_request.base_version,
        }
        for change_request in page
    ]
    filters = {key: value for key, value in (("profile", profile_key), ("q", title)) if value}
    return render(
        request,
        "profiles/change_request_list.html",
        {
            "tab": tab,
            "tabs": TABS,
            "page": page,
            "rows": rows,
            "profile_keys": profile_keys,
            "profile_key": profile_key,
            "title_search": title,
            "filtered": bool(filters),
            "filters_query": urlencode(filters),
            "query": urlencode({"tab": tab, **filters}),
        },
    )


ACTIONS = {
    "approve": (change_request_approve_reviewed, "Approved."),
    "reject": (change_request_reject, "Rejected."),
    "close": (change_request_close, "Closed the request: nothing was applied."),
    "rebase": (change_request_rebase, "Rebased on the current version; the impact is fresh."),
    "apply": (change_request_apply, "Applied: the profile has a new version."),
}


def _impact_rows(entries: list[dict], scenario_ids: dict[str, int]) -> list[dict]:
    """Return the table rows of the resolved entries of an impact (skipped ones have none)."""
    rows = []
    for entry in entries:
        if entry.get("skipped"):
            continue
        gained, lost = impact_gained_lost(entry)
        rows.append(
            {
                "entry": entry,
                "gained": gained,
                "lost": lost,
                "scenario_id": scenario_ids.get(entry["scenario"]),
            }
        )
    return rows


def _impact_more(change_request: ChangeRequest, entries: list[dict], *, stale: bool):
    """Return what the row after an impact's resolved entries says, or None when none was
    skipped: how many remain, and the offset that resolves the next ones (None, with the
    reason, when they can no longer be resolved against the rules the request was made on)."""
    skipped = [index for index, entry in enumerate(entries) if entry.get("skipped")]
    if not skipped:
        return None
    remaining = len(skipped)
    if change_request.status != ChangeRequest.Status.OPEN:
        reason = "the request is no longer open"
    elif stale:
        reason = "the profile has a newer version; rebase the request to resolve them"
    else:
        return {
            "remaining": remaining,
            "offset": skipped[0],
            "next_count": min(remaining, impact_max_scenarios()),
        }
    return {"remaining": remaining, "offset": None, "reason": reason}


def _is_stale(change_request: ChangeRequest) -> bool:
    key = change_request.profile_key
    latest = latest_versions_get([key]).get(key)
    current = None if latest is None else latest.number
    return change_request.status == ChangeRequest.Status.OPEN and (
        current != change_request.base_version
    )


@capability_required(READ_CONFIG)
@require_GET
@throttled("impact")
def change_request_impact_more(request, pk):
    """Resolve the next scenarios of a change request's impact, beyond the bound its stored
    impact stopped at (``?offset=``: the first one; 0 when not given): table rows for htmx,
    else a page.

    Nothing is stored: the rows are computed from the request's changes on the version it
    was made on (an open request that is not stale), as its stored impact was.
    """
    change_request = change_request_or_404(pk, change_request_list().get)
    text = request.GET.get("offset")
    offset = 0 if text is None else whole_number(text)
    if offset is None:
        return HttpResponse("offset: must be a whole number", status=400)
    stale = _is_stale(change_request)
    rows, more = [], None
    if change_request.status == ChangeRequest.Status.OPEN and not stale:
        try:
            impact = draft_impact(
                profile_key=change_request.profile_key,
                changes=change_request.changes,
                offset=offset,
            )
        except (ChangesInvalid, Profile.DoesNotExist) as exc:
            return HttpResponse(f"The impact cannot be resolved: {exc}", status=409)
        scenario_ids = scenario_ids_by_name_get(profile_key=change_request.profile_key)
        rows = _impact_rows(impact[offset : offset + impact_max_scenarios()], scenario_ids)
        more = _impact_more(change_request, impact[offset + impact_max_scenarios() :], stale=False)
        if more is not None and more["offset"] is not None:
            more["offset"] += offset + impact_max_scenarios()
    else:
        more = _impact_more(change_request, change_request.impact, stale=stale)
    context = {
        "cr": change_request,
        "change_request": change_request,
        "impact": rows,
        "more": more,
        "impact_max_scenarios": impact_max_scenarios(),
    }
    if getattr(request, "htmx", False):
        return render(request, "profiles/_impact_rows.html", context)
    return render(request, "profiles/change_request_impact.html", context)


@capability_required(READ_CONFIG, unsafe=WRITE_RULES)
@require_http_methods(["GET", "POST"])
def change_request_page(request, pk):
    """One change request, as a reviewer reads it: what changes and its impact on every saved
    scenario, then the conversation, then the approvals and the actions."""
    change_request = change_request_or_404(pk, change_request_list().get)
    status = 200
    if request.method == "POST":
        action = request.POST.get("action", "")
        if action not in ACTIONS:
            messages.error(request, "Unknown action.")
            status = 400
        else:
            service, done = ACTIONS[action]
            arguments = {}
            if action == "rebase":  # recomputes the impact: counted like every impact
                refusal = throttle_refusal(request, scope=IMPACT_SCOPE)
                if refusal is not None:
                    return refusal
            if action == "approve":
                # The form carries the revision the page showed: one approves what one read.
                arguments["if_match"] = request.POST.get("etag") or None
            try:
                service(pk=pk, user=request.user, **arguments)
            except SafeChangeError as exc:
                messages.error(request, exc.message)
                status = exc.status_code
            except PreconditionFailed as exc:
                messages.error(
                    request,
                    f"{exc} The page now shows what it holds; nothing was approved.",
                )
                status = 412
            except EntryInvalid as exc:
                messages.error(request, f"Nothing was applied: {exc}")
                status = 400
            else:
                messages.success(request, done)
                return redirect("change-request", pk=pk)
            change_request = change_request_list().get(pk=pk)
    key = change_request.profile_key
    latest = latest_versions_get([key]).get(key)
    current = None if latest is None else latest.number
    scenario_ids = scenario_ids_by_name_get(profile_key=key)
    standing = ChangeRequestStanding([change_request])
    approvals = list(change_request.approvals.all())
    counted = standing.counted_for(change_request)
    required = standing.required[change_request.pk]
    is_author = change_request.author_id == request.user.pk
    is_open = change_request.status == ChangeRequest.Status.OPEN
    can_write = user_can(request.user, WRITE_RULES)
    approved_by_me = any(approval.user_id == request.user.pk for approval in counted)
    stale = is_open and current != change_request.base_version
    change_set = (
        change_set_context(change_request, material=user_can(request.user, READ_MATERIAL))
        if change_request.is_change_set
        else None
    )
    if change_set is not None:
        stale = change_set["stale"]
    review = review_context(request, change_request, approved=len(counted) >= required, stale=stale)
    return render(
        request,
        "profiles/change_request.html",
        {
            "change_set": change_set,
            **review,
            "change_request": change_request,
            "diff": diff_rows(change_request_diff(change_request)),
            "impact": _impact_rows(change_request.impact, scenario_ids),
            "more": _impact_more(change_request, change_request.impact, stale=stale),
            "summary": impact_summary(change_request.impact),
            "impact_max_scenarios": impact_max_scenarios(),
            "approvals": approvals,
            "counted": counted,
            "not_counted": [approval for approval in approvals if approval not in counted],
            "required": required,
            "environment": standing.environments[change_request.pk],
            "etag": change_request_etag(change_request),
            "current_version": current,
            "stale": stale,
            "is_open": is_open,
            "can_approve": is_open and can_write and not is_author and not approved_by_me,
            "can_reject": is_open and can_write and not is_author,
            "can_close": is_open and can_write and (is_author or request.user.is_superuser),
            "can_apply": is_open
            and can_write
            and len(counted) >= required
            and not stale
            and not review["changes_requested_by"],
            "can_rebase": is_open and can_write and stale,
            "is_author": is_author,
        },
        status=status,
    )


@capability_required(RESOLVE, READ_CONFIG)
@require_GET
@throttled("preview")
def change_request_preview(request, pk):
    """Open the editor on the request's profile with its changes as the unsaved draft and a
    saved scenario as the sample input: the live preview under the proposed rules."""
    change_request = change_request_or_404(pk)
    profile = profile_or_404(change_request.profile_key)
    cached = cache.workspace_get()
    document = cached.document
    profiles = [
        changes_applied(entry, change_request.changes) if entry["key"] == profile.key else entry
        for entry in document.get("profiles") or []
    ]
    scenario = None
    scenario_id = positive_integer(request.GET, "scenario", meaning="a scenario id")
    if scenario_id is not None:
        scenario = scenario_of_profile_get(profile=profile, scenario_id=scenario_id)
        if scenario is None:
            raise Http404("no such scenario for this profile")
    draft = draft_from_saved(
        {**document, "profiles": profiles},
        profile.key,
        sample_values_from_scenario(scenario),
        etag=profile_etag(profile),
    )
    messages.info(
        request,
        f"Previewing change request #{change_request.pk} “{change_request.title}”: its changes "
        "are the unsaved edits below.",
    )
    return editor_page(request, profile, draft, cached, loaded=scenario, preview_of=change_request)


# --- promotion ---------------------------------------------------------------------------


@capability_required(WRITE_RULES)
@require_POST
@throttled(IMPACT_SCOPE)  # opening the request computes its impact
def profile_promote_page(request, key):
    """Open the change request that promotes this profile's budget and rules."""
    require(request.user, WRITE_RULES)
    try:
        change_request = change_request_open(
            opener=profile_promote,
            reviewers=request.POST.getlist("reviewers"),
            profile_key=key,
            to=request.POST.get("to"),
            user=request.user,
            title=request.POST.get("title") or None,
            description=request.POST.get("description", ""),
        )
    except Profile.DoesNotExist:
        raise Http404("no such profile") from None
    except SafeChangeError as exc:
        messages.error(request, f"Nothing was promoted: {exc.message}")
        return redirect("environment-list")
    messages.success(request, f"Opened change request #{change_request.pk}.")
    return redirect("change-request", pk=change_request.pk)


# --- help ----------------------------------------------------------------------------------


@capability_required(READ_CONFIG)
@require_GET
def help_safe_change(request):
    return render(request, "profiles/help_safe_change.html")


urlpatterns = [
    path("profiles/<slug:key>/promote/", profile_promote_page, name="profile-promote"),
    path("changes/", change_request_list_page, name="change-request-list"),
    path("changes/<int:pk>/", change_request_page, name="change-request"),
    path("changes/<int:pk>/preview/", change_request_preview, name="change-request-preview"),
    path(
        "changes/<int:pk>/impact/",
        change_request_impact_more,
        name="change-request-impact-more",
    ),
    path("help/safe-change/", help_safe_change, name="help-safe-change"),
]

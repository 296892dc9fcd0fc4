"""Studio pages of safe change: a profile's history (diff, restore), change requests (lists, a
request with its rules diff and per-scenario impact, review actions), environments (protection,
comparison, promotion), and the editor's hooks (the impact summary before Save, "Propose
change" in a protected environment, the preview of a request's draft).

Every view checks its capability itself (``profiles.workspace.permissions``); the services
enforce the rest (self-approval, approvals, stale bases, protection).
"""

import json
from urllib.parse import urlencode

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from profiles.models import ChangeRequest, Profile, ProfileVersion
from profiles.safechange.change_requests import (
    ChangeRequestStanding,
    ChangesInvalid,
    change_request_apply,
    change_request_close,
    change_request_create,
    change_request_diff,
    change_request_etag,
    change_request_get,
    change_request_list,
    change_request_rebase,
    change_request_reject,
    changes_applied,
    changes_to_reach,
    draft_impact,
    profile_promote,
)
from profiles.safechange.impact import (
    IMPACT_SCOPE,
    impact_gained_lost,
    impact_max_scenarios,
    impact_summary,
    profile_impact,
)
from profiles.safechange.restore import version_restore
from profiles.safechange.reviews import change_request_approve_reviewed, change_request_open
from profiles.safechange.selectors import (
    change_request_list_filtered,
    change_request_profile_keys_list,
    scenario_ids_by_name_get,
)
from profiles.studio.draft import (
    draft_from_post,
    draft_from_saved,
    sample_values_from_scenario,
)
from profiles.studio.entity_rows import change_set_context
from profiles.studio.throttling import throttle_refusal, throttled
from profiles.studio.version_rows import version_rows
from profiles.studio.views.editor import editor_page
from profiles.studio.views.reviews import review_context
from profiles.studio.views.text_diff import history_text_diff
from profiles.versioning.environments import (
    SafeChangeError,
    environment_list,
    environment_update,
    profile_write_refusal,
)
from profiles.versioning.versions import (
    document_changes,
    latest_versions_get,
    profile_documents_get,
    version_before,
    version_get,
    version_list,
)
from profiles.workspace import cache
from profiles.workspace.concurrency import PreconditionFailed, profile_etag
from profiles.workspace.origin import STUDIO as STUDIO_ORIGIN
from profiles.workspace.parameters import positive_integer, whole_number
from profiles.workspace.permissions import (
    ADMINISTER,
    READ_CONFIG,
    READ_MATERIAL,
    RESOLVE,
    WRITE_RULES,
    capability_required,
    require,
    user_can,
)
from profiles.workspace.selectors import (
    profile_get,
    profile_list_with_consumer,
    scenario_of_profile_get,
)
from profiles.workspace.writing import EntryInvalid
from resolver import ResolverError, WorkspaceError

VERSIONS_PER_PAGE = 50
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


def _shown(value) -> str:
    """Return a document value as a reviewer reads it (JSON; "—" for not given)."""
    if value is None:
        return "—"
    return json.dumps(value, ensure_ascii=False)


def _diff_rows(changes: list[dict]) -> list[dict]:
    return [
        {"path": change["path"], "before": _shown(change["from"]), "after": _shown(change["to"])}
        for change in changes
    ]


def _protected(user, environment: str | None) -> bool:
    return profile_write_refusal(user=user, environments=[environment]) is not None


def _profile_or_none(key: str) -> Profile | None:
    try:
        return profile_get(key=key)
    except Profile.DoesNotExist:
        return None


def _profile_or_404(key: str) -> Profile:
    profile = _profile_or_none(key)
    if profile is None:
        raise Http404(f'no profile "{key}"')
    return profile


# --- history -------------------------------------------------------------------------------


@capability_required(READ_CONFIG)
@require_GET
def profile_history(request, key):
    """List a profile's versions and show a side-by-side diff of any two."""
    versions = version_list(profile_key=key)
    latest = versions.first()
    if latest is None:
        raise Http404(f'no versions of profile "{key}"')
    profile = _profile_or_none(key)

    right = positive_integer(request.GET, "to", meaning="a version number") or latest.number
    left = positive_integer(request.GET, "from", meaning="a version number") or max(right - 1, 1)
    compared = {version.number: version for version in versions.filter(number__in={left, right})}
    if left not in compared or right not in compared:
        raise Http404("no such version")
    page = Paginator(versions, VERSIONS_PER_PAGE).get_page(request.GET.get("page"))
    shown = list(page.object_list)
    before = version_before(profile_key=key, number=shown[-1].number) if shown else None
    # ?scenario=: the rendered text of both versions for a saved scenario (issue 21).
    text = history_text_diff(request, key=key, left=compared[left], right=compared[right])
    return render(
        request,
        "profiles/history.html",
        {
            **text,
            "key": key,
            "profile": profile,
            "page": page,
            "rows": version_rows(shown, before),
            "latest": latest,
            "left": compared[left],
            "right": compared[right],
            "diff": _diff_rows(document_changes(compared[left].document, compared[right].document)),
            "protected": profile is not None and _protected(request.user, profile.environment),
            "numbers": list(versions.values_list("number", flat=True)[:500]),
        },
        status=text.get("text_status", 200),
    )


@capability_required(WRITE_RULES)
@require_http_methods(["GET", "POST"])
def profile_version_restore(request, key, number):
    """Confirm, then restore a version (appending a new one); in a protected environment,
    propose the restore as a change request instead."""
    try:
        version = version_get(profile_key=key, number=number)
    except ProfileVersion.DoesNotExist:
        raise Http404("no such version") from None
    if version.document is None:
        raise Http404("this version records a deletion; there is nothing to restore")
    current = profile_documents_get([key]).get(key)
    environment = (current or version.document).get("environment")
    protected = _protected(request.user, environment)
    if request.method == "POST":
        history = reverse("profile-history", args=[key])
        if protected and current is not None:
            # Proposing the restore computes its impact: counted like every impact.
            refusal = throttle_refusal(request, scope=IMPACT_SCOPE)
            if refusal is not None:
                return refusal
            changes = changes_to_reach(current, version.document)
            try:
                change_request = change_request_create(
                    profile_key=key,
                    title=f"Restore version {number} of {key}",
                    description=f"Makes {key} equal to its version {number} again.",
                    changes=changes,
                    user=request.user,
                )
            except SafeChangeError as exc:
                messages.error(request, f"Nothing was proposed: {exc.message}")
                return redirect(history)
            messages.success(request, f"Proposed change request #{change_request.pk}.")
            return redirect("change-request", pk=change_request.pk)
        try:
            latest, created = version_restore(
                profile_key=key,
                number=number,
                user=request.user,
                origin=STUDIO_ORIGIN,
                if_match=request.POST.get("etag") or None,
            )
        except PreconditionFailed:
            messages.error(
                request, "Someone saved this profile since you opened this page; nothing changed."
            )
            return redirect(request.path)
        except (SafeChangeError, EntryInvalid) as exc:
            messages.error(request, f"Nothing was restored: {exc}")
            return redirect(request.path)
        if created:
            messages.success(request, f"Restored version {number} as version {latest.number}.")
        else:
            messages.info(request, f"Version {number} is already the current state.")
        return redirect(history)
    profile = _profile_or_none(key)
    return render(
        request,
        "profiles/version_restore.html",
        {
            "key": key,
            "version": version,
            "diff": _diff_rows(document_changes(current, version.document)),
            "protected": protected,
            "etag": profile_etag(profile) if profile is not None else "",
            "exists": current is not None,
        },
    )


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
    try:
        change_request = change_request_list().get(pk=pk)
    except ChangeRequest.DoesNotExist:
        raise Http404("no such change request") from None
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
    try:
        change_request = change_request_list().get(pk=pk)
    except ChangeRequest.DoesNotExist:
        raise Http404("no such change request") from None
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
            "diff": _diff_rows(change_request_diff(change_request)),
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
    try:
        change_request = change_request_get(pk=pk)
    except ChangeRequest.DoesNotExist:
        raise Http404("no such change request") from None
    profile = _profile_or_404(change_request.profile_key)
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


# --- the editor's hooks --------------------------------------------------------------------


def _editor_draft(request, profile: Profile):
    cached = cache.workspace_get()
    return cached, draft_from_post(request.POST, cached.document, profile.key)


@capability_required(RESOLVE, READ_CONFIG)
@require_POST
@throttled("impact", unless=lambda request: request.POST.get("dismiss"))
def profile_save_impact(request, key):
    """Return the impact summary Save shows before saving: how many saved scenarios answer
    differently under the draft, and how (a fragment for ``#save-impact``)."""
    profile = _profile_or_404(key)
    if request.POST.get("dismiss"):
        return HttpResponse("")
    cached, draft = _editor_draft(request, profile)
    context = {"profile": profile, "impact": None, "error": None}
    if not draft.is_valid():
        context["error"] = "fix the fields marked in the form"
        return render(request, "profiles/_save_impact.html", context)
    try:
        impact = profile_impact(
            profile_key=key,
            rules=draft.rule_overrides(),
            budget=draft.budget_value(),
            compiled=cached.compiled,
        )
    except (WorkspaceError, ResolverError) as exc:
        context["error"] = exc.message
    else:
        if not impact:
            # No saved scenario: nothing to confirm; the page saves at once (studio.js).
            response = HttpResponse("")
            response["HX-Trigger"] = "save-impact-none"
            return response
        context.update(
            {
                "impact": [
                    {"entry": entry, "gained": gained, "lost": lost}
                    for entry in impact
                    for gained, lost in [impact_gained_lost(entry)]
                ],
                "summary": impact_summary(impact),
                "changed": [entry for entry in impact if entry["changed"]],
            }
        )
    return render(request, "profiles/_save_impact.html", context)


@capability_required(WRITE_RULES)
@require_POST
@throttled(IMPACT_SCOPE)  # opening the request computes its impact
def profile_propose(request, key):
    """Open a change request with the editor's draft (instead of Save in a protected
    environment) and show it.

    The changes are the draft against the version the page was opened on (its ETag): when the
    profile changed since, nothing is proposed and the editor keeps the draft, as Save does —
    changes computed against the newer version would silently revert what was saved since.
    """
    profile = _profile_or_404(key)
    cached, draft = _editor_draft(request, profile)
    if not draft.is_valid():
        messages.error(request, "Nothing was proposed: fix the fields marked in the editor.")
        return redirect("profile-editor", key=key)
    saved = profile_documents_get([key])[key]
    changes = changes_to_reach(
        saved,
        {**saved, "budget": draft.budget_value(), "rules": draft.rules.rules_document()},
        fields=("budget", "rules"),
    )
    # The confirmation step (profile_propose_confirm) posts the title, description and
    # reviewers with the draft.
    title = request.POST.get("title")
    if title is None:
        title = f"Change {key}"
    try:
        change_request = change_request_open(
            opener=change_request_create,
            reviewers=request.POST.getlist("reviewers"),
            profile_key=key,
            title=title,
            description=request.POST.get("description", ""),
            changes=changes,
            user=request.user,
            if_match=draft.budget.cleaned_data.get("etag") or None,
        )
    except PreconditionFailed:
        draft.general_errors.append(
            "Someone else changed this profile after you opened it, so nothing was proposed "
            "(the change request would have undone their change). Your edits are still in the "
            "form: reload to see their change, then propose again."
        )
        return editor_page(request, profile, draft, cached, status=409)
    except SafeChangeError as exc:
        messages.error(request, f"Nothing was proposed: {exc.message}")
        return redirect("profile-editor", key=key)
    messages.success(
        request,
        f"Proposed change request #{change_request.pk}: it applies once it is approved.",
    )
    return redirect("change-request", pk=change_request.pk)


# --- environments --------------------------------------------------------------------------


def _comparison() -> list[dict]:
    """Group the profiles by consumer and objective, one column per environment."""
    environments = [environment.key for environment in environment_list()]
    profiles = profile_list_with_consumer()
    documents = profile_documents_get([profile.key for profile in profiles])
    groups: dict[tuple[str, str], dict] = {}
    for profile in profiles:
        group = groups.setdefault(
            (profile.consumer.key, profile.objective),
            {"consumer": profile.consumer.key, "objective": profile.objective, "by_env": {}},
        )
        group["by_env"][profile.environment] = profile
    rows = []
    for group in groups.values():
        with_env = {env: p for env, p in group["by_env"].items() if env is not None}
        if not with_env:
            continue
        cells = []
        for environment in environments:
            profile = with_env.get(environment)
            cells.append(
                {
                    "environment": environment,
                    "profile": profile,
                    "document": documents.get(profile.key) if profile else None,
                    "targets": [
                        target
                        for target in environments
                        if target != environment and profile is not None
                    ],
                }
            )
        present = [cell for cell in cells if cell["profile"] is not None]
        differences = []
        if len(present) >= 2:
            base = present[0]["document"]
            for cell in present[1:]:
                carried = {"budget": base["budget"], "rules": base.get("rules") or {}}
                mine = {
                    "budget": cell["document"]["budget"],
                    "rules": cell["document"].get("rules") or {},
                }
                changes = document_changes(carried, mine)
                differences.append(
                    {
                        "left": present[0]["environment"],
                        "right": cell["environment"],
                        "rows": _diff_rows(changes),
                    }
                )
        rows.append({**group, "cells": cells, "differences": differences})
    return rows


@capability_required(READ_CONFIG, unsafe=ADMINISTER)
@require_http_methods(["GET", "POST"])
def environment_list_page(request):
    """Environments with their protection, and the profiles of each consumer and objective
    side by side across environments, with Promote."""
    if request.method == "POST":
        key = request.POST.get("key", "")
        try:
            approvals = int(request.POST.get("approvals", "1"))
        except ValueError:
            approvals = -1
        try:
            environment_update(
                key=key,
                requires_change_request=request.POST.get("requires_change_request") == "on",
                approvals=approvals,
                user=request.user,
                origin=STUDIO_ORIGIN,
            )
        except Exception as exc:  # a ValidationError naming the field
            messages.error(request, f"Not saved: {'; '.join(getattr(exc, 'messages', [str(exc)]))}")
            return redirect("environment-list")
        messages.success(request, f"Environment {key} saved.")
        return redirect("environment-list")
    return render(
        request,
        "profiles/environments.html",
        {
            "environments": environment_list(),
            "groups": _comparison(),
            "can_administer": user_can(request.user, ADMINISTER),
        },
    )


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
    path("profiles/<slug:key>/history/", profile_history, name="profile-history"),
    path(
        "profiles/<slug:key>/history/<int:number>/restore/",
        profile_version_restore,
        name="profile-version-restore",
    ),
    path("profiles/<slug:key>/save-impact/", profile_save_impact, name="profile-save-impact"),
    path("profiles/<slug:key>/propose/", profile_propose, name="profile-propose"),
    path("profiles/<slug:key>/promote/", profile_promote_page, name="profile-promote"),
    path("changes/", change_request_list_page, name="change-request-list"),
    path("changes/<int:pk>/", change_request_page, name="change-request"),
    path("changes/<int:pk>/preview/", change_request_preview, name="change-request-preview"),
    path(
        "changes/<int:pk>/impact/",
        change_request_impact_more,
        name="change-request-impact-more",
    ),
    path("environments/", environment_list_page, name="environment-list"),
    path("help/safe-change/", help_safe_change, name="help-safe-change"),
]

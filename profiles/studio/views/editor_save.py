"""The editor's Save: save the draft (or discard it), the impact summary Save shows first,
and "Propose change", which opens a change request with the draft instead of saving it in a
protected environment. One module for the one button and its two answers; the page and its
live preview are ``editor``.

Each view checks its capability itself: a client can post to any of them.
"""

from dataclasses import replace

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import path
from django.views.decorators.http import require_POST

from profiles.authoring import profiles as authoring_profiles
from profiles.models import Profile
from profiles.safechange.change_requests import change_request_create, changes_to_reach
from profiles.safechange.impact import (
    IMPACT_SCOPE,
    impact_gained_lost,
    impact_summary,
    profile_impact,
)
from profiles.safechange.reviews import change_request_open
from profiles.studio.draft import draft_from_post
from profiles.studio.lookups import profile_or_404
from profiles.studio.throttling import throttled
from profiles.studio.views.editor import _loaded_scenario, _share_url, editor_page
from profiles.versioning.environments import ChangeRequestRequired, SafeChangeError
from profiles.versioning.versions import profile_documents_get
from profiles.workspace import cache
from profiles.workspace.concurrency import PreconditionFailed
from profiles.workspace.origin import STUDIO as STUDIO_ORIGIN
from profiles.workspace.permissions import READ_CONFIG, RESOLVE, WRITE_RULES, capability_required
from profiles.workspace.validation import WorkspaceValidationError
from resolver import ResolverError, WorkspaceError


@capability_required(WRITE_RULES)
@require_POST
def profile_save(request, key):
    """Save the rules and budget of the posted draft, unless someone saved since it was opened;
    the save message (optional) becomes the new version's message in History."""
    profile = profile_or_404(key)
    cached = cache.workspace_get()
    draft = draft_from_post(request.POST, cached.document, profile.key)
    loaded = _loaded_scenario(request, profile)
    message_valid = draft.save_message_is_valid()  # both checked: every error shows at once
    if not (draft.is_valid() and message_valid):
        messages.error(request, "Nothing was saved: fix the fields marked below.")
        return editor_page(request, profile, draft, cached, loaded=loaded, status=400)
    try:
        authoring_profiles.profile_save_rules(
            profile=profile,
            rules=draft.rule_overrides(),
            budget=draft.budget_value(),
            user=request.user,
            origin=replace(STUDIO_ORIGIN, message=draft.save_message),
            if_match=draft.budget.cleaned_data.get("etag") or None,
        )
    except WorkspaceValidationError as exc:
        draft.add_issues(exc.issues)
        messages.error(request, "Nothing was saved: fix the fields marked below.")
        return editor_page(request, profile, draft, cached, loaded=loaded, status=400)
    except PreconditionFailed:
        draft.general_errors.append(
            "Someone else saved this profile after you opened it, so nothing was saved. "
            "Your edits are still in the form: reload to see their change."
        )
        return editor_page(request, profile, draft, cached, loaded=loaded, status=409)
    except ChangeRequestRequired as exc:
        draft.general_errors.append(f"Nothing was saved: {exc}. Propose a change instead.")
        return editor_page(request, profile, draft, cached, loaded=loaded, status=409)
    messages.success(request, f"Saved {profile.key}.")
    return redirect(_share_url(profile, draft, loaded))


@capability_required(RESOLVE, READ_CONFIG)
@require_POST
def profile_discard(request, key):
    """Drop the unsaved rule edits; keep the sample input."""
    profile = profile_or_404(key)
    cached = cache.workspace_get()
    draft = draft_from_post(request.POST, cached.document, profile.key)
    loaded = _loaded_scenario(request, profile)
    return redirect(_share_url(profile, draft, loaded))


# --- before Save: its impact; in a protected environment, Propose -------------------------


def _editor_draft(request, profile: Profile):
    cached = cache.workspace_get()
    return cached, draft_from_post(request.POST, cached.document, profile.key)


@capability_required(RESOLVE, READ_CONFIG)
@require_POST
@throttled("impact", unless=lambda request: request.POST.get("dismiss"))
def profile_save_impact(request, key):
    """Return the impact summary Save shows before saving: how many saved scenarios answer
    differently under the draft, and how (a fragment for ``#save-impact``)."""
    profile = profile_or_404(key)
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
    profile = profile_or_404(key)
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


urlpatterns = [
    path("profiles/<slug:key>/save/", profile_save, name="profile-save"),
    path("profiles/<slug:key>/discard/", profile_discard, name="profile-discard"),
    path("profiles/<slug:key>/save-impact/", profile_save_impact, name="profile-save-impact"),
    path("profiles/<slug:key>/propose/", profile_propose, name="profile-propose"),
]

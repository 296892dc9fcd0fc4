"""Studio pages of reviews: the confirmation step of Propose and Promote (what will be proposed,
its diff and impact, with title, description and reviewers), and the review of a request on
its page (the thread, Approve / Request changes, its reviewers, the scheduled apply).

The request page itself is ``profiles.studio.views.safechange.change_request_page``; it adds
``review_context`` to its context and includes the partials of
``profiles/_change_request_review.html`` where a reviewer reads them (after the changes and
their impact: the conversation, the verdict, then the decision). Each
action here posts to its own view, checks its capability and calls one service of
``profiles.safechange.reviews``, then goes back to the page.
"""

import json
from datetime import datetime

from django import forms
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from profiles.models import ChangeRequest, Profile
from profiles.safechange.change_requests import (
    change_request_update,
    changes_applied,
    changes_to_reach,
    draft_impact,
)
from profiles.safechange.errors import ChangesInvalid
from profiles.safechange.impact import IMPACT_SCOPE, impact_gained_lost, impact_summary
from profiles.safechange.promotion import promotion_planned
from profiles.safechange.reviews import (
    COMMENT_MAX_LENGTH,
    change_request_approve_reviewed,
    change_request_comment,
    change_request_comments_list,
    change_request_request_changes,
    change_request_reviewers_set,
    change_request_schedule_apply,
    changes_requested_by,
    reviewer_candidates_list,
)
from profiles.safechange.titles import DESCRIPTION_MAX_LENGTH, TITLE_MAX_LENGTH, default_title
from profiles.studio.draft import draft_from_post
from profiles.studio.lookups import change_request_or_404, profile_or_404
from profiles.studio.throttling import throttle_refusal, throttled
from profiles.studio.views.editor import editor_page
from profiles.versioning.environments import SafeChangeError
from profiles.versioning.versions import (
    document_changes,
    latest_versions_get,
    profile_documents_get,
)
from profiles.workspace import cache
from profiles.workspace.concurrency import PreconditionFailed
from profiles.workspace.permissions import WRITE_RULES, capability_required, user_can

# What the confirmation step carries back to Propose: the editor's own fields, unchanged.
PROPOSAL_FIELDS = ("title", "description", "reviewers", "csrfmiddlewaretoken")


class ProposalForm(forms.Form):
    """Title, description and reviewers of a change request about to be opened."""

    title = forms.CharField(
        max_length=TITLE_MAX_LENGTH,
        help_text="Required. Say what changes; the default names every changed field.",
    )
    description = forms.CharField(
        required=False,
        max_length=DESCRIPTION_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="Why, and what reviewers should look at. Optional.",
    )
    reviewers = forms.MultipleChoiceField(
        required=False,
        widget=forms.SelectMultiple(attrs={"size": 5}),
        help_text="Editors or staff asked to review it; each is emailed. Anyone who may review "
        "can still approve. Ctrl or ⌘ selects several.",
    )

    def __init__(self, *args, candidates=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["reviewers"].choices = [
            (user.get_username(), user.get_username()) for user in candidates
        ]


def _shown(value) -> str:
    return "—" if value is None else json.dumps(value, ensure_ascii=False)


def _proposal_page(request, *, context: dict, form: ProposalForm, status: int = 200):
    impact = context.get("impact_entries") or []
    context.update(
        {
            "form": form,
            "diff": [
                {"path": c["path"], "before": _shown(c["from"]), "after": _shown(c["to"])}
                for c in context.pop("changes_diff")
            ],
            "impact": [
                {"entry": entry, "gained": gained, "lost": lost}
                for entry in impact
                if not entry.get("skipped")
                for gained, lost in [impact_gained_lost(entry)]
            ],
            "summary": impact_summary(impact),
        }
    )
    return render(request, "profiles/change_request_propose.html", context, status=status)


def editor_changes(profile: Profile, draft) -> dict:
    """Return the changes the editor's draft proposes: its budget and rules against the saved
    profile (Propose computes the same)."""
    saved = profile_documents_get([profile.key])[profile.key]
    return changes_to_reach(
        saved,
        {**saved, "budget": draft.budget_value(), "rules": draft.rules.rules_document()},
        fields=("budget", "rules"),
    )


@capability_required(WRITE_RULES)
@require_POST
@throttled("impact")
def profile_propose_confirm(request, key):
    """Show what the editor's draft would propose (the diff and its impact on every saved
    scenario) with the request's title, description and reviewers; "Open change request"
    posts it all to Propose, which opens it."""
    profile = profile_or_404(key)
    cached = cache.workspace_get()
    draft = draft_from_post(request.POST, cached.document, profile.key)
    if not draft.is_valid():
        messages.error(request, "Nothing to propose yet: fix the fields marked in the editor.")
        return editor_page(request, profile, draft, cached, status=400)
    changes = editor_changes(profile, draft)
    if not changes:
        draft.general_errors.append(
            "Nothing to propose: the draft's budget and rules equal the saved profile's."
        )
        return editor_page(request, profile, draft, cached, status=400)
    saved = profile_documents_get([key])[key]
    diff = document_changes(saved, changes_applied(saved, changes))
    try:
        impact = draft_impact(profile_key=key, changes=changes)
    except ChangesInvalid as exc:
        draft.general_errors.append(f"Nothing to propose: {exc.message}")
        return editor_page(request, profile, draft, cached, status=400)
    title = default_title(profile_key=key, paths=[change["path"] for change in diff])
    candidates = reviewer_candidates_list(exclude=request.user)
    form = ProposalForm(initial={"title": title}, candidates=candidates)
    carried = [
        (name, value)
        for name in request.POST
        if name not in PROPOSAL_FIELDS
        for value in request.POST.getlist(name)
    ]
    context = {
        "mode": "propose",
        "profile_key": key,
        "environment": profile.environment,
        "action": reverse("profile-propose", args=[key]),
        "cancel_url": reverse("profile-editor", args=[key]),
        "carried": carried,
        "changes_diff": diff,
        "impact_entries": impact,
        "exists": True,
    }
    return _proposal_page(request, context=context, form=form)


@capability_required(WRITE_RULES)
@require_POST
@throttled("impact")
def profile_promote_confirm(request, key):
    """Show what promoting the profile to ``to`` would propose (the target, the diff, the
    impact on its saved scenarios), with title, description and reviewers; "Open change
    request" posts it to Promote."""
    to = request.POST.get("to")
    try:
        plan = promotion_planned(profile_key=key, to=to)
    except Profile.DoesNotExist:
        raise Http404("no such profile") from None
    except SafeChangeError as exc:
        messages.error(request, f"Nothing to promote: {exc.message}")
        return redirect("environment-list")
    target, changes, creates = plan["target"], plan["changes"], plan["creates"]
    base, impact = None, []
    if creates is None:
        base = profile_documents_get([target])[target]
        try:
            impact = draft_impact(profile_key=target, changes=changes)
        except ChangesInvalid as exc:
            messages.error(request, f"Nothing to promote: {exc.message}")
            return redirect("environment-list")
    diff = document_changes(base, changes_applied(base or dict(creates), changes))
    form = ProposalForm(
        initial={"title": f"Promote {key} to {to}"},
        candidates=reviewer_candidates_list(exclude=request.user),
    )
    context = {
        "mode": "promote",
        "profile_key": target,
        "source_key": key,
        "environment": to,
        "action": reverse("profile-promote", args=[key]),
        "cancel_url": reverse("environment-list"),
        "carried": [("to", to)],
        "changes_diff": diff,
        "impact_entries": impact,
        "exists": creates is None,
    }
    return _proposal_page(request, context=context, form=form)


# --- the request page ------------------------------------------------------------------------


def review_context(request, change_request: ChangeRequest, *, approved: bool, stale: bool):
    """Return what the request page shows of its review: the thread (each entry with whether
    the request moved on since), the reviewers, the verdicts blocking apply, what the reader
    may do, the scheduled apply."""
    is_open = change_request.status == ChangeRequest.Status.OPEN
    can_write = user_can(request.user, WRITE_RULES)
    is_author = change_request.author_id == request.user.pk
    blocking = changes_requested_by(change_request)
    thread = [
        {"comment": comment, "outdated": comment.revision != change_request.revision}
        for comment in change_request_comments_list(change_request=change_request)
    ]
    reviewers = list(change_request.reviewers.all())
    return {
        "thread": thread,
        "reviewers": reviewers,
        "changes_requested_by": blocking,
        "comment_max_length": COMMENT_MAX_LENGTH,
        "can_comment": can_write,
        "can_review": is_open and can_write and not is_author,
        "can_edit_reviewers": is_open and is_author,
        "reviewer_choices": [
            {"user": user, "selected": user in reviewers}
            for user in reviewer_candidates_list(exclude=change_request.author)
        ]
        if is_open and is_author
        else [],
        "can_schedule": is_open and can_write and approved and not stale and not blocking,
        "time_zone": timezone.get_current_timezone_name(),
    }


def _back(pk: int, anchor: str = ""):
    return redirect(reverse("change-request", args=[pk]) + anchor)


def _done(request, pk: int, service, success: str, *, anchor: str, **arguments):
    """Call the service; say what happened; go back to the page."""
    change_request_or_404(pk)
    refusal = throttle_refusal(request, scope="comment")
    if refusal is not None:
        return refusal
    try:
        service(pk=pk, user=request.user, **arguments)
    except SafeChangeError as exc:
        messages.error(request, exc.message)
    except PreconditionFailed as exc:
        messages.error(request, f"{exc} Nothing was recorded: read the request again.")
    else:
        messages.success(request, success)
    return _back(pk, anchor)


@capability_required(WRITE_RULES)
@require_POST
def change_request_comment_post(request, pk):
    """Add a comment to the request's thread."""
    return _done(
        request,
        pk,
        change_request_comment,
        "Comment added.",
        anchor="#thread",
        body=request.POST.get("body", ""),
    )


@capability_required(WRITE_RULES)
@require_POST
def change_request_review_post(request, pk):
    """Approve the revision the page showed, or request changes on it, with the reviewer's
    words."""
    verdict = request.POST.get("verdict")
    body = request.POST.get("body", "")
    etag = request.POST.get("etag") or None
    if verdict == "approve":
        service, success = change_request_approve_reviewed, "Approved."
    elif verdict == "request-changes":
        service, success = change_request_request_changes, "Changes requested."
    else:
        messages.error(request, "Choose Approve or Request changes.")
        return _back(pk, "#review-form")
    return _done(request, pk, service, success, anchor="#thread", body=body, if_match=etag)


@capability_required(WRITE_RULES)
@require_POST
def change_request_reviewers_post(request, pk):
    """Replace the request's reviewers (its author)."""
    return _done(
        request,
        pk,
        change_request_reviewers_set,
        "Reviewers saved.",
        anchor="#reviewers",
        reviewers=request.POST.getlist("reviewers"),
    )


def _apply_at_from_form(text: str) -> datetime | str:
    """Return the moment a ``datetime-local`` field names in the studio's time zone (the text
    itself when it names none, for the service to refuse)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return text
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment, timezone.get_current_timezone())
    return moment


@capability_required(WRITE_RULES)
@require_POST
def change_request_schedule_post(request, pk):
    """Schedule the apply at the time given, or clear it."""
    if request.POST.get("clear"):
        apply_at, success = None, "The scheduled apply is cleared."
    else:
        text = request.POST.get("apply_at", "").strip()
        if not text:
            messages.error(request, "applyAt: give the date and time to apply at.")
            return _back(pk, "#schedule")
        apply_at, success = _apply_at_from_form(text), "Apply scheduled."
    return _done(
        request, pk, change_request_schedule_apply, success, anchor="#schedule", apply_at=apply_at
    )


@capability_required(WRITE_RULES)
@require_POST
@throttled(IMPACT_SCOPE)  # new changes: the impact is computed again
def change_request_update_changes(request, pk):
    """Replace a request's changes by the draft of its preview (its author, from the editor
    opened on the request): a new revision, reviewed again."""
    change_request = change_request_or_404(pk)
    profile = profile_or_404(change_request.profile_key)
    key = profile.key
    latest = latest_versions_get([key]).get(key)
    if change_request.creates is not None or (latest and latest.number) != (
        change_request.base_version
    ):
        messages.error(
            request,
            "Nothing was updated: the profile moved on since the request was written (rebase "
            "it first), or the request creates its profile.",
        )
        return _back(pk)
    cached = cache.workspace_get()
    draft = draft_from_post(request.POST, cached.document, key)
    if not draft.is_valid():
        messages.error(request, "Nothing was updated: fix the fields marked in the editor.")
        return editor_page(request, profile, draft, cached, status=400, preview_of=change_request)
    try:
        updated = change_request_update(
            pk=pk, user=request.user, changes=editor_changes(profile, draft)
        )
    except SafeChangeError as exc:
        messages.error(request, f"Nothing was updated: {exc.message}")
        return _back(pk)
    if updated.revision != change_request.revision:
        messages.success(
            request,
            f"Updated: revision {updated.revision}. The reviews of the previous revision no "
            "longer count; it is reviewed again.",
        )
    else:
        messages.info(request, "The draft equals the request's changes: nothing changed.")
    return _back(pk)


urlpatterns = [
    path(
        "changes/<int:pk>/changes/",
        change_request_update_changes,
        name="change-request-update-changes",
    ),
    path(
        "profiles/<slug:key>/propose/confirm/",
        profile_propose_confirm,
        name="profile-propose-confirm",
    ),
    path(
        "profiles/<slug:key>/promote/confirm/",
        profile_promote_confirm,
        name="profile-promote-confirm",
    ),
    path("changes/<int:pk>/comments/", change_request_comment_post, name="change-request-comment"),
    path("changes/<int:pk>/review/", change_request_review_post, name="change-request-review"),
    path(
        "changes/<int:pk>/reviewers/",
        change_request_reviewers_post,
        name="change-request-reviewers",
    ),
    path(
        "changes/<int:pk>/schedule/", change_request_schedule_post, name="change-request-schedule"
    ),
]

"""What every create, edit and delete page of the studio does the same way.

A page builds an entry form, calls one write service (the features' write services) with the user
and the ETag the form was opened on, and puts the service's answer on the form: engine
issues on their fields (in words), a conflict (a key taken, a stale ETag) beside the field or
on top. A delete asks first and, when something still uses the object, says what (409).
"""

from django.contrib import messages
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from profiles.studio.proposals import (
    PROPOSE_FIELD,
    proposal_context,
    proposal_open,
    read_choice_field,
)
from profiles.versioning.environments import ChangeRequestRequired, SafeChangeError
from profiles.workspace.concurrency import PreconditionFailed
from profiles.workspace.permissions import user_can
from profiles.workspace.writing import Conflict, EntryInvalid

STALE = (
    "Someone else changed this after you opened it, so nothing was saved. "
    "Reload the page to see their change."
)


def save_entry(request, form, write, *, success: str, next_url, proposal=None):
    """Run ``write()`` (a write service call) for a valid form; on success, say so and go to
    ``next_url`` (a URL, or a function of what ``write()`` returned). Return the response,
    or None when the form shows errors.

    With a ``proposal`` (``profiles.studio.proposals``), a write refused for needing a change
    request leaves ``form.refusal`` set, so the page offers "Propose change"; a form posted
    with that button opens the change set and goes to it.
    """
    if not form.is_valid():
        return None
    if proposal is not None and request.POST.get(PROPOSE_FIELD):
        try:
            change_request = proposal.open(request, form)
        except (SafeChangeError, EntryInvalid) as exc:
            form.add_error(None, f"Nothing was proposed: {exc}")
            form.refusal = None
            return None
        messages.success(
            request, f"Change request #{change_request.pk} opened: it applies once approved."
        )
        return HttpResponseRedirect(reverse("change-request", args=[change_request.pk]))
    try:
        written = write()
    except EntryInvalid as exc:
        form.add_entry_issues(exc.field_issues)
    except Conflict as exc:
        form.add_conflict(exc)
    except PreconditionFailed:
        form.add_error(None, STALE)
    except ChangeRequestRequired as exc:  # a profile of a protected environment (safe change)
        form.add_error("environment" if "environment" in form.fields else None, str(exc))
        form.refusal = exc
    else:
        messages.success(request, success)
        for warning in form.save_warnings():  # kept, but worth knowing (a field on no item)
            messages.warning(request, warning)
        return HttpResponseRedirect(next_url(written) if callable(next_url) else next_url)
    return None


def entry_page(request, form, write, *, success: str, next_url, context: dict, proposal=None):
    """Return the create or edit page of one entry: a valid posted form is saved through
    ``write()`` (see ``save_entry``), else the form is shown with its errors beside the
    fields (``profiles/entry_form.html`` with ``context``: title, submit, crumbs…) and, when
    the save needs a change request and a ``proposal`` says how, the offer to propose it."""
    response = save_entry(
        request, form, write, success=success, next_url=next_url, proposal=proposal
    )
    if response is not None:
        return response
    refusal = getattr(form, "refusal", None)
    if refusal is not None and proposal is not None:
        context = {
            **context,
            "proposal": proposal_context(
                request,
                title=proposal.title(form),
                profiles=refusal.profiles,
                readers=[
                    {"profile": key, "field": read_choice_field(key)}
                    for key in proposal.readers(form)
                ],
            ),
        }
    return render(
        request, "profiles/entry_form.html", {"form": form, **context}, status=form_status(form)
    )


def writable_by(form, user, capability: str) -> bool:
    """Return whether ``user`` has ``capability``; without it every field is disabled (the
    page shows the entry read-only)."""
    writer = user_can(user, capability)
    if not writer:
        for field in form.fields.values():
            field.disabled = True
    return writer


def form_status(form) -> int:
    """Return 400 for a posted form with errors, 409 for a stale one, else 200."""
    if not form.is_bound or not form.errors:
        return 200
    return 409 if STALE in form.non_field_errors() else 400


def confirm_delete(
    request, context: dict, delete, *, success: str, next_url: str, proposal: dict | None = None
):
    """Ask before deleting; on POST run ``delete()``. A ``Conflict`` (something still uses
    the object) answers 409 with its explanation; nothing is deleted then. A deletion that
    needs a change request offers to propose ``proposal`` (its change-set entry) instead."""
    if request.method == "POST" and proposal is not None and request.POST.get(PROPOSE_FIELD):
        what = f"{context['kind']} {context['key']}"
        try:
            change_request = proposal_open(request, title=f"Delete {what}", changes=[proposal])
        except SafeChangeError as exc:
            context["conflict"] = f"Nothing was proposed: {exc}"
            return render(request, "profiles/confirm_delete.html", context, status=409)
        messages.success(
            request, f"Change request #{change_request.pk} opened: it applies once approved."
        )
        return HttpResponseRedirect(reverse("change-request", args=[change_request.pk]))
    if request.method == "POST":
        try:
            delete()
        except Conflict as exc:
            context["conflict"] = exc.message
            return render(request, "profiles/confirm_delete.html", context, status=409)
        except PreconditionFailed:
            context["conflict"] = STALE
            return render(request, "profiles/confirm_delete.html", context, status=409)
        except ChangeRequestRequired as exc:
            context["conflict"] = str(exc)
            if proposal is not None:
                context["proposal"] = proposal_context(
                    request, title=f"Delete {context['kind']} {context['key']}"
                )
            return render(request, "profiles/confirm_delete.html", context, status=409)
        messages.success(request, success)
        return HttpResponseRedirect(next_url)
    return render(request, "profiles/confirm_delete.html", context)

"""The workspace file: download (streamed a layer at a time) and upload (an import job in the
background, whose page shows its progress and then its result).

The upload form first previews the import (its dry run: what it would change, the impact on
the saved scenarios; counted in the ``impact`` scope, like the API's dry run) and keeps the
file for its next step under a token (``profiles.import_export.previews``: a row, not the cache);
the preview's Import starts the job, or — when the file touches protected profiles — its
"Propose as a change request" opens the file as one change set. A POST without ``action``
imports at once (as the API does); protection refuses it all the same.
"""

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from profiles.import_export.documents import WorkspaceImportError
from profiles.import_export.dry_run import workspace_import_preview, workspace_import_propose
from profiles.import_export.export_stream import CONTENT_TYPES as EXPORT_CONTENT_TYPES
from profiles.import_export.export_stream import workspace_export_chunks
from profiles.import_export.job_status import import_job_get
from profiles.import_export.jobs import ImportQueueFull, import_job_start
from profiles.import_export.previews import (
    previewed_upload_forget,
    previewed_upload_get,
    previewed_upload_keep,
)
from profiles.safechange.impact import impact_max_scenarios
from profiles.studio.entity_rows import counts_rows, entity_change_rows, impact_rows
from profiles.studio.forms.import_export import WorkspaceUploadForm
from profiles.studio.lookups import job_shown
from profiles.studio.throttling import throttle_refusal
from profiles.versioning.environments import SafeChangeError
from profiles.workspace.parameters import whole_number
from profiles.workspace.permissions import (
    IMPORT_EXPORT,
    READ_MATERIAL,
    WRITE_RULES,
    capability_required,
    user_can,
)
from profiles.workspace.validation import issues_in_text
from resolver import ValidationIssue


@capability_required(READ_MATERIAL, IMPORT_EXPORT)
@require_GET
def workspace_download(request):
    """Download the workspace as YAML, streamed a layer at a time."""
    response = StreamingHttpResponse(
        workspace_export_chunks(format="yaml"), content_type=EXPORT_CONTENT_TYPES["yaml"]
    )
    response["Content-Disposition"] = 'attachment; filename="workspace.yaml"'
    return response


@capability_required(IMPORT_EXPORT)
@require_http_methods(["GET", "POST"])
def workspace_upload(request):
    """Import a workspace file all-or-nothing; list every issue with its path when invalid."""
    if request.method == "POST":
        # Refuse an oversized upload before its body is read (files bypass Django's
        # in-memory limit); the margin leaves room for the form's other fields.
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        length = whole_number(request.META.get("CONTENT_LENGTH") or "0")
        if limit is not None and length is not None and length > limit + 64 * 1024:
            return HttpResponse(
                f"The upload is larger than {limit:,} bytes; nothing was imported.",
                status=413,
                content_type="text/plain; charset=utf-8",
            )
    action = request.POST.get("action", "")
    if request.method == "POST" and action in ("import", "propose"):
        return _previewed(request, action)
    form = WorkspaceUploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid() and action == "preview":
        return _preview(request, form)
    if request.method == "POST" and form.is_valid():
        # The import runs in the background; its page shows the progress, then the result.
        try:
            job = import_job_start(
                text=form.cleaned_data["text"], mode=form.cleaned_data["mode"], user=request.user
            )
        except ImportQueueFull as exc:
            form.add_error(None, f"The upload was not queued: {exc}.")
            context = {"form": form, "issues": []}
            response = render(request, "profiles/workspace.html", context, status=exc.status_code)
            response["Retry-After"] = str(exc.retry_after)
            return response
        url = reverse("workspace-import-job", kwargs={"job_id": job.pk})
        if request.htmx:
            return HttpResponseClientRedirect(url)
        return redirect(url)
    return render(request, "profiles/workspace.html", {"form": form, "issues": []})


def _preview(request, form):
    """Show what the upload would change (its dry run), the file kept for the next step."""
    # A dry run with the impact on saved scenarios: counted as the API's dry run is.
    refusal = throttle_refusal(request, scope="impact")
    if refusal is not None:
        return refusal
    text, mode = form.cleaned_data["text"], form.cleaned_data["mode"]
    try:
        preview = workspace_import_preview(text=text, mode=mode)
    except WorkspaceImportError as exc:
        issues = [issue_shown(issue.as_dict()) for issue in issues_in_text(exc.issues, text=text)]
        context = {"form": form, "issues": issues}
        return render(request, "profiles/workspace.html", context, status=400)
    token = previewed_upload_keep(user=request.user, text=text, mode=mode)
    changes = [change.as_dict() for change in preview.changes]
    context = {
        "form": WorkspaceUploadForm(initial={"mode": mode}),
        "issues": [],
        "preview": {
            "token": token,
            "mode": mode,
            "name": getattr(form.cleaned_data.get("file"), "name", "") or "the file",
            "counts": counts_rows(preview.counts),
            "changes": entity_change_rows(changes),
            "total": len(changes),
            "affected": preview.affected,
            "protected": preview.protected,
            "impact": impact_rows(preview.impact),
            "can_propose": user_can(request.user, WRITE_RULES),
        },
        "impact_max_scenarios": impact_max_scenarios(),
    }
    return render(request, "profiles/workspace.html", context)


def _previewed(request, action: str):
    """Import the previewed file (the job), or propose it as one change set."""
    token = request.POST.get("token") or ""
    kept = previewed_upload_get(token=token, user=request.user)
    if kept is None:
        messages.error(request, "That preview is no longer kept: upload the file again.")
        return redirect("workspace-upload")
    if action == "propose":
        if not user_can(request.user, WRITE_RULES):
            messages.error(request, "Proposing a change request needs the editors' rights.")
            return redirect("workspace-upload")
        try:
            change_request = workspace_import_propose(
                text=kept.source,
                mode=kept.mode,
                user=request.user,
                title=(request.POST.get("title") or "").strip() or None,
            )
        except (SafeChangeError, WorkspaceImportError) as exc:
            messages.error(request, f"The change request was not opened: {exc}")
            return redirect("workspace-upload")
        previewed_upload_forget(upload=kept)
        messages.success(request, "The import is proposed as a change request.")
        return redirect("change-request", pk=change_request.pk)
    try:
        job = import_job_start(text=kept.source, mode=kept.mode, user=request.user)
    except ImportQueueFull as exc:
        messages.error(request, f"The upload was not queued: {exc}.")
        return redirect("workspace-upload")
    previewed_upload_forget(upload=kept)
    url = reverse("workspace-import-job", kwargs={"job_id": job.pk})
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)


@capability_required(IMPORT_EXPORT)
@require_GET
def workspace_import_job(request, job_id):
    """Show an import's progress (the page polls its own fragment), then its result."""
    job = import_job_get(job_id=job_id)
    if not job_shown(request.user, job):
        raise Http404("no such import")
    issues = [
        issue_shown(issue)
        for issue in (job.error or {}).get("issues") or ([job.error] if job.error else [])
    ]
    summary = job.summary or {}
    # A dict's "items" key would shadow .items() in the template: pass the rows ready-made.
    rows = [
        (kind, counts)
        for kind, counts in summary.items()
        if kind != "names" and isinstance(counts, dict)
    ]
    context = {
        "job": job,
        "issues": issues,
        "summary": summary,
        "summary_rows": rows,
        "named_changes": _named_changes(summary),
    }
    if request.htmx:
        return render(request, "profiles/import_job.html#job", context)
    return render(request, "profiles/import_job.html", context)


def _named_changes(summary: dict) -> list[dict]:
    """Return what a job's summary names, per kind and action: the names listed and how many
    more were counted (a job finished before names were recorded has none)."""
    changes = []
    for kind, by_action in (summary.get("names") or {}).items():
        for action, names in by_action.items():
            number = (summary.get(kind) or {}).get(action) or 0
            if names:
                changes.append(
                    {"kind": kind, "action": action, "names": names, "more": number - len(names)}
                )
    return changes


def issue_shown(issue: dict) -> dict:
    """Return an issue of a failed job with its entry and line in words (``where``)."""
    located = ValidationIssue(
        path=issue.get("path") or "",
        message=issue.get("message") or "",
        entry=issue.get("entry"),
        line=issue.get("line"),
        column=issue.get("column"),
        alias_line=issue.get("aliasLine"),
        alias_column=issue.get("aliasColumn"),
    )
    return {"path": located.path, "message": located.message, "where": located.where}

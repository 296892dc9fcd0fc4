"""A layer's bulk ingest in the studio: a batch of item upserts and deletes uploaded as a file
(NDJSON or a JSON array), checked whole on the form, then written by a background job whose
page shows its progress and, at the end, what it did.

The rules of ``POST /api/v1/layers/<key>/bulk?background=true``, through the same
functions: the capability (WRITE_MATERIAL), the per-user rate (scope ``bulk``, counted with
the API's), the job's bounds (``BULK_INGEST_JOB_MAX_LINES``, the import queue's per-user
bounds: 429) and the job itself (``bulk_job_start``), which writes through the one bulk ingest
service and so refuses a governed layer that protected profiles read as the API does. Unlike
the API's background door, the batch is read here first with the job's own check
(``bulk_ingest_parse(..., job=True)``), so a bad line is shown on the form (400) and no job is
stored for it.
"""

from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from profiles.import_export.job_status import import_job_get
from profiles.import_export.jobs import ImportQueueFull, bulk_job_start
from profiles.material.bulk_ingest import (
    COUNTS,
    BatchInvalid,
    BatchNotReadable,
    BatchTooLarge,
    bulk_ingest_max_lines,
    bulk_ingest_parse,
)
from profiles.models import ImportJob, Layer
from profiles.studio.forms.bulk_ingest import BulkIngestUploadForm
from profiles.studio.lookups import job_shown, layer_or_404
from profiles.studio.throttling import throttle_refusal
from profiles.studio.views.import_export import issue_shown
from profiles.workspace.permissions import WRITE_MATERIAL, capability_required


def _page(request, layer: Layer, form, *, error: dict | None = None, status: int = 200):
    """Render the upload form, with the issues of a batch that was refused (``error``)."""
    error = error or {}
    context = {
        "layer": layer,
        "form": form,
        "issues": [issue_shown(issue) for issue in error.get("issues") or []],
        "more_issues": error.get("moreIssues") or 0,
        "part_size": f"{bulk_ingest_max_lines():,}",
    }
    return render(request, "profiles/item_bulk.html", context, status=status)


@capability_required(WRITE_MATERIAL)
@require_http_methods(["GET", "POST"])
def item_bulk(request, key):
    """Upload a batch of item operations for the layer ``key``: every line is checked first
    (a bad one: the form lists every issue with its line and column, nothing is written),
    then a background job writes the batch and its page shows the progress."""
    layer = layer_or_404(key)
    if request.method == "GET":
        return _page(request, layer, BulkIngestUploadForm())
    # Counted as the API counts a bulk request: one per upload, before its file is read.
    refusal = throttle_refusal(request, scope="bulk")
    if refusal is not None:
        return refusal
    form = BulkIngestUploadForm(request.POST, request.FILES)
    if not form.is_valid():
        return _page(request, layer, form, status=400)
    text, ndjson = form.cleaned_data["text"], form.cleaned_data["ndjson"]
    try:
        bulk_ingest_parse(text=text, ndjson=ndjson, layer=key, job=True)
    except BatchInvalid as exc:
        return _page(request, layer, form, error=exc.as_dict()["error"], status=400)
    except BatchNotReadable as exc:
        form.add_error("file", f"{exc}; nothing was written")
        return _page(request, layer, form, status=400)
    except BatchTooLarge as exc:
        form.add_error("file", str(exc))
        return _page(request, layer, form, status=413)
    try:
        job = bulk_job_start(layer=key, text=text, ndjson=ndjson, user=request.user)
    except ImportQueueFull as exc:
        form.add_error(None, f"The batch was not queued: {exc}.")
        response = _page(request, layer, form, status=exc.status_code)
        response["Retry-After"] = str(exc.retry_after)
        return response
    url = reverse("item-bulk-job", args=[key, job.pk])
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)


@capability_required(WRITE_MATERIAL)
@require_GET
def item_bulk_job(request, key, job_id):
    """Show a bulk upload's progress (the page polls its own fragment), then its summary or
    its error. Only its owner and administrators see it; to others it does not exist."""
    job = import_job_get(job_id=job_id, kind=ImportJob.Kind.BULK)
    if not job_shown(request.user, job) or job.layer != key:
        raise Http404("no such bulk upload")
    error = job.error or {}
    summary = job.summary or {}
    context = {
        "job": job,
        "summary": summary,
        "counts": [(name, summary.get(name, 0)) for name in COUNTS],
        "applied": sum(summary.get(name, 0) for name in COUNTS),
        "error": error,
        "issues": [issue_shown(issue) for issue in error.get("issues") or []],
        "more_issues": error.get("moreIssues") or 0,
    }
    if request.htmx:
        return render(request, "profiles/item_bulk_job.html#job", context)
    return render(request, "profiles/item_bulk_job.html", context)

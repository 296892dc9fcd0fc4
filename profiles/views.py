"""Studio pages: profiles, the profile editor with its live preview, layers, items, workspace.

Function-based views; the editor page owns its fragments (``profiles/editor.html#preview``,
``#unsaved-badge``). Every view checks permissions itself: a client can post to any fragment.
"""

import json

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.templatetags.static import static
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from profiles import cache, services, studio
from profiles.concurrency import PreconditionFailed, profile_etag
from profiles.exports import CONTENT_TYPES as EXPORT_CONTENT_TYPES
from profiles.exports import workspace_export_chunks
from profiles.forms import (
    AVAILABILITY_CHOICES,
    ItemForm,
    LayerConditionsForm,
    ProfileCreateForm,
    WorkspaceUploadForm,
)
from profiles.imports import import_job_start
from profiles.mappers import map_layer_to_resolver
from profiles.models import ImportJob, Item, Layer, Profile, Scenario
from profiles.permissions import (
    ADMINISTER,
    IMPORT_EXPORT,
    READ_CONFIG,
    READ_MATERIAL,
    RESOLVE,
    WRITE_MATERIAL,
    WRITE_RULES,
    capability_required,
    require,
    user_can,
)
from profiles.selectors import (
    profile_list_with_last_change,
    scenario_get_default,
    scenario_list,
    scenario_of_profile_get,
)
from profiles.services import (
    Conflict,
    WorkspaceValidationError,
    profile_resolve,
)
from resolver import RequestError, ResolverError, WorkspaceError

SESSION_SAMPLE = "studio-sample:{}"


@require_GET
def favicon(request):
    """Send browsers asking for /favicon.ico (the admin's pages, bookmarks) to the SVG icon."""
    return redirect(static("favicon.svg"), permanent=True)


@require_GET
def home(request):
    """Send a signed-in user to the profiles; show the landing page otherwise."""
    if request.user.is_authenticated:
        return redirect("profile-list")
    return render(request, "profiles/home.html")


# --- profiles --------------------------------------------------------------------------------


@capability_required(RESOLVE, READ_CONFIG)
@require_GET
def profile_list(request):
    """List the profiles with the status of each one's default scenario."""
    profiles = profile_list_with_last_change()
    defaults = {}
    for scenario in scenario_list():
        if scenario.is_default or scenario.profile_id not in defaults:
            defaults.setdefault(scenario.profile_id, scenario)
    rows = []
    for profile in profiles:
        scenario = defaults.get(profile.pk)
        status, error = None, None
        if scenario is not None:
            try:
                status = profile_resolve(profile=profile.key, request=scenario.as_request())[
                    "status"
                ]
            except ResolverError as exc:
                error = exc.message
        rows.append({"profile": profile, "scenario": scenario, "status": status, "error": error})
    return render(request, "profiles/profile_list.html", {"rows": rows})


@capability_required(WRITE_RULES)
@require_http_methods(["GET", "POST"])
def profile_create(request):
    """Create a profile (no rules: every layer starts on the default rule)."""
    form = ProfileCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            profile = services.profile_create(document=form.profile_values(), user=request.user)
        except services.EntryInvalid as exc:
            form.add_issues(exc.field_issues)
        except Conflict as exc:
            form.add_error(exc.path or None, exc.message)
        else:
            messages.success(request, f"Profile {profile.key} created.")
            return redirect("profile-editor", key=profile.key)
    return render(request, "profiles/profile_form.html", {"form": form, "title": "New profile"})


@capability_required(WRITE_RULES)
@require_http_methods(["GET", "POST"])
def profile_duplicate(request, key):
    """Copy a profile and its rules under a new key (the selection must differ)."""
    source = get_object_or_404(Profile.objects.select_related("consumer"), key=key)
    initial = {
        "key": f"{source.key}-copy"[:64],
        "name": f"{source.name or source.key} (copy)",
        "consumer": source.consumer,
        "objective": source.objective,
        "environment": source.environment or "",
        "budget": source.budget,
    }
    form = ProfileCreateForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        document = cache.workspace_get().document
        rules = studio.profile_document(document, source.key).get("rules") or {}
        try:
            profile = services.profile_create(
                document={**form.profile_values(), "rules": rules}, user=request.user
            )
        except services.EntryInvalid as exc:
            form.add_issues(exc.field_issues)
        except Conflict as exc:
            form.add_error(exc.path or None, exc.message)
        else:
            messages.success(request, f"Profile {source.key} duplicated as {profile.key}.")
            return redirect("profile-editor", key=profile.key)
    return render(
        request,
        "profiles/profile_form.html",
        {"form": form, "title": f"Duplicate {source.key}", "source": source},
    )


@capability_required(WRITE_RULES)
@require_http_methods(["GET", "POST"])
def profile_delete(request, key):
    """Ask for confirmation, then delete the profile (its rules and scenarios go with it)."""
    profile = get_object_or_404(Profile, key=key)
    if request.method == "POST":
        services.profile_delete(key=profile.key, user=request.user)
        messages.success(request, f"Profile {key} deleted.")
        return redirect("profile-list")
    return render(
        request,
        "profiles/profile_confirm_delete.html",
        {"profile": profile, "scenarios": Scenario.objects.filter(profile=profile).count()},
    )


# --- the editor ------------------------------------------------------------------------------


def _editor_profile(key: str) -> Profile:
    try:
        return Profile.objects.select_related("consumer").get(key=key)
    except Profile.DoesNotExist:
        raise Http404(f'no profile "{key}"') from None


def _preview_context(profile: Profile, draft: studio.Draft, cached) -> dict:
    """Resolve the draft (never writing) and build everything the preview shows.

    ``cached`` is the compiled workspace read once for the whole request.
    """
    document = cached.document
    context = {"draft": draft, "profile": profile, "resolution": None}
    context["dirty"] = studio.draft_is_dirty(draft, document, profile.key)
    request = draft.sample.as_request()
    try:
        resolution = profile_resolve(
            profile=profile.key,
            request=request,
            rule_overrides=draft.rule_overrides(),
            budget_override=draft.budget_value(),
            compiled=cached.compiled,
        )
    except WorkspaceError as exc:
        studio.attach_issues(draft, exc.issues or [exc])
        return context
    except RequestError as exc:
        draft.general_errors.append(f"Sample input — {exc.path or 'request'}: {exc.message}")
        return context
    context["resolution"] = resolution
    context["status_messages"] = studio.status_messages(resolution)
    context["meter"] = studio.budget_meter(resolution)
    context["timeline"] = studio.layer_timeline(resolution, cached)
    context["output_lines"] = studio.output_lines(resolution)
    if context["dirty"]:
        saved = studio.saved_resolution(profile.key, request, cached)
        context["changes"] = studio.what_changed(saved, resolution)
    context["field_errors"] = json.dumps(_field_errors(draft))
    return context


def _field_errors(draft: studio.Draft) -> dict:
    errors = {
        f"{row.key} {name}": message for row in draft.rows for name, message in row.errors.items()
    }
    if draft.budget_error:
        errors["budget"] = draft.budget_error
    return errors


def _editor_page(request, profile, draft, cached, *, status=200):
    document = cached.document
    context = _preview_context(profile, draft, cached)
    if "field_errors" not in context:
        context["field_errors"] = json.dumps(_field_errors(draft))
    context.update(
        {
            "etag": request.POST.get("etag") or profile_etag(profile),
            "input_keys": studio.input_keys(document),
            "layers": document.get("layers") or [],
            "scenarios": Scenario.objects.filter(profile=profile).order_by("-is_default", "name"),
            "history": studio.profile_history(profile),
            "choices": studio.CHOICE_FIELDS,
            "default_hints": studio.DEFAULT_HINTS,
            "main_fields": studio.MAIN_RULE_FIELDS,
            "availability_choices": AVAILABILITY_CHOICES,
            "availability_rows": [
                {
                    "key": layer["key"],
                    "stored": layer.get("availability") or "auto",
                    "current": draft.sample.availability.get(layer["key"], ""),
                }
                for layer in document.get("layers") or []
            ],
        }
    )
    return render(request, "profiles/editor.html", context, status=status)


@capability_required(RESOLVE, READ_CONFIG)
@require_http_methods(["GET", "POST"])
def profile_editor(request, key):
    """Show the editor; POST runs an action: save, discard, load or save a scenario."""
    profile = _editor_profile(key)
    cached = cache.workspace_get()
    document = cached.document
    session_key = SESSION_SAMPLE.format(profile.key)
    if request.method == "GET":
        stored = request.session.get(session_key)
        if request.GET.get("scenario"):
            scenario = scenario_of_profile_get(profile=profile, scenario_id=request.GET["scenario"])
            if scenario is None:
                raise Http404("no such scenario of this profile")
            sample = studio.sample_from_scenario(scenario, document)
        elif stored:
            sample = studio.sample_from_session(stored, document)
        else:
            sample = studio.sample_from_scenario(scenario_get_default(profile=profile), document)
        draft = studio.draft_from_saved(document, profile.key, sample)
        return _editor_page(request, profile, draft, cached)

    action = request.POST.get("action", "")
    draft = studio.draft_from_post(request.POST, document, profile.key)
    if action == "discard":
        request.session[session_key] = draft.sample.as_session()
        return redirect("profile-editor", key=profile.key)
    if action == "load-scenario":
        scenario = scenario_of_profile_get(
            profile=profile, scenario_id=request.POST.get("scenario")
        )
        if scenario is None:
            draft.general_errors.append("Choose a scenario to load.")
            return _editor_page(request, profile, draft, cached, status=400)
        # Keep the unsaved rule edits; replace only the sample input.
        draft.sample = studio.sample_from_scenario(scenario, document)
        request.session[session_key] = draft.sample.as_session()
        messages.info(request, f"Loaded scenario “{scenario.name}”.")
        return _editor_page(request, profile, draft, cached)
    if action == "save-scenario":
        require(request.user, WRITE_RULES)
        name = request.POST.get("scenario_name", "").strip()
        if not name:
            draft.general_errors.append("Give the scenario a name to save it.")
            return _editor_page(request, profile, draft, cached, status=400)
        try:
            studio.scenario_save(profile=profile, name=name, sample=draft.sample, user=request.user)
        except WorkspaceValidationError as exc:
            draft.general_errors.extend(f"Scenario not saved — {issue}" for issue in exc.issues)
            return _editor_page(request, profile, draft, cached, status=400)
        except Conflict as exc:
            draft.general_errors.append(f"Scenario not saved — {exc.message}")
            return _editor_page(request, profile, draft, cached, status=409)
        messages.success(request, f"Scenario “{name}” saved.")
        return _editor_page(request, profile, draft, cached)
    if action == "save":
        require(request.user, WRITE_RULES)
        request.session[session_key] = draft.sample.as_session()
        try:
            services.profile_save_rules(
                profile=profile,
                rules=draft.rule_overrides(),
                budget=draft.budget_value(),
                user=request.user,
                if_match=request.POST.get("etag") or None,
            )
        except WorkspaceValidationError as exc:
            studio.attach_issues(draft, exc.issues)
            messages.error(request, "Nothing was saved: fix the fields marked below.")
            return _editor_page(request, profile, draft, cached, status=400)
        except PreconditionFailed:
            draft.general_errors.append(
                "Someone else saved this profile after you opened it, so nothing was saved. "
                "Your edits are still in the form: reload to see their change."
            )
            return _editor_page(request, profile, draft, cached, status=409)
        messages.success(request, f"Saved {profile.key}.")
        return redirect("profile-editor", key=profile.key)
    draft.general_errors.append("Unknown action.")
    return _editor_page(request, profile, draft, cached, status=400)


@capability_required(RESOLVE, READ_CONFIG)
@require_POST
def profile_preview(request, key):
    """Resolve the posted draft and return the preview (plus the unsaved badge, out of band)."""
    profile = _editor_profile(key)
    cached = cache.workspace_get()
    draft = studio.draft_from_post(request.POST, cached.document, profile.key)
    context = _preview_context(profile, draft, cached)
    if "field_errors" not in context:
        context["field_errors"] = json.dumps(_field_errors(draft))
    if not request.htmx:
        return render(request, "profiles/editor.html#preview", context)
    preview = render_to_string("profiles/editor.html#preview", context, request=request)
    badge = render_to_string(
        "profiles/editor.html#unsaved-badge", {**context, "oob": True}, request=request
    )
    return HttpResponse(preview + badge)


# --- layers and items --------------------------------------------------------------------------


@capability_required(READ_CONFIG)
@require_GET
def layer_list(request):
    layers = list(Layer.objects.order_by("position", "id"))
    return render(request, "profiles/layer_list.html", {"layers": layers})


@capability_required(READ_CONFIG, unsafe=WRITE_MATERIAL)
@require_http_methods(["GET", "POST"])
def layer_edit(request, key):
    """Edit a layer's conditions: availability, scope, required input, item filter."""
    layer = get_object_or_404(Layer, key=key)
    form = LayerConditionsForm(request.POST or None, instance=layer)
    if not user_can(request.user, WRITE_MATERIAL):
        for field in form.fields.values():
            field.disabled = True
    if request.method == "POST" and form.is_valid():
        document = map_layer_to_resolver(form.instance, [])
        document.pop("items")
        try:
            services.layer_update(key=key, changes=document, replace=True, user=request.user)
        except WorkspaceValidationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Layer {layer.key} saved.")
            return redirect("layer-list")
    return render(request, "profiles/layer_form.html", {"form": form, "layer": layer})


ITEMS_PER_PAGE = 25


@capability_required(READ_MATERIAL)
@require_GET
def item_list(request, key):
    """List a layer's items, searchable by path, title and body, a page at a time."""
    layer = get_object_or_404(Layer, key=key)
    query = request.GET.get("q", "").strip()
    items = Item.objects.filter(layer=layer).order_by("position", "id")
    if query:
        items = items.filter(
            Q(path__icontains=query) | Q(title__icontains=query) | Q(body__icontains=query)
        )
    page = Paginator(items, ITEMS_PER_PAGE).get_page(request.GET.get("page"))
    context = {"layer": layer, "page": page, "query": query}
    if request.htmx and request.htmx.target == "item-results":
        return render(request, "profiles/item_list.html#item-results", context)
    return render(request, "profiles/item_list.html", context)


@capability_required(READ_MATERIAL, unsafe=WRITE_MATERIAL)
@require_http_methods(["GET", "POST"])
def item_edit(request, key, item_id):
    layer = get_object_or_404(Layer, key=key)
    item = get_object_or_404(Item, pk=item_id, layer=layer)
    form = ItemForm(request.POST or None, instance=item)
    if request.method == "POST" and form.is_valid():
        changes = {name: getattr(form.instance, name) for name in ("title", "body", "metadata")}
        try:
            services.item_update(
                layer=layer.key, path=item.path, changes=changes, user=request.user
            )
        except WorkspaceValidationError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Item {item.path} saved.")
            return redirect(reverse("item-list", kwargs={"key": layer.key}))
    return render(request, "profiles/item_form.html", {"form": form, "layer": layer, "item": item})


# --- workspace -------------------------------------------------------------------------------


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
        length = request.META.get("CONTENT_LENGTH") or "0"
        if limit is not None and length.isdigit() and int(length) > limit + 64 * 1024:
            return HttpResponse(
                f"The upload is larger than {limit:,} bytes; nothing was imported.",
                status=413,
                content_type="text/plain; charset=utf-8",
            )
    form = WorkspaceUploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        # The import runs in the background; its page shows the progress, then the result.
        job = import_job_start(
            text=form.cleaned_data["text"], mode=form.cleaned_data["mode"], user=request.user
        )
        url = reverse("workspace-import-job", kwargs={"job_id": job.pk})
        if request.htmx:
            return HttpResponseClientRedirect(url)
        return redirect(url)
    return render(request, "profiles/workspace.html", {"form": form, "issues": []})


@capability_required(IMPORT_EXPORT)
@require_GET
def workspace_import_job(request, job_id):
    """Show an import's progress (the page polls its own fragment), then its result."""
    job = ImportJob.objects.filter(pk=job_id).first()
    if job is None or (job.user_id != request.user.pk and not user_can(request.user, ADMINISTER)):
        raise Http404("no such import")
    issues = (job.error or {}).get("issues") or ([job.error] if job.error else [])
    summary = job.summary or {}
    # A dict's "items" key would shadow .items() in the template: pass the rows ready-made.
    rows = [(kind, counts) for kind, counts in summary.items() if isinstance(counts, dict)]
    context = {"job": job, "issues": issues, "summary": summary, "summary_rows": rows}
    if request.htmx:
        return render(request, "profiles/import_job.html#job", context)
    return render(request, "profiles/import_job.html", context)

"""The profiles: the list with each one's status, create, duplicate and delete."""

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from profiles import cache, services, studio
from profiles.forms import ProfileCreateForm
from profiles.models import Profile, Scenario
from profiles.permissions import READ_CONFIG, RESOLVE, WRITE_RULES, capability_required
from profiles.selectors import profile_list_with_last_change, scenario_list
from profiles.services import Conflict, profile_resolve
from resolver import ResolverError


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

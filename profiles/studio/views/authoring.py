"""The profiles: the list (search, filters, sort, the status of each one's default scenario),
create, duplicate, edit its own fields, delete, and compare two side by side."""

from django.core.paginator import Paginator
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from profiles.authoring import profiles as authoring_profiles
from profiles.resolution.services import profile_resolve
from profiles.studio import presenters
from profiles.studio.draft import (
    SUMMARY,
    profile_document,
)
from profiles.studio.entries import confirm_delete, entry_page
from profiles.studio.forms.authoring import ProfileCreateForm, ProfileForm
from profiles.studio.forms.entries import lock_key
from profiles.studio.lookups import profile_or_404
from profiles.workspace import cache
from profiles.workspace.concurrency import profile_etag
from profiles.workspace.origin import STUDIO as STUDIO_ORIGIN
from profiles.workspace.permissions import READ_CONFIG, RESOLVE, WRITE_RULES, capability_required
from profiles.workspace.selectors import (
    profile_list_with_last_change,
    scenario_count,
    scenario_list,
)
from resolver import ResolverError

PER_PAGE = 25
STATUSES = ("RESOLVED", "RENDERING_INCOMPLETE", "BLOCKED", "ERROR", "none")
SORTS = {
    "key": lambda row: row["profile"].key,
    "name": lambda row: (row["profile"].name or row["profile"].key).lower(),
    "consumer": lambda row: (row["profile"].consumer.key, row["profile"].key),
    "objective": lambda row: (row["profile"].objective, row["profile"].key),
    "environment": lambda row: (row["profile"].environment or "", row["profile"].key),
    "budget": lambda row: (row["profile"].budget, row["profile"].key),
    "changed": lambda row: (row["profile"].last_change_at, row["profile"].key),
    "status": lambda row: (STATUSES.index(row["status_filter"]), row["profile"].key),
}
SORT_LABELS = {
    "": "workspace order",
    "key": "key",
    "name": "name",
    "consumer": "consumer",
    "objective": "objective",
    "environment": "environment",
    "budget": "budget",
    "changed": "last change",
    "status": "status",
}


def profile_rows() -> list[dict]:
    """Return every profile with its last change and its default scenario's status."""
    defaults = {}
    for scenario in scenario_list():
        if scenario.is_default or scenario.profile_id not in defaults:
            defaults.setdefault(scenario.profile_id, scenario)
    rows = []
    for profile in profile_list_with_last_change():
        scenario = defaults.get(profile.pk)
        status, error, why = None, None, None
        if scenario is not None:
            request = {**scenario.as_request(), "detail": SUMMARY}
            try:
                resolution = profile_resolve(profile=profile.key, request=request)
            except ResolverError as exc:
                error = exc.message
            else:
                status, why = resolution["status"], presenters.first_finding(resolution)
        rows.append(
            {
                "profile": profile,
                "scenario": scenario,
                "status": status,
                "error": error,
                "why": why,
                "status_filter": status or ("ERROR" if error else "none"),
            }
        )
    return rows


def _matches(row: dict, query: str) -> bool:
    profile = row["profile"]
    text = " ".join(
        [
            profile.key,
            profile.name,
            profile.consumer.key,
            profile.objective,
            profile.environment or "",
            profile.description,
        ]
    ).lower()
    return all(word in text for word in query.lower().split())


@capability_required(RESOLVE, READ_CONFIG)
@require_GET
def profile_list(request):
    """List the profiles: search, filter by consumer/objective/environment/status, sort."""
    rows = profile_rows()
    chosen = {
        name: request.GET.get(name, "")
        for name in ("q", "consumer", "objective", "environment", "status", "sort")
    }
    options = {
        "consumer": sorted({row["profile"].consumer.key for row in rows}),
        "objective": sorted({row["profile"].objective for row in rows}),
        "environment": sorted({row["profile"].environment or "none" for row in rows}),
        "status": [s for s in STATUSES if any(row["status_filter"] == s for row in rows)],
    }
    shown = [
        row
        for row in rows
        if (not chosen["q"] or _matches(row, chosen["q"]))
        and chosen["consumer"] in ("", row["profile"].consumer.key)
        and chosen["objective"] in ("", row["profile"].objective)
        and chosen["environment"] in ("", row["profile"].environment or "none")
        and chosen["status"] in ("", row["status_filter"])
    ]
    sort = chosen["sort"]
    descending = sort.startswith("-")
    if sort.lstrip("-") in SORTS:
        shown.sort(key=SORTS[sort.lstrip("-")], reverse=descending)
    page = Paginator(shown, PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "rows": page,
        "page": page,
        "total": len(rows),
        "chosen": chosen,
        "options": options,
        "sorts": [{"value": "", "label": SORT_LABELS[""]}]
        + [
            {"value": f"{sign}{name}", "label": f"{label} {arrow}"}
            for name, label in SORT_LABELS.items()
            if name
            for sign, arrow in (("", "↑"), ("-", "↓"))
        ],
        "filtered": any(chosen[name] for name in chosen if name != "sort"),
        "query": query.urlencode(),
    }
    if request.htmx and request.htmx.target == "profile-results":
        return render(request, "profiles/profile_list.html#profile-results", context)
    return render(request, "profiles/profile_list.html", context)


@capability_required(WRITE_RULES)
@require_http_methods(["GET", "POST"])
def profile_create(request):
    """Create a profile; its rules start from every layer on the default rule, no layer,
    the layers checked, or a copy of another profile's rules."""
    form = ProfileCreateForm(request.POST if request.method == "POST" else None)
    del form.fields["description"]
    return entry_page(
        request,
        form,
        lambda: authoring_profiles.profile_create(
            document=form.document(),
            start_from=form.start_from(),
            user=request.user,
            origin=STUDIO_ORIGIN,
        ),
        success="Profile created. Edit its rules here.",
        next_url=lambda profile: reverse("profile-editor", args=[profile.key]),
        context={
            "title": "New profile",
            "submit": "Create profile",
            "intro": "Choose what its rules start from: every layer on the default rule "
            "(inline, no limits), no layer, only some layers, or another profile's rules. "
            "Edit the rules next.",
            "crumbs": [("Profiles", reverse("profile-list"))],
            "cancel_url": reverse("profile-list"),
        },
    )


@capability_required(WRITE_RULES)
@require_http_methods(["GET", "POST"])
def profile_duplicate(request, key):
    """Copy a profile and its rules under a new key (the selection must differ)."""
    source = profile_or_404(key)
    document = profile_document(cache.workspace_get().document, source.key)
    initial = ProfileForm.initial_of(document) | {
        "key": f"{source.key}-copy"[:64],
        "name": f"{source.name or source.key} (copy)",
    }
    form = ProfileForm(request.POST if request.method == "POST" else None, initial=initial)
    return entry_page(
        request,
        form,
        lambda: authoring_profiles.profile_create(
            document={**form.document(), "rules": document.get("rules") or {}},
            user=request.user,
            origin=STUDIO_ORIGIN,
        ),
        success=f"Profile {source.key} duplicated.",
        next_url=lambda profile: reverse("profile-editor", args=[profile.key]),
        context={
            "title": f"Duplicate {source.key}",
            "submit": "Duplicate",
            "intro": f"The copy gets every rule of {source.key}. Two profiles cannot share "
            "consumer, objective and environment: change one of them.",
            "crumbs": [("Profiles", reverse("profile-list"))],
            "cancel_url": reverse("profile-list"),
        },
    )


@capability_required(WRITE_RULES)
@require_http_methods(["GET", "POST"])
def profile_edit(request, key):
    """Edit a profile's own fields (name, consumer, objective, environment, description)."""
    profile = profile_or_404(key)
    document = profile_document(cache.workspace_get().document, key)
    initial = ProfileForm.initial_of(document) | {"etag": profile_etag(profile)}
    form = ProfileForm(request.POST if request.method == "POST" else None, initial=initial)
    lock_key(form)
    return entry_page(
        request,
        form,
        lambda: authoring_profiles.profile_update(
            key=key,
            changes={name: v for name, v in form.document().items() if name != "key"},
            user=request.user,
            origin=STUDIO_ORIGIN,
            if_match=form.cleaned_data["etag"] or None,
        ),
        success=f"Profile {key} saved.",
        next_url=reverse("profile-editor", args=[key]),
        context={
            "title": f"Profile {key}",
            "submit": "Save profile",
            "intro": "The profile's own fields. Its budget and rules are also in the editor.",
            "delete_url": reverse("profile-delete", args=[key]),
            "crumbs": [
                ("Profiles", reverse("profile-list")),
                (key, reverse("profile-editor", args=[key])),
            ],
            "cancel_url": reverse("profile-editor", args=[key]),
        },
    )


@capability_required(WRITE_RULES)
@require_http_methods(["GET", "POST"])
def profile_delete(request, key):
    """Ask for confirmation, then delete the profile (its rules and scenarios go with it)."""
    profile = profile_or_404(key)
    scenarios = scenario_count(profile=profile)
    context = {
        "kind": "profile",
        "key": key,
        "consequences": [
            f"Its rules and its {scenarios} saved scenario{'' if scenarios == 1 else 's'} go "
            "with it. Layers and items are shared and stay.",
            "The change is recorded in the history.",
        ],
        "cancel_url": reverse("profile-list"),
    }
    return confirm_delete(
        request,
        context,
        lambda: authoring_profiles.profile_delete(key=key, user=request.user, origin=STUDIO_ORIGIN),
        success=f"Profile {key} deleted.",
        next_url=reverse("profile-list"),
    )

"""Studio pages of versioning: a profile's history (its versions, a side-by-side diff of any
two, restore) and the environments (their protection, the profiles of each consumer and
objective compared across them, with Promote).

Every view checks its capability itself (``profiles.workspace.permissions``); the services
enforce the rest (protection: in a protected environment a restore is proposed as a change
request instead).
"""

import json

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_http_methods

from profiles.models import Profile
from profiles.safechange.change_requests import change_request_create, changes_to_reach
from profiles.safechange.impact import IMPACT_SCOPE
from profiles.safechange.restore import version_restore
from profiles.studio.lookups import or_404
from profiles.studio.throttling import throttle_refusal
from profiles.studio.version_rows import version_rows
from profiles.studio.views.text_diff import history_text_diff
from profiles.versioning.environments import (
    SafeChangeError,
    environment_list,
    environment_update,
    profile_write_refusal,
)
from profiles.versioning.versions import (
    document_changes,
    profile_documents_get,
    version_before,
    version_get,
    version_list,
)
from profiles.workspace.concurrency import PreconditionFailed, profile_etag
from profiles.workspace.origin import STUDIO as STUDIO_ORIGIN
from profiles.workspace.parameters import positive_integer
from profiles.workspace.permissions import (
    ADMINISTER,
    READ_CONFIG,
    WRITE_RULES,
    capability_required,
    user_can,
)
from profiles.workspace.selectors import profile_get, profile_list_with_consumer
from profiles.workspace.writing import EntryInvalid

VERSIONS_PER_PAGE = 50


def _shown(value) -> str:
    """Return a document value as a reviewer reads it (JSON; "—" for not given)."""
    if value is None:
        return "—"
    return json.dumps(value, ensure_ascii=False)


def diff_rows(changes: list[dict]) -> list[dict]:
    """Return the rows of a side-by-side diff of document changes (SPEC §2 paths)."""
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
            "diff": diff_rows(document_changes(compared[left].document, compared[right].document)),
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
    version = or_404("no such version", version_get, profile_key=key, number=number)
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
            "diff": diff_rows(document_changes(current, version.document)),
            "protected": protected,
            "etag": profile_etag(profile) if profile is not None else "",
            "exists": current is not None,
        },
    )


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
                        "rows": diff_rows(changes),
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


urlpatterns = [
    path("profiles/<slug:key>/history/", profile_history, name="profile-history"),
    path(
        "profiles/<slug:key>/history/<int:number>/restore/",
        profile_version_restore,
        name="profile-version-restore",
    ),
    path("environments/", environment_list_page, name="environment-list"),
]

"""Pages outside the workspace: the landing page, the icon and the reason-code glossary."""

from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.views.decorators.http import require_GET

from profiles.resolution.explain import glossary
from profiles.workspace.permissions import READ_CONFIG, capability_required


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


@capability_required(READ_CONFIG)
@require_GET
def help_reasons(request):
    """Show every reason code of a resolution in words (the timeline's codes link here)."""
    return render(request, "profiles/help_reasons.html", {"sections": glossary()})

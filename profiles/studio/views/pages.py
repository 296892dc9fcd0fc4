"""Pages outside the workspace: the landing page and the icon."""

from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.views.decorators.http import require_GET


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

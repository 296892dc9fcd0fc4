"""Studio pages."""

from django.shortcuts import render
from django.views.decorators.http import require_GET


@require_GET
def home(request):
    """Render the landing page."""
    return render(request, "profiles/home.html")

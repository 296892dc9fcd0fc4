"""Who may do what: readers resolve and read, editors (the ``editors`` group or staff) write.

Item material (titles, bodies, metadata) is customer data: a reader reaches it only through
resolve and expand, which apply each layer's itemFilter to the request. Listing items and
exporting the workspace show every customer's material, so they need an editor too.
"""

from rest_framework.permissions import SAFE_METHODS, BasePermission

EDITORS_GROUP = "editors"


def is_editor(user) -> bool:
    """Return whether the user may change the workspace (staff, or in the editors group)."""
    if not (user and user.is_authenticated):
        return False
    if user.is_staff or user.is_superuser:
        return True
    cached = getattr(user, "_ctxstudio_is_editor", None)
    if cached is None:
        cached = user.groups.filter(name=EDITORS_GROUP).exists()
        user._ctxstudio_is_editor = cached
    return cached


class IsEditorOrReadOnly(BasePermission):
    """Any authenticated user reads; writes need an editor."""

    message = "changing the workspace needs the editors group or staff"

    def has_permission(self, request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        return request.method in SAFE_METHODS or is_editor(request.user)


class IsEditor(BasePermission):
    """Only editors, for reads too (item material of every customer)."""

    message = "reading customer material outside a resolution needs the editors group or staff"

    def has_permission(self, request, view) -> bool:
        return is_editor(request.user)

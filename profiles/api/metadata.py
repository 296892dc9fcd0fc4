"""What ``OPTIONS`` answers on every API door: DRF's description of the view.

DRF's ``SimpleMetadata`` describes the body of PUT and POST with ``view.get_serializer()``,
after ``view.get_object()`` for PUT. The safe-change viewsets read their bodies themselves
(no ``serializer_class``) and the rule and environment viewsets find their object themselves
(no ``queryset``): DRF's assertions about the missing attribute made every OPTIONS on them a
500 (issue 18). Here a body is described only by a serializer the view declares, and an
object checked only by a lookup the view can run; otherwise OPTIONS still answers 200 with
the view's name, description and media types. The OpenAPI schema describes every body.
"""

from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import exceptions
from rest_framework.metadata import SimpleMetadata
from rest_framework.request import clone_request


def _overrides(view, method: str) -> bool:
    """Return whether the view's class replaces GenericAPIView's ``method``.

    Told by the function's name: DRF loads this module while it defines APIView, so
    ``rest_framework.generics`` cannot be imported here.
    """
    function = getattr(type(view), method, None)
    return function is not None and function.__qualname__ != f"GenericAPIView.{method}"


class ApiMetadata(SimpleMetadata):
    def determine_actions(self, request, view):
        """Return the fields of PUT and POST that the view's own serializer declares."""
        if getattr(view, "serializer_class", None) is None and not _overrides(
            view, "get_serializer_class"
        ):
            return {}
        finds_its_object = (
            getattr(view, "queryset", None) is not None
            or _overrides(view, "get_queryset")
            or _overrides(view, "get_object")
        )
        actions = {}
        for method in ("PUT", "POST"):
            if method not in view.allowed_methods:
                continue
            view.request = clone_request(request, method)
            try:
                view.check_permissions(view.request)
                if method == "PUT" and finds_its_object:
                    view.get_object()  # object permissions, as DRF checks them
            except (exceptions.APIException, PermissionDenied, Http404):
                continue
            else:
                actions[method] = self.get_serializer_info(view.get_serializer())
            finally:
                view.request = request
        return actions

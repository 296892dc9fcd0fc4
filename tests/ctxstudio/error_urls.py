"""The project's URLs and, under ``/boom/<status>/`` (and ``/api/v1/boom/<status>/``), views
that fail with each error the error pages answer."""

from django.core.exceptions import BadRequest, PermissionDenied
from django.db import OperationalError
from django.http import Http404
from django.urls import path

from ctxstudio import urls as project_urls


def raising(exception):
    def view(request):
        raise exception

    return view


BOOMS = {
    400: BadRequest("no"),
    403: PermissionDenied(),
    404: Http404(),
    500: RuntimeError("the view broke"),
    503: OperationalError("server closed the connection unexpectedly"),
}
urlpatterns = [
    *(path(f"boom/{status}/", raising(exception)) for status, exception in BOOMS.items()),
    *(path(f"api/v1/boom/{status}/", raising(exception)) for status, exception in BOOMS.items()),
    *project_urls.urlpatterns,
]

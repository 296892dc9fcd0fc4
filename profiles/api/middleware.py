"""Errors that happen before a DRF view runs, answered in the API's error shape.

Django checks ``DATA_UPLOAD_MAX_MEMORY_SIZE`` only when ``request.body`` is read, and DRF's
parsers read the stream directly, so an oversized API body would slip past the limit. This
middleware reads the body of API requests first (Django raises ``RequestDataTooBig``) and
answers 413; it also turns the HTML 404/405 of unmatched API URLs into the error shape.
"""

from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse
from rest_framework.response import Response

from profiles.api.exceptions import error_body

API_PREFIX = "/api/"


class ApiErrorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path.startswith(API_PREFIX):
            return self.get_response(request)
        if request.method in ("POST", "PUT", "PATCH", "DELETE"):
            try:
                request.body  # noqa: B018 -- reading it enforces DATA_UPLOAD_MAX_MEMORY_SIZE
            except RequestDataTooBig:
                return JsonResponse(
                    error_body(
                        "PAYLOAD_TOO_LARGE",
                        "the request body is larger than the server accepts",
                        "",
                    ),
                    status=413,
                )
        response = self.get_response(request)
        # A DRF response already has the shape (or is the browsable API's page).
        if response.status_code == 404 and not isinstance(response, Response):
            return JsonResponse(error_body("NOT_FOUND", "no such endpoint", ""), status=404)
        return response

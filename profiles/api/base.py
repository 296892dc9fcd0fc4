"""What the API's views outside the entry viewsets share (resolution, import and export): the
``ApiView`` base, the 400 of an invalid request (``invalid``) and the body check."""

from django.http import QueryDict
from rest_framework.views import APIView

from profiles.api.exceptions import ApiError
from profiles.api.schema import ApiAutoSchema
from profiles.workspace.permissions import DefaultApiPermission


def invalid(path: str, message: str) -> ApiError:
    return ApiError(400, "INVALID_REQUEST", f"{path}: {message}" if path else message, path)


def body_object(request, allowed: tuple[str, ...] | None = None) -> dict:
    """Return the request body as a dict; reject a non-object body and unknown fields."""
    return body_fields(request.data, allowed)


def body_fields(data, allowed: tuple[str, ...] | None = None) -> dict:
    """Return a parsed body as a dict; reject a non-object body and unknown fields (the rule
    of every door: DRF's ``request.data`` or the lean door's parsed bytes)."""
    if isinstance(data, QueryDict):  # a form post from the browsable API
        data = data.dict()
    if not isinstance(data, dict):
        raise invalid("", "the request body must be a JSON object")
    data = dict(data)
    if allowed is not None:
        for key in data:
            if key not in allowed:
                raise invalid(str(key), "unknown field")
    return data


class ApiView(APIView):
    schema = ApiAutoSchema()
    permission_classes = [DefaultApiPermission]

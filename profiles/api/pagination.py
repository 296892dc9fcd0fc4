"""Page-number pagination: ``?page=`` and ``?page_size=`` (at most 500).

Both are checked, not read leniently: a ``page_size`` that is empty, negative, zero or not a
number answers 400 naming it (DRF would silently use the default; more than 500 is still
capped at 500), as does a ``page`` that is not a number from 1; a page past the last one
answers 404 ``NOT_FOUND`` (declared).
"""

from rest_framework import pagination

from profiles.workspace.parameters import ParameterInvalid, whole_number
from profiles.workspace.validation import MAX_STORED_INTEGER

MAX_PAGE_SIZE = 500


class PageNumberPagination(pagination.PageNumberPagination):
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def get_page_size(self, request):
        if self.page_size_query_param not in request.query_params:
            return self.page_size
        text = request.query_params[self.page_size_query_param]
        number = whole_number(text)
        if number is None or not 1 <= number <= MAX_STORED_INTEGER:
            raise ParameterInvalid(self.page_size_query_param, "must be a number from 1")
        return min(number, MAX_PAGE_SIZE)

    def get_page_number(self, request, paginator):
        text = request.query_params.get(self.page_query_param, "1")
        if text in self.last_page_strings:
            return text
        number = whole_number(text)
        if number is None or not 1 <= number <= MAX_STORED_INTEGER:
            raise ParameterInvalid(self.page_query_param, "must be a page number from 1")
        return number

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"] = {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_STORED_INTEGER,
                }
                parameter["description"] = "A page number from 1 (past the last page: 404)."
            elif parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_STORED_INTEGER,
                }
                parameter["description"] = (
                    f"Results per page, from 1 (more than {MAX_PAGE_SIZE}: {MAX_PAGE_SIZE})."
                )
        return parameters

"""Filters of the API's lists: django-filter FilterSets, DRF's SearchFilter, and the one filter
neither can express — exact matches on item metadata fields (``?metadata.customer_id=C-7``)."""

import django_filters
from django.db.models import Q
from rest_framework.exceptions import ValidationError
from rest_framework.filters import BaseFilterBackend, SearchFilter

from profiles.models import Profile, Scenario
from profiles.workspace.parameters import ParameterInvalid, whole_number

METADATA_PREFIX = "metadata."

BOOLEANS = {"true": True, "1": True, "false": False, "0": False}


def query_boolean(parameters, name: str) -> bool:
    """Return the query parameter ``name`` as a boolean (absent or empty: False).

    ``true``/``false`` (as the schema's boolean is sent) or ``1``/``0``; anything else is a
    400 naming the parameter, not silently false.
    """
    text = parameters.get(name)
    if text in (None, ""):
        return False
    if text.lower() not in BOOLEANS:
        raise ParameterInvalid(name, "must be true or false")
    return BOOLEANS[text.lower()]


class ProfileFilterSet(django_filters.FilterSet):
    consumer = django_filters.CharFilter(
        field_name="consumer__key", help_text="Only this consumer's profiles."
    )
    objective = django_filters.CharFilter(help_text="Only profiles for this objective.")
    environment = django_filters.CharFilter(help_text="Only this environment.")

    class Meta:
        model = Profile
        fields = ["consumer", "objective", "environment"]


class ScenarioFilterSet(django_filters.FilterSet):
    profile = django_filters.CharFilter(
        field_name="profile__key", help_text="Only this profile's scenarios."
    )

    class Meta:
        model = Scenario
        fields = ["profile"]


class ItemSearchFilter(SearchFilter):
    """Search items with ``?q=`` (every word in path, title or body, case-insensitive)."""

    search_param = "q"
    search_description = "Case-insensitive search in path, title, body (every word must match)."


class MetadataFilter(BaseFilterBackend):
    """``?metadata.<field>=<value>``: items whose metadata field equals the value (a number
    given in digits matches the number too)."""

    def filter_queryset(self, request, queryset, view):
        for name, value in request.query_params.items():
            if not name.startswith(METADATA_PREFIX):
                continue
            field = name[len(METADATA_PREFIX) :]
            if not field or "__" in field or not field.replace("-", "_").isidentifier():
                raise ValidationError({name: ["must be metadata.<field> with a field name"]})
            condition = Q(**{f"metadata__{field}": value})
            number = whole_number(value.removeprefix("-"))
            if number is not None:
                condition |= Q(**{f"metadata__{field}": -number if value[0] == "-" else number})
            queryset = queryset.filter(condition)
        return queryset

    def get_schema_operation_parameters(self, view):
        return [
            {
                "name": "metadata.customer_id",
                "required": False,
                "in": "query",
                "description": "Exact metadata filter; any `metadata.<field>=<value>` works.",
                "schema": {"type": "string"},
            }
        ]

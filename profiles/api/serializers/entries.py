"""What the entry serializers share: key, choice and text fields, the entry base, the error
bodies the schema documents, and how a record names a user (``username``)."""

from django.http import QueryDict
from rest_framework import serializers

from profiles.api.exceptions import ERROR_CODE_CHOICES
from profiles.models import Item, Scenario
from profiles.workspace.mappers import canonical_string
from resolver.validation import KEY_RE

KEY_PATTERN = f"^{KEY_RE.pattern}$"
# The lengths the database holds (a longer value is refused with 400 naming the field).
SCENARIO_NAME_MAX_LENGTH = Scenario._meta.get_field("name").max_length
ITEM_PATH_MAX_LENGTH = Item._meta.get_field("path").max_length
# An item path has no whitespace at either end (and follows the text rule).
ITEM_PATH_PATTERN = r"^[^\s\x00]([^\x00]*[^\s\x00])?$"


def username(user) -> str | None:
    """Return how a record names a user (``None``: nobody, e.g. a system's write)."""
    return None if user is None else user.get_username()


def key_field(**kwargs) -> serializers.RegexField:
    return serializers.RegexField(KEY_PATTERN, max_length=64, **kwargs)


def strings_field(**kwargs) -> serializers.ListField:
    """Return a field of a list of strings (keys, names, paths)."""
    return serializers.ListField(child=serializers.CharField(), **kwargs)


def choice_field(choices, **kwargs) -> serializers.ChoiceField:
    return serializers.ChoiceField(list(choices), required=False, allow_null=True, **kwargs)


def text_field(max_length: int, **kwargs) -> serializers.CharField:
    return serializers.CharField(
        required=False, allow_blank=True, allow_null=True, max_length=max_length, **kwargs
    )


class IssueSerializer(serializers.Serializer):
    path = serializers.CharField(allow_blank=True)
    message = serializers.CharField()
    # Where an issue of a text body is written (an import's dry run, a bulk ingest batch).
    entry = serializers.CharField(
        required=False, help_text='The entry it concerns, e.g. "item tickets/T-17".'
    )
    line = serializers.IntegerField(
        required=False, min_value=1, help_text="Line of the value in the body (1-based)."
    )
    column = serializers.IntegerField(
        required=False, min_value=1, help_text="Column of the value (1-based)."
    )


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.ChoiceField(
        ERROR_CODE_CHOICES, help_text="A stable code (docs/api.md, Errors, says when)."
    )
    message = serializers.CharField(help_text="What is wrong, for a person.")
    path = serializers.CharField(
        allow_blank=True, help_text='The offending field, e.g. "input.message" or "ref".'
    )
    field = serializers.CharField(
        required=False, help_text="The path relative to the request body, when it differs."
    )
    retryable = serializers.BooleanField(
        help_text="Whether the same request sent again (after `Retry-After`, when given) may "
        "succeed: a throttle, a lock conflict, the database briefly unavailable. A stale "
        "`If-Match` is not: read again, then send the new `ETag`."
    )
    issues = IssueSerializer(
        many=True, required=False, help_text="Every problem of an invalid workspace write."
    )


class NoBodySerializer(serializers.Serializer):
    """An action that takes no fields: send ``{}`` or nothing."""


class ErrorSerializer(serializers.Serializer):
    error = ErrorDetailSerializer()


class EntrySerializer(serializers.Serializer):
    """One entry of the workspace document (or a scenario), read and written as JSON.

    ``to_internal_value`` checks what HTTP adds and returns the body as the entry's document
    for the write service; the engine validates the rest there. ``to_representation`` is the
    mapper's document form (absent fields stay absent), the same form an export gives.
    """

    #: the field the URL names (cannot change in an update)
    identity = "key"
    #: fields of the representation a client may send back but cannot write
    read_only_names: tuple[str, ...] = ()

    def to_internal_value(self, data):
        if isinstance(data, QueryDict):  # a form post from the browsable API
            data = data.dict()
        if not isinstance(data, dict):
            raise serializers.ValidationError(
                {"non_field_errors": ["the request body must be a JSON object"]}
            )
        body = {name: value for name, value in data.items() if name not in self.read_only_names}
        current = self.context.get("identity")
        given = body.get(self.identity)
        if current is not None and given is not None:
            if canonical_string(given) != current:
                raise serializers.ValidationError({self.identity: ["cannot be changed"]})
            body.pop(self.identity)
        return body

    def to_representation(self, row) -> dict:
        return self.represent(row)

    def represent(self, row) -> dict:
        raise NotImplementedError


def update_serializer(base: type[EntrySerializer], **optional) -> type[EntrySerializer]:
    """Return the update variant of an entry serializer: the identity is the URL's.

    The schema shows it read-only (not in the request body's component, which refuses
    unknown fields); a body that sends it anyway is accepted when it is the same.
    """
    field = base._declared_fields[base.identity]
    kwargs = {
        key: value
        for key, value in field._kwargs.items()
        if key not in ("required", "max_length", "min_length", "allow_null", "allow_blank")
    }
    kwargs.update(read_only=True, help_text="The URL's; cannot change.")
    fields = {base.identity: serializers.CharField(**kwargs), **optional}
    return type(base.__name__.replace("Serializer", "UpdateSerializer"), (base,), fields)

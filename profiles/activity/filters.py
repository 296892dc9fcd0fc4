"""The filters of the activity log, read one way by every door (the API's query, the studio's
GET form): ``activity_filters_parse`` checks each one and raises ``ParameterInvalid`` naming
the parameter; the selectors take what it returns.

``since`` is inclusive and ``until`` exclusive; either is an ISO 8601 date-time (without an
offset: UTC) or a date. A date ``until`` covers its whole day (``until=2026-12-01`` ends at
the start of 2 December), so a form's date range means what it says.
"""

import datetime as dt
from dataclasses import dataclass

from django.utils.dateparse import parse_date, parse_datetime

from profiles.models import Activity, ActivityOrigin
from profiles.workspace.parameters import ParameterInvalid, positive_integer

#: What an activity row can be about (``Activity.kind``).
ACTIVITY_KINDS = (
    "consumer",
    "layer",
    "item",
    "profile",
    "scenario",
    "environment",
    "member",
    "invitation",
)
#: The kinds about people (the team: accounts and invitations). Their rows name people's
#: addresses and roles, so only who administers the workspace (staff) reads them.
PEOPLE_KINDS = ("member", "invitation")
#: The door of a write (``Activity.origin``).
ACTIVITY_ORIGINS = tuple(ActivityOrigin.values)

KEY_MAX_LENGTH = Activity._meta.get_field("key").max_length
PATH_MAX_LENGTH = Activity._meta.get_field("path").max_length
ACTOR_MAX_LENGTH = Activity._meta.get_field("actor_name").max_length
# An ISO 8601 date-time is at most ~35 characters; anything much longer is not one.
MOMENT_MAX_LENGTH = 64

#: The query parameters of the log, as the API names them (the studio's form too).
FILTER_PARAMETERS = ("kind", "key", "path", "actor", "origin", "since", "until", "changeRequest")


@dataclass(frozen=True)
class ActivityFilters:
    """What a reader asks of the log; None: not filtered on."""

    kind: str | None = None
    key: str | None = None
    path: str | None = None
    actor: str | None = None
    origin: str | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    change_request: int | None = None

    def as_arguments(self) -> dict:
        """Return the filters as ``activity_list`` takes them."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def _text(parameters, name: str, max_length: int) -> str | None:
    value = (parameters.get(name) or "").strip()
    if not value:
        return None
    if len(value) > max_length:
        raise ParameterInvalid(name, f"must be at most {max_length} characters")
    return value


def _choice(parameters, name: str, choices: tuple[str, ...]) -> str | None:
    value = _text(parameters, name, max(len(choice) for choice in choices))
    if value is None:
        return None
    if value not in choices:
        raise ParameterInvalid(name, "must be one of " + ", ".join(choices))
    return value


def _utc(moment: dt.datetime) -> dt.datetime:
    """Return the moment in UTC; one beyond the calendar's ends (year 1 at +23:59) is its end."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=dt.UTC)
    try:
        return moment.astimezone(dt.UTC)
    except OverflowError:
        return (dt.datetime.min if moment.year == 1 else dt.datetime.max).replace(tzinfo=dt.UTC)


def _moment(parameters, name: str, *, end_of_day: bool) -> dt.datetime | None:
    text = _text(parameters, name, MOMENT_MAX_LENGTH)
    if text is None:
        return None
    message = "must be an ISO 8601 date-time (2026-12-01T09:30:00Z) or a date (2026-12-01)"
    try:
        # A date alone first: parse_datetime reads "2026-12-01" as its midnight too.
        day = parse_date(text) if len(text) == len("2026-12-01") else None
        moment = None if day is not None else parse_datetime(text)
    except ValueError:  # well formed, not a real date (2026-02-30)
        raise ParameterInvalid(name, message) from None
    if moment is not None:
        return _utc(moment)
    if day is None:
        raise ParameterInvalid(name, message)
    start = dt.datetime.combine(day, dt.time.min, tzinfo=dt.UTC)
    if end_of_day:
        return (
            start + dt.timedelta(days=1)
            if day < dt.date.max
            else start.replace(hour=23, minute=59, second=59, microsecond=999_999)
        )
    return start


def activity_filters_parse(parameters) -> ActivityFilters:
    """Return the filters a query asks for (``parameters``: a QueryDict or a dict of text).

    Raise ``ParameterInvalid`` naming the first parameter that is not what it must be: an
    unknown kind or origin, a text too long, a moment that is not one, a change request that
    is not a number, ``since`` after ``until``.
    """
    filters = ActivityFilters(
        kind=_choice(parameters, "kind", ACTIVITY_KINDS),
        key=_text(parameters, "key", KEY_MAX_LENGTH),
        path=_text(parameters, "path", PATH_MAX_LENGTH),
        actor=_text(parameters, "actor", ACTOR_MAX_LENGTH),
        origin=_choice(parameters, "origin", ACTIVITY_ORIGINS),
        since=_moment(parameters, "since", end_of_day=False),
        until=_moment(parameters, "until", end_of_day=True),
        change_request=positive_integer(parameters, "changeRequest", meaning="a change request id"),
    )
    if filters.since and filters.until and filters.since >= filters.until:
        raise ParameterInvalid("until", "must be after since")
    return filters

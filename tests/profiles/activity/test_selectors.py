"""The activity log's reads: filters on each index, newest first, keyset pages, item rows left
out for who may not read material, and the entities the rows name that still exist."""

import datetime as dt

import pytest
from django.contrib.auth.models import User

from profiles.activity.filters import activity_filters_parse
from profiles.activity.records import activity_record
from profiles.activity.selectors import activity_entities_existing, activity_list, activity_page
from profiles.models import Activity, ActivityOrigin, Consumer
from profiles.workspace.origin import WriteOrigin
from profiles.workspace.parameters import ParameterInvalid

pytestmark = pytest.mark.django_db

API = WriteOrigin(door=ActivityOrigin.API)
STUDIO = WriteOrigin(door=ActivityOrigin.STUDIO)


def record(kind, key, user, *, origin=API, path=None, before=None, after=None):
    activity_record(
        kind=kind,
        key=key,
        path=path,
        before=before,
        after=after if after is not None else {"key": key, "name": f"{key} now"},
        user=user,
        origin=origin,
    )
    return Activity.objects.latest("id")


@pytest.fixture
def dana(db):
    return User.objects.create_user("dana")


@pytest.fixture
def lee(db):
    return User.objects.create_user("lee")


def test_activity_list__entity_filter__only_its_rows_newest_first(dana):
    first = record("layer", "tickets", dana)
    record("layer", "kb", dana)
    second = record("layer", "tickets", dana, before={"key": "tickets"})

    rows = list(activity_list(kind="layer", key="tickets"))

    assert [row.pk for row in rows] == [second.pk, first.pk]
    assert rows[0].op == "update" and rows[1].op == "create"


def test_activity_list__actor_and_origin__each_narrows(dana, lee):
    record("consumer", "assistant", dana, origin=STUDIO)
    mine = record("consumer", "reviewer", dana)
    record("consumer", "other", lee)

    assert [row.pk for row in activity_list(actor="dana", origin="api")] == [mine.pk]
    assert activity_list(actor="nobody").count() == 0


def test_activity_list__actor_deleted__found_by_the_name_the_row_kept(dana):
    row = record("profile", "support-answer", dana)
    dana.delete()

    assert [found.pk for found in activity_list(actor="dana")] == [row.pk]


def test_activity_list__time_range__since_inclusive_until_exclusive(dana):
    rows = [record("layer", f"l{n}", dana) for n in range(3)]
    moments = [dt.datetime(2026, 12, 1, 9, n, tzinfo=dt.UTC) for n in range(3)]
    for row, moment in zip(rows, moments, strict=True):
        Activity.objects.filter(pk=row.pk).update(at=moment)

    found = activity_list(since=moments[1], until=moments[2])

    assert [row.key for row in found] == ["l1"]


def test_activity_list__items_excluded__no_item_row(dana):
    record("item", "tickets", dana, path="T-1.md", after={"path": "T-1.md", "body": "card"})
    layer = record("layer", "tickets", dana)

    assert [row.pk for row in activity_list(include_items=False)] == [layer.pk]


def test_activity_page__older_then_newer__every_row_once_in_order(dana):
    rows = [record("layer", f"l{n}", dana) for n in range(5)]
    newest_first = [row.pk for row in reversed(rows)]

    first = activity_page(activity_list(), size=2)
    second = activity_page(activity_list(), size=2, before=first.older)
    third = activity_page(activity_list(), size=2, before=second.older)
    back = activity_page(activity_list(), size=2, after=third.newer)

    assert [row.pk for page in (first, second, third) for row in page.rows] == newest_first
    assert first.newer is None and third.older is None
    assert [row.pk for row in back.rows] == [row.pk for row in second.rows]


def test_activity_entities_existing__deleted_consumer__not_linked(dana, small_rows):
    gone = record("consumer", "gone", dana)
    kept = record("consumer", "assistant", dana)

    existing = activity_entities_existing([gone, kept])

    assert existing == {("consumer", "assistant", None): "assistant"}


@pytest.fixture
def small_rows(db):
    Consumer.objects.create(key="assistant", name="Assistant")


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ({"kind": "widget"}, "kind"),
        ({"origin": "email"}, "origin"),
        ({"since": "yesterday"}, "since"),
        ({"until": "2026-02-30"}, "until"),
        ({"changeRequest": "²"}, "changeRequest"),
        ({"key": "k" * 256}, "key"),
        ({"since": "2026-12-02", "until": "2026-12-01"}, "until"),
    ],
)
def test_activity_filters_parse__bad_value__names_the_parameter(query, name):
    with pytest.raises(ParameterInvalid) as raised:
        activity_filters_parse(query)

    assert raised.value.name == name


def test_activity_filters_parse__date_until__covers_that_whole_day():
    filters = activity_filters_parse({"since": "2026-12-01", "until": "2026-12-01"})

    assert filters.since == dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
    assert filters.until == dt.datetime(2026, 12, 2, tzinfo=dt.UTC)


def test_activity_filters_parse__moment_beyond_the_calendar__clamped_not_an_error():
    filters = activity_filters_parse({"since": "0001-01-01T00:00:00+23:59"})

    assert filters.since.year == 1

"""The studio's Activity page: the log as a table (who, door, what, the field changes), its
filters as a GET form, keyset pages, an empty state; item rows only for who may read
material; each entity's page links to its activity."""

# ruff: noqa: F811 (the studio's editor fixtures, imported: the tests' arguments)

from urllib.parse import quote

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from profiles.activity.records import activity_record
from profiles.models import Activity, ActivityOrigin, ChangeRequest, Item
from profiles.studio.views.activity import ACTIVITY_PER_PAGE
from profiles.workspace.origin import WriteOrigin
from tests.profiles.doors.test_rendered_pages import assert_no_template_syntax
from tests.profiles.studio.fixtures import editor, editor_client  # noqa: F401 (the studio's)

pytestmark = pytest.mark.django_db

PAGE = "/activity/"
CREATED = object()  # record()'s default: an entry {"key": key} created


def record(
    kind,
    key,
    user,
    *,
    door=ActivityOrigin.STUDIO,
    path=None,
    before=None,
    after=CREATED,
    change_request=None,
):
    activity_record(
        kind=kind,
        key=key,
        path=path,
        before=before,
        after={"key": key} if after is CREATED else after,
        user=user,
        origin=WriteOrigin(door=door, change_request=change_request),
    )


@pytest.fixture
def log(workspace, editor):
    """The layer kb's name changed, a kb item created, a consumer deleted."""
    Activity.objects.all().delete()
    record(
        "layer",
        "kb",
        editor,
        before={"key": "kb", "name": "KB"},
        after={"key": "kb", "name": "Knowledge"},
    )
    item = Item.objects.filter(layer__key="kb").first()
    record(
        "item",
        "kb",
        editor,
        path=item.path,
        after={"path": item.path, "body": "Refunds take 5 days"},
    )
    record("consumer", "gone", editor, door=ActivityOrigin.API, before={"key": "gone"}, after=None)
    return item


def test_activity_page__editor__rows_with_door_links_and_field_changes(log, editor_client):
    response = editor_client.get(PAGE)

    assert response.status_code == 200
    assert_no_template_syntax(response, PAGE)
    page = response.content.decode()
    assert page.count("data-activity=") == 3
    assert f'href="{reverse("layer-edit", args=["kb"])}"' in page
    assert f'href="{reverse("item-edit", args=["kb", log.pk])}"' in page
    assert "<code>gone</code>" in page and 'href="/consumers/gone/"' not in page  # deleted
    assert (
        "<code>name</code>: " in page
        and "<code>KB</code>" in page
        and "<code>Knowledge</code>" in page
    )
    assert "Refunds take 5 days" in page
    assert ">API<" in page and ">deleted<" in page


def test_activity_page__reader__no_item_row_and_no_item_kind(log, client, viewer):
    client.force_login(viewer)

    response = client.get(PAGE)

    page = response.content.decode()
    assert response.status_code == 200
    assert page.count("data-activity=") == 2
    assert "Refunds take 5 days" not in page
    assert '<option value="item"' not in page
    assert client.get(PAGE, {"kind": "item"}).status_code == 403


def test_activity_page__filters__only_matching_rows_and_the_form_keeps_them(log, editor_client):
    response = editor_client.get(PAGE, {"kind": "layer", "key": "kb", "origin": "studio"})

    page = response.content.decode()
    assert page.count("data-activity=") == 1
    assert '<option value="layer" selected>' in page
    assert 'value="kb"' in page
    assert '<label for="activity-since">' in page and 'type="date"' in page
    assert "Clear filters" in page


def test_activity_page__bad_date__400_saying_which_filter(log, editor_client):
    response = editor_client.get(PAGE, {"since": "tomorrow"})

    assert response.status_code == 400
    assert 'role="alert"' in response.content.decode()
    assert "since: must be an ISO 8601" in response.content.decode()


def test_activity_page__nothing_written__empty_state(workspace, editor_client):
    Activity.objects.all().delete()

    page = editor_client.get(PAGE).content.decode()

    assert "Nothing has been written yet" in page
    assert (
        "No activity matches" not in editor_client.get(PAGE, {"kind": "layer"}).content.decode()
        or True
    )
    assert (
        "No activity matches these filters"
        in editor_client.get(PAGE, {"kind": "layer"}).content.decode()
    )


def test_activity_page__more_than_a_page__older_then_newer(workspace, editor, editor_client):
    Activity.objects.all().delete()
    for n in range(ACTIVITY_PER_PAGE + 3):
        record("layer", f"layer-{n}", editor)

    first = editor_client.get(PAGE, {"kind": "layer"}).content.decode()
    older = first.split('rel="next"')[0].rsplit('href="', 1)[1].split('"')[0].replace("&amp;", "&")
    second = editor_client.get(PAGE + older).content.decode()

    assert first.count("data-activity=") == ACTIVITY_PER_PAGE
    assert second.count("data-activity=") == 3
    assert "kind=layer" in older
    assert 'rel="prev"' in second and 'rel="next"' not in second


def test_activity_page__change_request_and_long_value__linked_and_folded(
    workspace, editor, editor_client
):
    Activity.objects.all().delete()
    change_request = ChangeRequest.objects.create(
        profile_key="support-answer", title="Longer", author=editor, changes={}
    )
    record(
        "consumer",
        "support-assistant",
        editor,
        door=ActivityOrigin.CHANGE_REQUEST,
        change_request=change_request,
        before={"key": "support-assistant", "description": "short"},
        after={"key": "support-assistant", "description": "x" * 5_000},
    )

    page = editor_client.get(PAGE).content.decode()

    link = reverse("change-request", args=[change_request.pk])
    assert f'href="{link}">change request #{change_request.pk}</a>' in page
    assert "<details><summary><code>description</code>" in page
    assert "more characters)" in page  # the recorder cut it


@pytest.mark.parametrize(
    ("url", "link"),
    [
        ("/layers/kb/", "/activity/?kind=layer&amp;key=kb"),
        ("/consumers/support-assistant/", "/activity/?kind=consumer&amp;key=support-assistant"),
        ("/profiles/support-answer/", "/activity/?kind=profile&amp;key=support-answer"),
        ("/profiles/support-answer/history/", "/activity/?kind=profile&amp;key=support-answer"),
    ],
)
def test_entity_pages__activity_link__filters_on_the_entity(workspace, editor_client, url, link):
    assert link in editor_client.get(url).content.decode()


def test_item_page__activity_link__filters_on_the_item(workspace, editor_client):
    item = Item.objects.filter(layer__key="kb").first()

    page = editor_client.get(f"/layers/kb/items/{item.pk}/").content.decode()

    assert f"/activity/?kind=item&amp;key=kb&amp;path={quote(item.path, safe='')}" in page


def test_navigation__every_page__links_the_activity_page(workspace, editor_client):
    assert f'href="{PAGE}">Activity</a>' in editor_client.get("/profiles/").content.decode()


def test_activity_page__queries__the_same_for_1_and_50_rows(
    workspace, editor, editor_client, django_assert_max_num_queries
):
    Activity.objects.all().delete()
    record("layer", "kb", editor)
    with CaptureQueriesContext(connection) as one:
        editor_client.get(PAGE)
    item = Item.objects.filter(layer__key="kb").first()
    for n in range(49):
        kind = ("layer", "consumer", "profile", "item")[n % 4]
        record(kind, "kb", editor, path=item.path if kind == "item" else None)

    with django_assert_max_num_queries(len(one) + 3):  # one query per kind named, at most 4
        response = editor_client.get(PAGE)

    assert response.content.decode().count("data-activity=") == 50

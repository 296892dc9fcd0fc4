"""The lean door (issue 35): what it costs (queries, shared-cache round trips) and the keys it
holds in memory — every write that could make a held key wrong takes effect at once in the
process that made it, and in the others within ``API_KEY_CACHE_SECONDS``."""

import time

import pytest
from django.contrib.auth.models import Group, User, update_last_login
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from profiles.import_export.imports import workspace_import
from profiles.models import ApiKey, DecisionLog
from profiles.team.members import member_active_set, member_role_set
from profiles.workspace import key_cache
from profiles.workspace.keys import api_key_create, api_key_revoke, token_replace, token_revoke
from profiles.workspace.origin import STUDIO
from tests.profiles.conftest import api_key_for, small_workspace
from tests.profiles.resolution.lean_contract import NOW

pytestmark = pytest.mark.django_db

SMALL = {"profile": "profile-0", "input": {"message": "refund cards"}, "now": NOW}


def post(header: str, path: str = "resolve", body: dict = SMALL, **extra):
    return Client().post(
        "/api/v1/" + path, body, content_type="application/json", HTTP_AUTHORIZATION=header, **extra
    )


@pytest.fixture
def small_workspace_loaded():
    workspace_import(document=small_workspace())


@pytest.fixture
def staff(db) -> User:
    return User.objects.create_user("boss", is_staff=True)


def test_resolve__key_held__one_query_the_workspace_version_and_none_for_the_key(
    small_workspace_loaded, settings
):
    settings.DECISION_LOG_ENABLED = False  # the suite writes it synchronously; off the path
    user = User.objects.create_user("reader")
    header = f"Bearer {api_key_create(owner=user, name='app', scopes=['resolve']).key}"
    assert post(header).status_code == 200  # the key read, its use noted, the workspace compiled

    with CaptureQueriesContext(connection) as queries:
        response = post(header)

    assert response.status_code == 200
    # The small workspace has no served layer: the workspace version is the only query.
    sql = [q["sql"] for q in queries]
    assert len(sql) == 1, sql
    assert "profiles_workspaceversion" in sql[0]


def test_resolve__throttle_and_key__one_redis_round_trip_per_request(
    small_workspace_loaded, redis_cache, monkeypatch, settings
):
    from redis.connection import Connection

    # Within the key stamp's interval (its comparison, every API_KEY_CACHE_SECONDS, is a GET of
    # its own; the writes that move it are tested below): a minute, so a slow machine stays
    # within it.
    settings.API_KEY_CACHE_SECONDS = 60
    user = User.objects.create_user("reader")
    header = f"Token {api_key_for(user)}"
    assert post(header).status_code == 200  # the key held, the stamp read
    sent = []
    send = Connection.send_packed_command
    monkeypatch.setattr(
        Connection,
        "send_packed_command",
        lambda self, command, *a, **k: sent.append(command) or send(self, command, *a, **k),
    )

    for _ in range(3):
        assert post(header).status_code == 200

    assert len(sent) == 3  # the throttle's pipeline (INCR, EXPIRE, GET), nothing else


def answers(header: str, path: str = "resolve", body: dict = SMALL) -> int:
    return post(header, path, body).status_code


# Each write that must make a held key answer anew, and the status the key answers after it.
def _revoke(user, made):
    api_key_revoke(key=made.record)
    return 401


def _delete(user, made):
    ApiKey.objects.get(pk=made.record.pk).delete()  # the admin's delete
    return 401


def _deactivate(user, made):
    member_active_set(user, False, actor=None, origin=STUDIO)
    return 401


def _delete_user(user, made):
    user.delete()
    return 401


WRITES = {
    "revoke": _revoke,
    "delete": _delete,
    "deactivate": _deactivate,
    "delete user": _delete_user,
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES)
def test_held_key__write_in_this_process__refused_at_once(small_workspace_loaded, write):
    user = User.objects.create_user("reader")
    made = api_key_create(owner=user, name="app", scopes=["resolve"])
    header = f"Bearer {made.key}"
    assert answers(header) == 200
    assert key_cache._held.records  # held: the next request reads no key

    expected = write(user, made)

    assert answers(header) == expected


def test_user_token__replaced_or_revoked__the_held_one_refused_at_once(small_workspace_loaded):
    user = User.objects.create_user("reader")
    _, first = token_replace(user=user)
    assert answers(f"Token {first}") == 200

    _, second = token_replace(user=user)
    assert answers(f"Token {first}") == 401
    assert answers(f"Token {second}") == 200
    token_revoke(user=user)
    assert answers(f"Token {second}") == 401


def editor_writes(header: str) -> int:
    return (
        Client()
        .patch(
            "/api/v1/layers/layer-000",
            {"name": "Renamed"},
            content_type="application/json",
            HTTP_AUTHORIZATION=header,
            HTTP_IF_MATCH="*",
        )
        .status_code
    )


@pytest.mark.parametrize(
    "demotion", ["member service", "groups cleared", "group renamed", "group deleted"]
)
def test_held_key__owner_demoted__the_role_is_asked_again(small_workspace_loaded, staff, demotion):
    # Given an editor's token held by this process (the API's classes hold keys as well)
    editor = User.objects.create_user("editor")
    editors, _ = Group.objects.get_or_create(name="editors")
    editor.groups.add(editors)
    header = f"Token {api_key_for(editor)}"
    assert editor_writes(header) == 200

    # when the editor stops being one
    if demotion == "member service":
        member_role_set(editor, "reader", actor=staff, origin=STUDIO)
    elif demotion == "groups cleared":
        editor.groups.clear()
    elif demotion == "group renamed":
        editors.name = "former editors"
        editors.save()
    else:
        editors.delete()

    # then the same token may no longer write
    assert editor_writes(header) == 403


def test_held_key__promoted_to_staff__the_role_is_asked_again(small_workspace_loaded, staff):
    reader = User.objects.create_user("reader")
    header = f"Token {api_key_for(reader)}"
    assert editor_writes(header) == 403

    member_role_set(reader, "staff", actor=staff, origin=STUDIO)

    assert editor_writes(header) == 200


def test_held_key__changed_by_another_process__refused_within_the_bound(
    small_workspace_loaded, settings, monkeypatch
):
    # Given a key held by this process, and a clock this test moves
    settings.API_KEY_CACHE_SECONDS = 5
    clock = [time.monotonic() + 1e6]
    monkeypatch.setattr(key_cache.time, "monotonic", lambda: clock[0])
    user = User.objects.create_user("reader")
    made = api_key_create(owner=user, name="app", scopes=["resolve"])
    header = f"Bearer {made.key}"
    assert answers(header) == 200

    # when another process revokes it (its row, and the shared stamp at its commit)
    ApiKey.objects.filter(pk=made.record.pk).update(revoked_at="2026-01-01T00:00:00Z")
    cache.set(key_cache.STAMP_KEY, "another process's", timeout=None)

    # then this process serves it until it compares the stamp, at most 5 s later,
    clock[0] += 4.9
    assert answers(header) == 200
    clock[0] += 0.2
    assert answers(header) == 401


def test_keys_changed__at_the_commit__the_shared_stamp_moves(
    small_workspace_loaded, django_capture_on_commit_callbacks
):
    user = User.objects.create_user("reader")
    made = api_key_create(owner=user, name="app", scopes=["resolve"])
    assert answers(f"Bearer {made.key}") == 200
    before = cache.get(key_cache.STAMP_KEY)

    with django_capture_on_commit_callbacks(execute=True):
        api_key_revoke(key=made.record)

    assert cache.get(key_cache.STAMP_KEY) not in (None, before)


def test_shared_stamp_lost__every_held_key_forgotten(small_workspace_loaded, settings):
    settings.API_KEY_CACHE_SECONDS = 0
    user = User.objects.create_user("reader")
    made = api_key_create(owner=user, name="app", scopes=["resolve"])
    assert answers(f"Bearer {made.key}") == 200
    ApiKey.objects.filter(pk=made.record.pk).update(revoked_at="2026-01-01T00:00:00Z")

    cache.clear()  # the cache restarted: no stamp to compare

    assert answers(f"Bearer {made.key}") == 401


def test_sign_in__last_login_written__keys_stay_held(small_workspace_loaded):
    user = User.objects.create_user("reader")
    header = f"Token {api_key_for(user)}"
    assert answers(header) == 200
    generation = key_cache._held.generation

    update_last_login(None, user)  # what a sign-in writes

    assert key_cache._held.generation == generation


def test_resolve__through_the_lean_door__the_decision_log_row_and_last_used_as_before(
    small_workspace_loaded,
):
    user = User.objects.create_user("reader")
    made = api_key_create(owner=user, name="app", scopes=["resolve"])

    with CaptureQueriesContext(connection) as first:
        post(f"Bearer {made.key}")
    with CaptureQueriesContext(connection) as second:
        post(f"Bearer {made.key}")

    rows = list(DecisionLog.objects.order_by("pk"))
    assert [(row.source, row.auth, row.user_id, row.profile_key) for row in rows] == [
        (DecisionLog.Source.API, "token", user.pk, "profile-0")
    ] * 2
    assert rows[0].profile_version == 1
    # "last used" written by the first request only (at most once a minute)
    updates = [
        [q["sql"] for q in c if q["sql"].startswith('UPDATE "profiles_apikey"')]
        for c in (first, second)
    ]
    assert [len(sql) for sql in updates] == [1, 0]
    assert ApiKey.objects.get(pk=made.record.pk).last_used_at is not None

"""A differential test against a running server (issue 36, item 5): a real gunicorn on
PostgreSQL, random workspaces (stored through the import) and random requests, each
answered through the client remotely, locally from the server's snapshot (or remotely,
saying so, when the request reads customer material) and from the cache, all equal to the
engine resolving the stored document in this process, byte for byte."""

import os

import pytest
from ctxstudio_client import ApiError, Client, Origin
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from profiles.import_export.imports import workspace_import
from profiles.models import Consumer, Layer, Profile
from profiles.workspace.mappers import map_rows_to_document
from profiles.workspace.selectors import workspace_rows_get
from resolver import ResolverError, compile_workspace
from tests.ctxstudio.test_horizontal_scaling import free_port, gunicorn
from tests.profiles.conftest import api_key_for
from tests.resolver.strategies import requests, workspaces

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="needs PostgreSQL (the suite's second run)",
    ),
]

EXAMPLES = int(os.environ.get("CLIENT_DIFFERENTIAL_EXAMPLES", "25"))
REQUESTS_PER_WORKSPACE = 3


@pytest.fixture
def live_client(admin_user, tmp_path):
    with gunicorn(free_port()) as port:
        client = Client(
            f"http://127.0.0.1:{port}",
            key=api_key_for(admin_user),
            timeout=20,
            snapshot_dir=tmp_path / "snapshots",
            snapshot_interval=None,
        )
        yield client
        client.close()


def engine_answer(compiled, request):
    try:
        return compiled.resolve_json(request).data
    except ResolverError as exc:
        return (exc.code, exc.path)


def client_answers(client, request) -> list:
    answers = []
    for options in ({}, {"local": True}, {"max_age": 3600}):
        try:
            answers.append(client.resolve(request=request, **options))
        except ApiError as error:
            answers.append((error.code, error.path))
    return answers


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_client_through_gunicorn__random_workspaces__the_engines_bytes(data, live_client):
    document, _ = data.draw(workspaces())
    for model in (Profile, Layer, Consumer):
        model.objects.all().delete()
    workspace_import(document=document)
    compiled = compile_workspace(map_rows_to_document(workspace_rows_get()))
    live_client.cache.clear()
    live_client.snapshot.refresh()

    for _ in range(REQUESTS_PER_WORKSPACE):
        request, _ = data.draw(requests(document))
        expected = engine_answer(compiled, request)
        remote, local, cached = client_answers(live_client, request)
        if isinstance(expected, tuple):  # an error: its code and path, each way
            assert remote == local == cached == expected
            continue
        assert remote.data == local.data == cached.data == expected
        # A request drawn twice is sent again with its ETag: not modified.
        assert remote.origin in (Origin.REMOTE, Origin.NOT_MODIFIED)
        assert cached.origin is Origin.CACHED
        assert local.origin is Origin.LOCAL or "served layers" in local.note

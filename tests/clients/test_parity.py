"""Parity (issue 36, item 5): every conformance case with a valid workspace, stored in the
database and served by the Django app, answered through the client three ways — remote,
local from the app's snapshot, and from the cache — gives the bytes of
``python -m resolver resolve`` (errors: its code and path)."""

import json

import httpx
import pytest
from ctxstudio_client import ApiError, Client, LocalEvaluationRefused, Origin
from django.contrib.auth.models import User
from django.core.wsgi import get_wsgi_application
from django.db import transaction

from profiles.import_export.imports import workspace_import
from tests.profiles.conftest import (
    WORKSPACE_CASES,
    api_key_for,
    connections_kept_open,
    small_workspace,
)
from tests.profiles.resolution.test_resolve_api import cli_output

pytestmark = pytest.mark.django_db

application = get_wsgi_application()


@pytest.fixture
def app_client(db, tmp_path):
    """A client of the Django app in this process (its snapshot refreshed by the test)."""
    reader = User.objects.create_user("reader", password="reader-password-1")
    with connections_kept_open():
        client = Client(
            "http://testserver",
            key=api_key_for(reader),
            transport=httpx.WSGITransport(app=application),
            snapshot_dir=tmp_path / "snapshots",
            snapshot_interval=None,
        )
        yield client
        client.close()


@pytest.mark.parametrize(("stem", "case"), WORKSPACE_CASES, ids=[s for s, _ in WORKSPACE_CASES])
def test_conformance_case__remote_local_cached__the_clis_bytes(
    stem, case, app_client, tmp_path, capsys
):
    workspace_import(document=case["workspace"])
    expected = cli_output(case["workspace"], case["request"], tmp_path, capsys)
    app_client.snapshot.refresh()
    expected_error = json.loads(expected).get("error")

    answers = []
    for options in ({}, {"local": True}, {"max_age": 3600}):
        try:
            answers.append(app_client.resolve(request=case["request"], **options))
        except ApiError as error:
            assert expected_error is not None, f"{options}: {error}"
            assert (error.code, error.path) == (expected_error["code"], expected_error["path"])
    if expected_error is not None:
        assert answers == []
        return
    remote, local, cached = answers
    assert remote.data == local.data == cached.data == expected
    assert (remote.origin, cached.origin) == (Origin.REMOTE, Origin.CACHED)
    if local.origin is not Origin.LOCAL:
        # only a request that reads customer material goes to the server, and says so
        assert "served layers" in local.note, local.note


def test_conformance_cases__some_answered_locally(app_client):
    # The local way is exercised, not the remote one renamed: the cases whose profile reads
    # no layer with an itemFilter answer from the snapshot (self-contained: under xdist the
    # cases above may run in another process).
    local = []
    for stem, case in WORKSPACE_CASES:
        with transaction.atomic():  # each case on its own workspace, as above
            workspace_import(document=case["workspace"])
            app_client.snapshot.refresh()
            try:
                answer = app_client.resolve(request=case["request"], local=True)
            except ApiError:
                answer = None
            transaction.set_rollback(True)
        if answer is not None and answer.origin is Origin.LOCAL:
            local.append(stem)
    assert len(local) >= 4, local


def test_served_layer__remote_unless_degraded__degraded_names_the_layer(app_client):
    workspace_import(document=small_workspace(layers=3, items=4, profiles=1))
    app_client.snapshot.refresh()
    request = {"profile": "profile-0", "input": {"message": "refund", "customer_id": "C-1"}}
    request["now"] = "2026-11-29T12:00:00Z"

    exact = app_client.resolve(request=request, local=True)
    degraded = app_client.resolve(request=request, local="degraded")
    with pytest.raises(LocalEvaluationRefused) as refused:
        app_client.resolve(request=request, local="only")
    no_filter_input = app_client.resolve(
        request={**request, "input": {"message": "refund"}}, local="only"
    )
    remote_without = app_client.resolve(request={**request, "input": {"message": "refund"}})

    assert (exact.origin, degraded.origin) == (Origin.REMOTE, Origin.LOCAL)
    assert "layer-001" in exact.note and "layer-001" in refused.value.reason
    assert degraded.degraded == ("layer-001",)
    served = next(layer for layer in degraded.layers if layer.layer == "layer-001")
    assert served.available == "UNAVAILABLE"
    assert no_filter_input.data == remote_without.data  # reads no customer material


def test_expand__an_offered_reference__its_item_then_not_modified_else_typed_404(app_client):
    case = next(case for stem, case in WORKSPACE_CASES if stem.startswith("01-"))
    workspace_import(document=case["workspace"])
    resolution = app_client.resolve(request=case["request"])
    ref = resolution.references[0].ref

    item = app_client.expand(ref, request=case["request"])
    again = app_client.expand(ref, request=case["request"])
    with pytest.raises(ApiError) as raised:
        app_client.expand(ref + "-not-offered", request=case["request"])

    assert (item.origin, item.ref) == (Origin.REMOTE, ref)
    assert (again.origin, again.data) == (Origin.NOT_MODIFIED, item.data)
    assert (raised.value.status, raised.value.code, raised.value.path) == (
        404,
        "REF_NOT_AVAILABLE",
        "ref",
    )

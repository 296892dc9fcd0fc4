"""A server process warms its workspace before it serves (issue 20, item 4): the warm-up
itself on the suite's database, and a real gunicorn worker that is warm before it answers."""

import logging
import time

import pytest

from ctxstudio.warmup import worker_warm
from profiles.import_export.imports import workspace_import
from profiles.models import Layer, WorkspaceVersion
from profiles.workspace import cache
from tests.ctxstudio.test_horizontal_scaling import call, free_port, gunicorn, needs_postgresql
from tests.profiles.conftest import NOW, api_key_for, small_workspace

pytestmark = pytest.mark.django_db(transaction=True)


def test_worker_warm__stored_workspace__compiled_prepared_heartbeat_reported(caplog):
    workspace_import(document=small_workspace())
    cache.workspace_cache_clear()
    beats = []

    with caplog.at_level(logging.INFO, logger="ctxstudio.warmup"):
        assert worker_warm(heartbeat=lambda: beats.append(time.monotonic())) is True

    assert beats  # at once, before the compile, then every second while it lasts
    assert cache.cached_token() == cache.held_version() != ""
    indexes = {ix.layer.key: ix for ix in cache.workspace_get().compiled.indexes}
    # small_workspace's profiles retrieve layer-002: its postings are built.
    assert indexes["layer-002"]._postings is not None
    assert "warm: workspace" in caplog.text


def test_worker_warm__stored_rows_not_a_workspace__logged_and_left_to_first_use(caplog):
    workspace_import(document=small_workspace())
    # A row written around the services (as a bad migration or a hand edit would).
    Layer.objects.filter(key="layer-001").update(item_filter={"customer_id": ""})
    WorkspaceVersion.objects.update(token="broken")
    cache.workspace_cache_clear()

    with caplog.at_level(logging.INFO, logger="ctxstudio.warmup"):
        assert worker_warm(heartbeat=lambda: None) is False

    assert "warming the workspace failed" in caplog.text
    assert cache.cached_token() == ""


@needs_postgresql
def test_gunicorn_worker__warm_before_it_answers__first_request_served(tmp_path, admin_user):
    workspace_import(document=small_workspace())
    token = api_key_for(admin_user)
    log = tmp_path / "gunicorn.log"

    with log.open("wb") as stderr, gunicorn(free_port(), stderr=stderr) as port:
        # The worker answered /healthz: it had warmed before it accepted a connection.
        warm_lines = [line for line in log.read_text().splitlines() if " warm: " in line]
        assert len(warm_lines) == 1, log.read_text()
        # layer-001 is filtered: served (its 4 items fetched per request), not held
        assert "3 layers, 8 items held, 4 served" in warm_lines[0]

        request = {"profile": "profile-0", "input": {"message": "refund"}, "now": NOW}
        status, _, body = call(port, "POST", "/api/v1/resolve", token, request)
        assert status == 200, body

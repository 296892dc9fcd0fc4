"""Readiness (issue 33, item 12): ``/readyz`` answers 503 naming what keeps the product from
working through this process — a workspace that does not compile here, a texts folder that
is refused, a task queue no worker has served lately, a due task that has waited too long —
while ``/healthz`` stays liveness (the process answers and reaches its database)."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from profiles.import_export.imports import workspace_import
from profiles.models import Layer, TaskWorker, WorkspaceVersion
from profiles.notifications.delivery import webhook_delivery_task
from profiles.workspace import cache, held_texts
from profiles.workspace.derived import item_terms_recompute
from profiles.workspace.task_workers import Heartbeat, task_worker_beat
from tests.profiles.conftest import small_workspace

pytestmark = pytest.mark.django_db


@pytest.fixture
def database_tasks(settings):
    settings.TASKS = {
        "default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": settings.TASK_QUEUES}
    }


def ready(client) -> tuple[int, dict]:
    response = client.get("/readyz")
    return response.status_code, response.json()


def workers_seen(*queues: str, ago: timedelta = timedelta(0)) -> None:
    for n, queue in enumerate(queues):
        task_worker_beat(worker_id=f"w{n}", queues=queue, started_at=timezone.now())
    TaskWorker.objects.update(seen_at=timezone.now() - ago)


def test_readyz__workspace_compiled_tasks_run_inline__ok(client):
    workspace_import(document=small_workspace())
    cache.workspace_cache_clear()

    status, body = ready(client)

    assert (status, body["status"]) == (200, "ok"), body
    assert body["checks"] == {"database": "ok", "workspace": "ok", "texts": "ok"}
    assert cache.cached_token() == cache.held_version()  # compiled by the check


def test_readyz__workspace_does_not_compile__503_naming_it_healthz_still_ok(client):
    workspace_import(document=small_workspace())
    # A row written around the services (as a bad migration or a hand edit would).
    Layer.objects.filter(key="layer-001").update(item_filter={"customer_id": ""})
    WorkspaceVersion.objects.update(token="broken")
    cache.workspace_cache_clear()

    status, body = ready(client)

    assert status == 503
    assert body["checks"]["workspace"].startswith("does not compile in this worker")
    assert body["problems"][0].startswith("workspace: does not compile")
    assert client.get("/healthz").status_code == 200  # liveness: the process answers
    # Polled again: answered from memory, not compiled again while the version is the same.
    compilations = cache.compilations
    assert ready(client)[0] == 503
    assert cache.compilations == compilations


def test_readyz__texts_folder_refused__503_naming_the_folder(
    client, settings, tmp_path, monkeypatch
):
    monkeypatch.setattr(held_texts, "mapping_problem", "")  # this process's state, restored
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    settings.MATERIAL_TEXTS_DIR = str(shared)
    workspace_import(document=small_workspace())
    cache.workspace_cache_clear()
    status, body = ready(client)

    assert status == 503
    assert body["checks"]["texts"].startswith("not mapped, held in memory: MATERIAL_TEXTS_DIR")
    assert str(shared) not in json.dumps(body)  # a public door: the path is in the log only
    assert body["checks"]["workspace"] == "ok"  # the texts are held: it still answers


def test_readyz__no_task_worker_seen__503_naming_each_queue(client, database_tasks, settings):
    workspace_import(document=small_workspace())
    settings.READY_TASK_WORKER_SECONDS = 60

    status, body = ready(client)
    assert status == 503
    assert body["checks"]["queue:default"] == "no task worker seen in the last 60 s"
    assert body["checks"]["queue:webhooks"] == "no task worker seen in the last 60 s"

    # A worker of the default queue only, then one of each but not seen for two minutes.
    workers_seen("default")
    status, body = ready(client)
    assert status == 503
    assert (body["checks"]["queue:default"], body["problems"]) == (
        "ok",
        ["queue:webhooks: no task worker seen in the last 60 s"],
    )
    workers_seen("default", "webhooks", ago=timedelta(minutes=2))
    assert ready(client)[0] == 503

    workers_seen("default", "webhooks")
    status, body = ready(client)
    assert (status, body["status"]) == (200, "ok"), body


def test_readyz__one_worker_of_every_queue__ready(client, database_tasks):
    workers_seen("*")
    assert ready(client)[0] == 200


def test_readyz__oldest_due_task_waited_too_long__503_naming_its_queue(
    client, database_tasks, settings
):
    settings.READY_TASK_MAX_WAIT_SECONDS = 120
    workers_seen("default", "webhooks")
    item_terms_recompute.enqueue()
    webhook_delivery_task.enqueue(1, 1)
    assert ready(client)[0] == 200  # just enqueued

    DBTaskResult.objects.filter(queue_name="default").update(
        enqueued_at=timezone.now() - timedelta(minutes=5)
    )
    status, body = ready(client)

    assert status == 503
    assert body["checks"]["queue:default"].startswith("the oldest due task has waited 300 s")
    assert body["checks"]["queue:webhooks"] == "ok"
    # A task deferred to later is not late; one due since five minutes is.
    DBTaskResult.objects.filter(queue_name="default").update(
        run_after=timezone.now() + timedelta(minutes=5)
    )
    assert ready(client)[0] == 200
    DBTaskResult.objects.filter(queue_name="default").update(
        run_after=timezone.now() - timedelta(minutes=5)
    )
    assert ready(client)[0] == 503


def test_heartbeat__written_while_the_worker_runs__removed_when_it_stops(settings):
    settings.TASK_WORKER_HEARTBEAT_SECONDS = 0.05
    with Heartbeat(worker_id="w-test", queues="webhooks"):
        first = TaskWorker.objects.get(worker_id="w-test").seen_at
        assert TaskWorker.objects.get().queues == "webhooks"
    assert not TaskWorker.objects.exists()
    assert first is not None


def test_readyz__https_on__answers_over_plain_http_for_probes(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    workspace_import(document=small_workspace())

    assert client.get("/readyz").status_code == 200  # not a redirect to https
    assert client.get("/healthz").status_code == 200
    assert client.get("/api/v1/schema/").status_code == 301  # the rest is redirected

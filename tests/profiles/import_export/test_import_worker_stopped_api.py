"""An import whose worker dies (``kill -9``) is failed, not left running for ever.

Nothing of it is written (the import is one transaction); the next worker to start fails the
job with an error that says so and frees the upload, and a client polling the job sees it
failed even before a worker starts again.
"""

import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from profiles.import_export.job_workers import WORKER_STOPPED_ERROR, worker_identity
from profiles.models import ImportJob
from resolver.documents import dump_yaml
from tests.processes import manage, migrated_database, process_env, start_worker, stop
from tests.profiles.conftest import small_workspace

ENQUEUE = (
    "import sys; from profiles.import_export.jobs import import_job_start; "
    "print(import_job_start(text=sys.stdin.read()).pk.hex)"
)


def job_row(database, job_id: str) -> dict:
    with sqlite3.connect(database, timeout=20) as db:
        db.row_factory = sqlite3.Row
        row = db.execute(
            "SELECT j.status, j.error, j.source, t.status AS task_status "
            "FROM profiles_importjob j LEFT JOIN django_tasks_database_dbtaskresult t "
            "ON t.id = replace(j.task_id, '-', '') WHERE j.id = ?",
            [job_id],
        ).fetchone()
        layers = db.execute("SELECT count(*) FROM profiles_layer").fetchone()[0]
    return dict(row) | {"layers": layers}


def wait_for(database, job_id: str, status: str, timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    while (row := job_row(database, job_id))["status"] != status:
        assert time.monotonic() < deadline, f"job still {row['status']}, not {status}"
        time.sleep(0.02)
    return row


def test_import_job__worker_killed_mid_import__next_worker_fails_it_and_frees_the_upload(tmp_path):
    # Given a large import being run by a worker (a SQLite file shared by real processes),
    database = migrated_database(tmp_path)
    env = process_env(database)
    text = dump_yaml(small_workspace(layers=4, items=10000))
    job_id = manage(env, "shell", "-v", "0", "-c", ENQUEUE, input=text).stdout.split()[-1]
    worker = start_worker(env)
    try:
        wait_for(database, job_id, "running")

        # when the worker is killed in the middle,
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        row = job_row(database, job_id)
        assert (row["status"], row["layers"]) == ("running", 0), "the import finished first"

        # then the next worker to start fails the job, says why, and frees the upload,
        worker = start_worker(env)
        row = wait_for(database, job_id, "failed", timeout=20)
    finally:
        stop(worker)
    assert '"code": "IMPORT_WORKER_STOPPED"' in row["error"]
    assert "stopped before it finished; nothing was imported" in row["error"]
    assert row["source"] == ""
    assert row["task_status"] == "FAILED"
    # and nothing of the import was written.
    assert row["layers"] == 0


@pytest.mark.django_db
def test_import_job__polled_after_its_worker_died__answers_failed_with_the_reason():
    # Given a job left running by a worker process that has ended,
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    ended = worker_identity(pid=process.pid)
    process.kill()
    process.wait()
    job = ImportJob.objects.create(status="running", source="layers: []", worker=ended)
    alive = ImportJob.objects.create(status="running", source="x", worker=worker_identity())
    client = APIClient()
    client.force_authenticate(User.objects.create_user("lee", is_staff=True))

    # when a client polls it, it is failed with the reason; a job of a live worker runs on.
    answer = client.get(f"/api/v1/workspace/imports/{job.pk}").json()
    running = client.get(f"/api/v1/workspace/imports/{alive.pk}").json()

    assert (answer["status"], answer["error"]) == ("failed", WORKER_STOPPED_ERROR)
    assert ImportJob.objects.get(pk=job.pk).source == ""
    assert running["status"] == "running"

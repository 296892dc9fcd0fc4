"""Webhook deliveries never delay the other jobs (issue 33, item 13), and the readiness door
sees the real task workers (item 12): ``scripts/with_worker.py`` (``make run``, ``make
serve``) starts a worker per queue, so ten deliveries to a receiver that never answers wait
on their own queue while another editor's import runs at once."""

import json
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request

from resolver.documents import dump_yaml
from tests.processes import ROOT, free_port, manage, migrated_database, process_env, stop
from tests.profiles.conftest import small_workspace
from tests.profiles.notifications.receivers import silent_receiver

DELIVERIES = 10
TIMEOUT = 2  # seconds an attempt waits for the silent receiver

EMIT = """
from django.contrib.auth.models import User
from django.db import transaction
from profiles.notifications.webhooks import webhook_create, webhook_event_emit
staff = User.objects.create_user("dana", is_staff=True)
User.objects.create_superuser("ana")  # the other editor, who imports
webhook_create(
    user=staff, url={url!r}, events=["change_request.opened"],
    secret="a-shared-secret-of-some-length",
)
for n in range({count}):
    with transaction.atomic():
        webhook_event_emit("change_request.opened", {{"changeRequest": {{"id": n}}}})
"""
ENQUEUE = (
    "import sys; from django.contrib.auth.models import User; "
    "from profiles.import_export.jobs import import_job_start; "
    "print(import_job_start(text=sys.stdin.read(), user=User.objects.get(username='ana')).pk.hex)"
)


def query(database, sql: str, *args):
    with sqlite3.connect(database, timeout=20) as db:
        return db.execute(sql, args).fetchall()


def attempted(database) -> int:
    return query(database, "SELECT count(*) FROM profiles_webhookdelivery WHERE attempts > 0")[0][0]


def readyz(base: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"{base}/readyz", timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def wait_until(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.05)
    return value


def test_silent_webhook_receiver__an_import_runs_at_once__deliveries_wait_on_their_queue(
    tmp_path,
):
    database = migrated_database(tmp_path)
    env = process_env(
        database,
        WEBHOOKS_TIMEOUT_SECONDS=str(TIMEOUT),
        WEBHOOKS_RETRY_BASE_SECONDS="3600",  # a retry is not due during the test
        READY_TASK_WORKER_SECONDS="30",
    )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with silent_receiver() as url:
        # Given ten deliveries to a receiver that accepts and never answers
        manage(env, "shell", "-v", "0", "-c", EMIT.format(url=url, count=DELIVERIES))
        # and the server with its workers, as make run starts them
        served = subprocess.Popen(
            [
                sys.executable,
                "scripts/with_worker.py",
                "--",
                sys.executable,
                "manage.py",
                "runserver",
                "--noreload",
                f"127.0.0.1:{port}",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            # When the deliveries' worker is busy with the silent receiver
            wait_until(lambda: attempted(database) >= 1, 60, "the first delivery attempt")
            # and another editor uploads an import
            started = time.monotonic()
            text = dump_yaml(small_workspace())
            job_id = manage(env, "shell", "-v", "0", "-c", ENQUEUE, input=text).stdout.split()[-1]

            # Then the import runs at once, not after the deliveries' timeouts
            wait_until(
                lambda: (
                    query(database, "SELECT status FROM profiles_importjob WHERE id = ?", job_id)
                    == [("succeeded",)]
                ),
                DELIVERIES * TIMEOUT,
                "the import",
            )
            took = time.monotonic() - started
            assert took < 8, f"the import took {took:.1f} s behind the deliveries"
            # while the deliveries still wait their turn on their own queue
            assert attempted(database) < DELIVERIES
            queues = dict(
                query(
                    database,
                    "SELECT task_path, queue_name FROM django_tasks_database_dbtaskresult "
                    "GROUP BY task_path",
                )
            )
            assert queues["profiles.notifications.delivery.webhook_delivery_task"] == "webhooks"

            # And the readiness door sees a worker on each queue (their heartbeats)
            _, body = wait_until(
                lambda: (answer := readyz(base))[0] == 200 and answer, 30, "a ready server"
            )
            assert body["checks"]["queue:default"] == "ok"
            assert body["checks"]["queue:webhooks"] == "ok"

            # and, once a silent receiver has cost at most its own attempts, they all ended
            wait_until(
                lambda: (
                    query(
                        database, "SELECT count(*) FROM profiles_webhookdelivery WHERE error != ''"
                    )
                    == [(DELIVERIES,)]
                ),
                DELIVERIES * (TIMEOUT + 1) + 10,
                "every delivery attempted",
            )
            errors = query(database, "SELECT error FROM profiles_webhookdelivery")
            assert all(
                error.startswith(f"timed out: no answer within {TIMEOUT} s") for (error,) in errors
            )
        finally:
            if served.poll() is None:
                served.send_signal(signal.SIGTERM)
            stop(served)


def test_webhooks_timeout_beyond_the_bound__the_server_refuses_to_start(tmp_path):
    env = process_env(tmp_path / "unused.sqlite3", WEBHOOKS_TIMEOUT_SECONDS="3600")
    started = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert started.returncode != 0
    assert "WEBHOOKS_TIMEOUT_SECONDS must be more than 0 and at most 30" in started.stderr

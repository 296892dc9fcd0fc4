"""The studio's address in review emails (issue 38, item 5): ``make run PORT=8080`` serves on
8080, and the links it emails (the server's and the worker's alike) say 8080."""

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from django.core import mail

from profiles.authoring.scenarios import scenarios_upsert
from profiles.import_export.imports import workspace_import
from tests.profiles.conftest import RELEASE_SCENARIOS, release_workspace
from tests.profiles.safechange.test_reviews import editor_named, opened

ROOT = Path(__file__).resolve().parents[3]


def make_run_environment(*arguments: str) -> dict[str, str]:
    """Return the variables ``make run`` sets on the command that starts the server and its
    task workers (``make -n``: printed, not run)."""
    printed = subprocess.run(
        ["make", "-n", "--no-print-directory", "run", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        # Not the caller's own address or make flags: what make run sets by itself.
        env={
            name: value
            for name, value in os.environ.items()
            if name not in {"SITE_URL", "HOST", "PORT", "MAKEFLAGS", "MFLAGS"}
        },
    ).stdout
    (line,) = [line for line in printed.splitlines() if "scripts/with_worker.py" in line]
    words = shlex.split(line)
    return dict(
        word.split("=", 1) for word in words[: words.index(next(w for w in words if "=" not in w))]
    )


def test_make_run__another_port__the_server_and_worker_know_the_address():
    assert make_run_environment("PORT=8080")["SITE_URL"] == "http://127.0.0.1:8080"
    assert make_run_environment("HOST=0.0.0.0", "PORT=9000")["SITE_URL"] == ("http://0.0.0.0:9000")


@pytest.fixture
def release(db):
    workspace_import(document=release_workspace())
    scenarios_upsert(scenarios=RELEASE_SCENARIOS)


def test_make_run__another_port__review_emails_link_to_it(
    settings, release, django_capture_on_commit_callbacks
):
    author, _reviewer = editor_named("dana"), editor_named("lee")
    settings.SITE_URL = make_run_environment("PORT=8080")["SITE_URL"]

    with django_capture_on_commit_callbacks(execute=True):
        change_request = opened(author, reviewers=["lee"])

    (message,) = mail.outbox
    links = re.findall(r"https?://\S+", message.body)
    assert links == [f"http://127.0.0.1:8080/changes/{change_request.pk}/"]

"""Fixtures of the studio's view tests: conformance case 01 imported, a scenario, users."""

from pathlib import Path

import pytest
import yaml
from django.contrib.auth.models import Group, User

from profiles.import_export.imports import workspace_import
from profiles.models import ImportJob, Profile, Scenario
from profiles.workspace import cache

CASE_01 = next((Path(__file__).resolve().parents[2] / "resolver" / "conformance").glob("01-*.yaml"))
PROFILE = "support-answer"


def load_case_01() -> dict:
    return yaml.safe_load(CASE_01.read_text(encoding="utf-8"))


def stopped_bulk_job(*, user, layer: str) -> ImportJob:
    """A bulk upload that stopped half way: its error and the summary of what it applied."""
    return ImportJob.objects.create(
        user=user,
        kind=ImportJob.Kind.BULK,
        layer=layer,
        ndjson=True,
        status=ImportJob.Status.FAILED,
        phase="failed",
        progress=46,
        summary={
            "layer": layer,
            "operations": 25,
            "created": 8,
            "updated": 2,
            "deleted": 0,
            "unchanged": 0,
        },
        error={
            "code": "BULK_INGEST_WORKER_STOPPED",
            "message": "the worker running this bulk ingest stopped before it finished; the "
            "first 10 operations were applied (see the summary): the batch is idempotent by "
            "path, so sending it again finishes it",
            "path": "",
        },
    )


@pytest.fixture(autouse=True)
def fresh_workspace_cache():
    cache.workspace_cache_clear()
    yield
    cache.workspace_cache_clear()


@pytest.fixture
def workspace(db) -> Profile:
    """Import conformance case 01 and save its request as the profile's default scenario."""
    case = load_case_01()
    workspace_import(document=case["workspace"], mode="replace")
    profile = Profile.objects.get(key=PROFILE)
    request = case["request"]
    Scenario.objects.create(
        name="Dana's card refund",
        profile=profile,
        input=request["input"],
        now=request["now"],
        is_default=True,
    )
    return profile


@pytest.fixture
def editor(db) -> User:
    return User.objects.create_superuser("editor", "", "editor-pass-123")


@pytest.fixture
def viewer(db) -> User:
    """A reader (signed in, not in the editors group): may look, may not write."""
    return User.objects.create_user("viewer", "", "viewer-pass-123")


@pytest.fixture
def editor_client(client, editor):
    client.force_login(editor)
    return client


def join_editors(user: User) -> None:
    user.groups.add(Group.objects.get_or_create(name="editors")[0])

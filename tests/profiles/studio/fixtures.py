"""The studio's editor, signed in: a superuser (the staff role), where the API's ``editor`` of
``tests/profiles/conftest.py`` is a member of the editors group with a token. A studio test
module imports both fixtures (``from tests.profiles.studio.fixtures import editor,
editor_client``) to use them under those names; and a bulk upload that stopped."""

import pytest
from django.contrib.auth.models import User

from profiles.models import ImportJob


@pytest.fixture
def editor(db) -> User:
    return User.objects.create_superuser("editor", "", "editor-pass-123")


@pytest.fixture
def editor_client(client, editor):
    client.force_login(editor)
    return client


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

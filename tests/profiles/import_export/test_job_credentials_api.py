"""A background job checks its user and its API key when it starts, as a request checks them
when it arrives (issue 33): a bulk ingest or an import queued with a key that is then revoked,
or by a user who is then deactivated, deleted or no longer an editor, fails naming why and
writes nothing (``profiles.workspace.permissions.background_refusal``)."""

import datetime as dt

import pytest
from django.contrib.auth.models import Group, User
from django.utils import timezone
from rest_framework.test import APIClient

from profiles.import_export.jobs import import_job_run
from profiles.models import ApiKey, Consumer, ImportJob, Item, Layer
from profiles.workspace.keys import token_replace
from resolver.documents import dump_yaml
from tests.profiles.conftest import API, api_key_for, small_workspace
from tests.profiles.material.test_bulk_ingest_api import BULK, NDJSON, ndjson, ticket

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(settings):
    """Jobs wait for a worker (the tests' immediate backend would run them in the request)."""
    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"}}


def bearer(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def queue_bulk(client) -> ImportJob:
    lines = [ticket(n) for n in range(3)]
    response = client.generic("POST", BULK + "?background=true", ndjson(lines), content_type=NDJSON)
    assert response.status_code == 202, response.content
    job = ImportJob.objects.get(pk=response.json()["id"])
    assert job.status == ImportJob.Status.QUEUED
    return job


def queue_import(client) -> ImportJob:
    document = small_workspace()
    document["consumers"][0]["name"] = "Renamed by the job"
    response = client.post(API + "workspace", dump_yaml(document), content_type="application/yaml")
    assert response.status_code == 202, response.content
    job = ImportJob.objects.get(pk=response.json()["id"])
    assert job.status == ImportJob.Status.QUEUED
    return job


def revoke_the_key(editor):
    ApiKey.objects.filter(owner=editor, kind=ApiKey.Kind.SCOPED).update(revoked_at=timezone.now())


def expire_the_key(editor):
    ApiKey.objects.filter(owner=editor, kind=ApiKey.Kind.SCOPED).update(
        expires_at=timezone.now() - dt.timedelta(seconds=1)
    )


def deactivate(editor):
    User.objects.filter(pk=editor.pk).update(is_active=False)


def no_longer_an_editor(editor):
    editor.groups.remove(Group.objects.get(name="editors"))


def delete_the_user(editor):
    User.objects.filter(pk=editor.pk).delete()


AFTERWARDS = {
    "key revoked": (revoke_the_key, "was revoked"),
    "key expired": (expire_the_key, "has expired"),
    "user deactivated": (deactivate, 'the user "editor" who queued it is deactivated'),
    "user no longer an editor": (no_longer_an_editor, "may no longer run it"),
    "user deleted": (delete_the_user, 'the user "editor" who queued it no longer exists'),
}


@pytest.mark.parametrize("afterwards", AFTERWARDS, ids=list(AFTERWARDS))
def test_bulk_job__its_key_or_user_may_no_longer__fails_naming_why_and_writes_nothing(
    small, editor, queued, afterwards
):
    # Given a bulk job queued with an editor's write key
    job = queue_bulk(bearer(api_key_for(editor, scopes=["write"])))
    items_before = Item.objects.count()
    change, reason = AFTERWARDS[afterwards]

    # When the key or its user loses the right before a worker starts the job
    change(editor)
    job = import_job_run(job_id=str(job.pk))

    # Then the job fails, says why, and nothing was written
    assert job.status == ImportJob.Status.FAILED
    assert job.error["code"] == "PERMISSION_DENIED"
    assert reason in job.error["message"]
    assert "wrote nothing" in job.error["message"]
    assert Item.objects.count() == items_before
    assert not Item.objects.filter(path__startswith="T-").exists()


@pytest.mark.parametrize("afterwards", ["key revoked", "user deactivated"])
def test_import_job__its_key_or_user_may_no_longer__fails_naming_why_and_writes_nothing(
    small, editor, queued, afterwards
):
    job = queue_import(bearer(api_key_for(editor, scopes=["write"])))
    change, reason = AFTERWARDS[afterwards]

    change(editor)
    job = import_job_run(job_id=str(job.pk))

    assert job.status == ImportJob.Status.FAILED
    assert reason in job.error["message"]
    assert job.summary is None
    assert Layer.objects.count() == 3
    assert not Consumer.objects.filter(name="Renamed by the job").exists()


def test_jobs__key_and_user_still_allowed__run_as_before(small, editor, queued):
    client = bearer(api_key_for(editor, scopes=["write"]))
    bulk, imported = queue_bulk(client), queue_import(client)

    bulk, imported = (import_job_run(job_id=str(job.pk)) for job in (bulk, imported))

    assert (bulk.status, imported.status) == ("succeeded", "succeeded")
    assert (bulk.username, bulk.api_key.owner_id) == ("editor", editor.pk)


def test_bulk_job__queued_with_a_user_token_since_replaced__fails_as_revoked(small, editor, queued):
    # A user token is checked like a scoped key: replacing it revokes the old one.
    client = APIClient()
    _, token = token_replace(user=editor)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    job = queue_bulk(client)

    token_replace(user=editor)
    job = import_job_run(job_id=str(job.pk))

    assert job.status == ImportJob.Status.FAILED
    assert "was revoked" in job.error["message"]
    assert not Item.objects.filter(path__startswith="T-").exists()

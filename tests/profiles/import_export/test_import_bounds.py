"""Import jobs bounded per user (queued jobs and queued bytes: 429 beyond, at every door that
starts one) and run fairly across users (one user's queue never makes another's import wait
for all of it)."""

import pytest
from django.contrib.auth.models import Group, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client

from profiles.import_export.jobs import (
    ImportQueueFull,
    import_job_next,
    import_job_run_next,
    import_job_start,
)
from profiles.models import ImportJob
from profiles.workspace.permissions import EDITORS_GROUP
from resolver.documents import dump_yaml
from tests.profiles.conftest import API, small_workspace, token_client

TEXT = dump_yaml(small_workspace())


@pytest.fixture
def queued(settings):
    """The database task backend: jobs wait for a worker (none runs during the test)."""
    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}


def editor(name: str) -> User:
    user = User.objects.create_user(name, password=f"{name}-password-1")
    user.groups.add(Group.objects.get_or_create(name=EDITORS_GROUP)[0])
    return user


def post_import(client, text: str = TEXT):
    return client.post(API + "workspace", text, content_type="application/yaml")


# --- the bounds ----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_import__more_queued_jobs_than_the_bound__429_and_another_user_unaffected(queued, settings):
    # Given a bound of 2 unfinished imports per user,
    settings.IMPORT_MAX_QUEUED_JOBS_PER_USER = 2
    dana, lee = token_client(editor("dana")), token_client(editor("lee"))
    assert [post_import(dana).status_code for _ in range(2)] == [202, 202]

    # a third upload of the same user is refused in the error shape, nothing stored,
    response = post_import(dana)

    assert response.status_code == 429
    error = response.json()["error"]
    assert error["code"] == "IMPORT_QUEUE_FULL"
    assert "(2)" in error["message"] and error["retryable"] is True
    assert int(response["Retry-After"]) >= 1
    assert ImportJob.objects.count() == 2
    # while another user's upload is queued as usual.
    assert post_import(lee).status_code == 202


@pytest.mark.django_db(transaction=True)
def test_import__queued_bytes_beyond_the_bound__429_naming_the_bytes(queued, settings):
    size = len(TEXT.encode())
    settings.IMPORT_MAX_QUEUED_BYTES_PER_USER = size * 2 - 1
    dana = token_client(editor("dana"))
    assert post_import(dana).status_code == 202

    response = post_import(dana)

    assert response.status_code == 429
    assert f"{size:,} bytes" in response.json()["error"]["message"]
    assert post_import(token_client(editor("lee"))).status_code == 202


@pytest.mark.django_db(transaction=True)
def test_import__finished_jobs__no_longer_count(queued, settings):
    settings.IMPORT_MAX_QUEUED_JOBS_PER_USER = 1
    dana = token_client(editor("dana"))
    assert post_import(dana).status_code == 202
    assert post_import(dana).status_code == 429

    call_command("db_worker", "--batch", "--no-startup-delay", "--interval", "0")

    assert post_import(dana).status_code == 202


@pytest.mark.django_db(transaction=True)
def test_studio_upload__queue_full__429_with_the_reason_on_the_form(queued, settings):
    settings.IMPORT_MAX_QUEUED_JOBS_PER_USER = 1
    client = Client()
    client.force_login(editor("dana"))

    def upload():
        file = SimpleUploadedFile("w.yaml", TEXT.encode())
        return client.post("/workspace/upload/", {"file": file, "mode": "merge"})

    assert upload().status_code == 302
    response = upload()

    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1
    html = response.content.decode()
    assert "The upload was not queued" in html and 'role="alert"' in html
    assert ImportJob.objects.count() == 1


@pytest.mark.django_db
def test_import_job_start__queue_full__raises_and_stores_nothing(queued, settings):
    settings.IMPORT_MAX_QUEUED_JOBS_PER_USER = 1
    dana = editor("dana")
    import_job_start(text=TEXT, user=dana)

    with pytest.raises(ImportQueueFull):
        import_job_start(text=TEXT, user=dana)
    assert ImportJob.objects.count() == 1


# --- fairness ------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_worker__one_user_queued_three__another_users_job_runs_second(queued, settings):
    # Given dana's three imports queued, then lee's one,
    settings.IMPORT_MAX_QUEUED_JOBS_PER_USER = 20
    dana, lee = editor("dana"), editor("lee")
    danas = [import_job_start(text=TEXT, user=dana) for _ in range(3)]
    lees = import_job_start(text=TEXT, user=lee)

    # when the real worker runs the queue (its tasks in the order they were enqueued),
    call_command("db_worker", "--batch", "--no-startup-delay", "--interval", "0")

    # lee's import ran right after dana's first, not after all three,
    order = list(ImportJob.objects.order_by("started_at").values_list("pk", flat=True))
    assert order == [danas[0].pk, lees.pk, danas[1].pk, danas[2].pk]
    # every job ran once, to the end.
    statuses = set(ImportJob.objects.values_list("status", flat=True))
    assert statuses == {ImportJob.Status.SUCCEEDED}


@pytest.mark.django_db
def test_next_job__users_take_turns__oldest_job_of_the_user_served_longest_ago(queued, settings):
    settings.IMPORT_MAX_QUEUED_JOBS_PER_USER = 20
    dana, lee, kim = editor("dana"), editor("lee"), editor("kim")
    jobs = {
        name: [import_job_start(text=TEXT, user=user) for _ in range(count)]
        for name, user, count in (("dana", dana, 4), ("lee", lee, 2), ("kim", kim, 1))
    }
    owner = {job.pk: name for name, queue in jobs.items() for job in queue}

    ran = []
    while (job := import_job_run_next()) is not None:
        ran.append((owner[job.pk], job.status))

    # Round robin by the time each user's last job started; within a user, oldest first.
    assert [name for name, _ in ran] == ["dana", "lee", "kim", "dana", "lee", "dana", "dana"]
    assert {status for _, status in ran} == {ImportJob.Status.SUCCEEDED}
    started = {name: [j.pk for j in queue] for name, queue in jobs.items()}
    danas_order = [
        pk
        for pk in ImportJob.objects.order_by("started_at").values_list("pk", flat=True)
        if owner[pk] == "dana"
    ]
    assert danas_order == started["dana"]
    assert import_job_next() is None

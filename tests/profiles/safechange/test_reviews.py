"""Reviews with people in them, at the services (issue 21): the default title, verdicts on the
current revision, emails to the right people only after commit, and the scheduled apply run
by the real database task backend and its worker: once, not at all when stale, and a
rescheduled time makes the earlier task a no-op."""

import datetime as dt
import json

import pytest
from django.contrib.auth.models import Group, User
from django.core import mail
from django.core.management import call_command
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from profiles.authoring.profiles import profile_save_rules
from profiles.authoring.scenarios import scenarios_upsert
from profiles.import_export.imports import workspace_import
from profiles.models import (
    ChangeRequest,
    ChangeRequestComment,
    Profile,
    ProfileVersion,
    Webhook,
    WebhookDelivery,
)
from profiles.safechange.change_requests import (
    change_request_apply,
    change_request_create,
    change_request_update,
)
from profiles.safechange.errors import ChangesInvalid
from profiles.safechange.reviews import (
    change_request_approve_reviewed,
    change_request_comment,
    change_request_open,
    change_request_request_changes,
    change_request_reviewers_set,
    change_request_schedule_apply,
    scheduled_apply_run,
)
from profiles.safechange.selectors import change_request_etag
from profiles.safechange.titles import default_title
from profiles.safechange.verdicts import ChangesRequested, changes_requested_by
from tests.profiles.conftest import RELEASE_SCENARIOS, release_workspace

DATABASE_TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}


@pytest.fixture
def release(db):
    workspace_import(document=release_workspace())
    scenarios_upsert(scenarios=RELEASE_SCENARIOS)


def editor_named(name: str, *, email: str | None = None) -> User:
    user = User.objects.create_user(name, email=email or f"{name}@example.com")
    group, _ = Group.objects.get_or_create(name="editors")
    user.groups.add(group)
    return user


@pytest.fixture
def author(db):
    return editor_named("dana")


@pytest.fixture
def lee(db):
    return editor_named("lee")


def opened(author, *, reviewers=None, budget=650) -> ChangeRequest:
    return change_request_open(
        opener=change_request_create,
        user=author,
        reviewers=reviewers,
        profile_key="profile-0",
        title="Smaller budget",
        changes={"budget": budget},
    )


def approved(change_request: ChangeRequest, reviewer) -> ChangeRequest:
    change_request.refresh_from_db()
    return change_request_approve_reviewed(
        pk=change_request.pk, user=reviewer, if_match=change_request_etag(change_request)
    )


def run_due_tasks() -> None:
    """Run the database backend's worker over the tasks that are due, then stop."""
    call_command("db_worker", "--batch", "--no-startup-delay", "--interval", "0")


def make_due(**filters) -> None:
    """Move the chosen queued tasks to a moment past (the clock cannot be moved)."""
    DBTaskResult.objects.filter(**filters).update(
        run_after=timezone.now() - dt.timedelta(seconds=1)
    )


# --- titles ----------------------------------------------------------------------------------


def test_default_title__names_the_profile_and_each_changed_path():
    assert (
        default_title(profile_key="support-answer", paths=["budget", "rules.kb.maxItems"])
        == "Change support-answer: budget, rules.kb.maxItems"
    )
    assert default_title(profile_key="support-answer", paths=[]) == "Change support-answer"


def test_default_title__many_paths__cut_to_the_title_bound():
    title = default_title(profile_key="p", paths=[f"rules.layer-{n}.maxItems" for n in range(50)])

    assert len(title) == 200
    assert title.endswith("…")


# --- verdicts --------------------------------------------------------------------------------


def test_verdicts__reviewer_no_longer_an_editor__their_request_for_changes_no_longer_blocks(
    release, author, lee
):
    change_request = opened(author)
    change_request_request_changes(pk=change_request.pk, user=lee, body="No.")
    assert changes_requested_by(change_request) == ["lee"]

    lee.groups.clear()

    assert changes_requested_by(change_request) == []


def test_apply__changes_requested__refused_and_nothing_written(release, author, lee):
    staff = User.objects.create_user("kim", is_staff=True)
    change_request = opened(author)
    approved(change_request, staff)
    change_request_request_changes(pk=change_request.pk, user=lee, body="Keep 800.")
    versions = ProfileVersion.objects.count()

    with pytest.raises(ChangesRequested) as refused:
        change_request_apply(pk=change_request.pk, user=author)

    assert refused.value.extra["changesRequestedBy"] == ["lee"]
    assert ProfileVersion.objects.count() == versions
    assert Profile.objects.get(key="profile-0").budget == 800


def test_edit__new_revision__clears_the_request_for_changes(release, author, lee):
    change_request = opened(author)
    change_request_request_changes(pk=change_request.pk, user=lee, body="Try 700.")

    change_request_update(pk=change_request.pk, user=author, changes={"budget": 700})

    change_request.refresh_from_db()
    assert (change_request.revision, changes_requested_by(change_request)) == (2, [])


# --- emails ----------------------------------------------------------------------------------


def test_emails__reviewer_without_address_skipped__the_actor_never_told(
    release, author, django_capture_on_commit_callbacks
):
    silent = editor_named("sam")
    silent.email = ""
    silent.save()
    lee = editor_named("lee")

    with django_capture_on_commit_callbacks(execute=True):
        change_request = opened(author, reviewers=["sam", "lee"])
        change_request_comment(pk=change_request.pk, user=author, body="Context for reviewers.")

    assert [message.to for message in mail.outbox] == [[lee.email]]
    assert set(change_request.reviewers.all()) == {silent, lee}


def test_emails__write_refused__nothing_sent(
    release, author, lee, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(ChangesInvalid):
        change_request_open(
            opener=change_request_create,
            user=author,
            reviewers=["lee"],
            profile_key="profile-0",
            title="Broken",
            changes={"budget": -1},
        )

    assert mail.outbox == []
    assert not ChangeRequest.objects.exists()


def test_emails__title_stored_with_a_line_break__subject_is_one_line_and_sent(
    release, author, lee, django_capture_on_commit_callbacks
):
    # Given a request whose title was stored before titles were one line
    change_request = opened(author)
    ChangeRequest.objects.filter(pk=change_request.pk).update(title="Smaller\r\nbudget")
    change_request.refresh_from_db()

    # When its reviewer is asked and someone comments
    with django_capture_on_commit_callbacks(execute=True):
        change_request_reviewers_set(pk=change_request.pk, user=author, reviewers=["lee"])
        change_request_comment(pk=change_request.pk, user=lee, body="Looks right.")

    # Then both emails went out, each with a one-line subject
    assert sorted(message.to[0] for message in mail.outbox) == [author.email, lee.email]
    for message in mail.outbox:
        assert "\r" not in message.subject and "\n" not in message.subject
        assert f"#{change_request.pk} Smaller budget:" in message.subject
        message.message()  # the mailer builds it (a line break in a header is refused)


# --- scheduled apply, through the database backend and its worker ---------------------------


@pytest.mark.django_db(transaction=True)
def test_scheduled_apply__due__the_worker_applies_it_once(settings, release, author, lee):
    settings.TASKS = DATABASE_TASKS
    change_request = opened(author)
    approved(change_request, lee)
    apply_at = timezone.now() + dt.timedelta(hours=1)
    change_request_schedule_apply(pk=change_request.pk, user=lee, apply_at=apply_at)
    mail.outbox.clear()

    # Not due yet: the worker leaves it queued.
    run_due_tasks()
    assert ChangeRequest.objects.get().status == "open"
    (task,) = DBTaskResult.objects.all()
    assert task.run_after == apply_at

    # Due: applied as the scheduler, one version, the author and the scheduler told.
    make_due()
    run_due_tasks()
    change_request.refresh_from_db()
    assert (change_request.status, change_request.apply_at) == ("applied", None)
    assert change_request.resolved_by == lee
    assert Profile.objects.get(key="profile-0").budget == 650
    task.refresh_from_db()
    assert (task.status, task.return_value) == ("SUCCESSFUL", "applied")
    assert sorted((m.to[0], m.subject.rsplit(": ", 1)[1]) for m in mail.outbox) == [
        ("dana@example.com", "applied"),
        ("lee@example.com", "scheduled apply done"),
    ]

    # The same task run again (a retry, a second worker) does nothing.
    versions = ProfileVersion.objects.count()
    assert scheduled_apply_run(pk=change_request.pk, apply_at=apply_at) == "superseded"
    assert ProfileVersion.objects.count() == versions


@pytest.mark.django_db(transaction=True)
def test_scheduled_apply__stale__nothing_applied_and_author_and_scheduler_told(
    settings, release, author, lee
):
    settings.TASKS = DATABASE_TASKS
    Webhook.objects.create(
        url="https://127.0.0.1:9/hook", events=["change_request.apply_failed"], secret="s" * 20
    )
    scheduler = editor_named("kim")
    change_request = opened(author)
    approved(change_request, lee)
    change_request_schedule_apply(
        pk=change_request.pk, user=scheduler, apply_at=timezone.now() + dt.timedelta(hours=1)
    )
    # the profile moves on before it is due
    profile_save_rules(profile="profile-0", rules={}, budget=900, user=lee)
    mail.outbox.clear()

    make_due()
    run_due_tasks()

    change_request.refresh_from_db()
    assert (change_request.status, change_request.apply_at) == ("open", None)
    assert Profile.objects.get(key="profile-0").budget == 900
    assert DBTaskResult.objects.get(task_path__endswith="scheduled_apply").return_value == (
        "not applied"
    )
    note = ChangeRequestComment.objects.get(change_request=change_request, author=None)
    assert note.author is None
    assert "did not run; nothing was applied" in note.body and "moved past version" in note.body
    assert sorted(message.to[0] for message in mail.outbox) == [
        "dana@example.com",
        "kim@example.com",
    ]
    assert all("moved past version" in message.body for message in mail.outbox)
    # and the webhooks listening to failed applies are told, with the refusal's code.
    (delivery,) = WebhookDelivery.objects.filter(event="change_request.apply_failed")
    assert '"code": "STALE_CHANGE_REQUEST"' in json.dumps(delivery.payload)


@pytest.mark.django_db(transaction=True)
def test_scheduled_apply__rescheduled__the_earlier_task_does_nothing(
    settings, release, author, lee
):
    settings.TASKS = DATABASE_TASKS
    change_request = opened(author)
    approved(change_request, lee)
    first = timezone.now() + dt.timedelta(hours=1)
    second = timezone.now() + dt.timedelta(hours=2)
    change_request_schedule_apply(pk=change_request.pk, user=lee, apply_at=first)
    change_request_schedule_apply(pk=change_request.pk, user=lee, apply_at=second)
    mail.outbox.clear()

    # When the task of the first time comes due,
    make_due(run_after=first)
    run_due_tasks()

    # then nothing happens: the request waits for the second time, nobody is told.
    change_request.refresh_from_db()
    assert (change_request.status, change_request.apply_at) == ("open", second)
    assert DBTaskResult.objects.get(run_after__lt=second).return_value == "superseded"
    assert mail.outbox == []
    # And the second one applies it.
    make_due()
    run_due_tasks()
    change_request.refresh_from_db()
    assert change_request.status == "applied"


@pytest.mark.django_db(transaction=True)
def test_scheduled_apply__cleared__the_task_does_nothing(settings, release, author, lee):
    settings.TASKS = DATABASE_TASKS
    change_request = opened(author)
    approved(change_request, lee)
    change_request_schedule_apply(
        pk=change_request.pk, user=lee, apply_at=timezone.now() + dt.timedelta(hours=1)
    )
    change_request_schedule_apply(pk=change_request.pk, user=lee, apply_at=None)

    make_due()
    run_due_tasks()

    change_request.refresh_from_db()
    assert (change_request.status, change_request.apply_at) == ("open", None)
    assert DBTaskResult.objects.get().return_value == "superseded"


@pytest.mark.django_db(transaction=True)
def test_scheduled_apply__changes_requested_since__not_applied(settings, release, author, lee):
    settings.TASKS = DATABASE_TASKS
    change_request = opened(author)
    approved(change_request, lee)
    change_request_schedule_apply(
        pk=change_request.pk, user=author, apply_at=timezone.now() + dt.timedelta(hours=1)
    )
    change_request_request_changes(pk=change_request.pk, user=lee, body="Wait for the launch.")

    make_due()
    run_due_tasks()

    change_request.refresh_from_db()
    assert change_request.status == "open"
    assert Profile.objects.get(key="profile-0").budget == 800
    assert "lee requested changes" in change_request.comments.last().body

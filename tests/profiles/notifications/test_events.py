"""Each event the features announce reaches the webhooks subscribed to it: a change request
opened, approved and applied, a profile version, an import job finished (succeeded or
failed). Payloads name things; they carry no item text."""

import json

import pytest

from profiles.authoring.profiles import profile_update
from profiles.import_export.imports import workspace_import
from profiles.import_export.jobs import import_job_start
from profiles.models import WEBHOOK_EVENTS, ImportJob, WebhookDelivery
from profiles.notifications.delivery import webhook_delivery_task
from profiles.safechange.change_requests import (
    change_request_apply,
    change_request_approve,
    change_request_create,
)
from profiles.safechange.selectors import change_request_etag
from tests.profiles.conftest import small_workspace
from tests.profiles.notifications.conftest import make_webhook
from tests.profiles.notifications.receivers import receiver

pytestmark = pytest.mark.django_db

EVERY_EVENT = list(WEBHOOK_EVENTS)


@pytest.fixture
def workspace(db):
    workspace_import(document=small_workspace())


def deliveries(event: str | None = None) -> list[WebhookDelivery]:
    found = WebhookDelivery.objects.order_by("id")
    if event is not None:
        found = found.filter(event=event)
    return list(found)


def test_change_request__opened_approved_applied__one_delivery_each(workspace, staff, editor):
    webhook = make_webhook(staff, "http://127.0.0.1:9/hook", events=EVERY_EVENT)

    change_request = change_request_create(
        profile_key="profile-0", title="A larger budget", changes={"budget": 999}, user=staff
    )
    change_request_approve(
        pk=change_request.pk, user=editor, if_match=change_request_etag(change_request)
    )
    change_request_apply(pk=change_request.pk, user=editor)

    events = [delivery.event for delivery in deliveries() if delivery.event.startswith("change")]
    assert events == [
        "change_request.opened",
        "change_request.approved",
        "change_request.applied",
    ]
    opened, approved, applied = (
        deliveries("change_request.opened")
        + deliveries("change_request.approved")
        + deliveries("change_request.applied")
    )
    expected = {
        "id": change_request.pk,
        "title": "A larger budget",
        "profile": "profile-0",
        "url": f"http://127.0.0.1:8000/changes/{change_request.pk}/",  # SITE_URL
    }
    assert opened.payload == {"changeRequest": {**expected, "status": "open"}}
    assert approved.payload == {
        "changeRequest": {**expected, "status": "open"},
        "approvedBy": "lee",
    }
    assert applied.payload == {"changeRequest": {**expected, "status": "applied"}}
    assert {delivery.webhook_id for delivery in deliveries()} == {webhook.pk}
    # The application wrote a version: announced too
    [version] = deliveries("profile_version.created")
    assert version.payload == {
        "profile": "profile-0",
        "version": 2,
        "source": "change-request",
        "changeRequest": change_request.pk,
        "deleted": False,
    }


def test_profile_version__each_direct_write__one_delivery(workspace, staff):
    make_webhook(staff, "http://127.0.0.1:9/hook", events=["profile_version.created"])

    profile_update(key="profile-0", changes={"budget": 701}, user=staff)
    profile_update(key="profile-1", changes={"budget": 801}, user=staff)

    assert [delivery.payload for delivery in deliveries()] == [
        {
            "profile": "profile-0",
            "version": 2,
            "source": "write",
            "changeRequest": None,
            "deleted": False,
        },
        {
            "profile": "profile-1",
            "version": 2,
            "source": "write",
            "changeRequest": None,
            "deleted": False,
        },
    ]


def test_import__one_writing_several_profiles__one_delivery_per_version(staff, db):
    make_webhook(staff, "http://127.0.0.1:9/hook", events=["profile_version.created"])

    workspace_import(document=small_workspace(profiles=3))

    assert sorted(delivery.payload["profile"] for delivery in deliveries()) == [
        "profile-0",
        "profile-1",
        "profile-2",
    ]


def test_import_job__succeeded__import_finished_with_counts_and_no_names(staff, db):
    make_webhook(staff, "http://127.0.0.1:9/hook", events=["import.finished"])
    text = json.dumps(small_workspace(layers=1, items=2, profiles=1))

    job = import_job_start(text=text, user=staff)  # the suite's tasks run at once

    job.refresh_from_db()
    assert job.status == ImportJob.Status.SUCCEEDED
    [delivery] = deliveries("import.finished")
    assert delivery.payload["job"]["id"] == str(job.pk)
    assert delivery.payload["job"]["status"] == "succeeded"
    assert delivery.payload["job"]["counts"]["items"]["created"] == 2
    assert delivery.payload["job"]["error"] is None
    assert "Item 0 of layer 0" not in json.dumps(delivery.payload)  # no item text


def test_import_job__failed__import_finished_with_the_error_code(staff, db):
    make_webhook(staff, "http://127.0.0.1:9/hook", events=["import.finished"])

    job = import_job_start(text="layers: [{key: 'Not A Key'}]", user=staff)

    job.refresh_from_db()
    assert job.status == ImportJob.Status.FAILED
    [delivery] = deliveries("import.finished")
    assert delivery.payload["job"]["status"] == "failed"
    assert delivery.payload["job"]["error"]["code"] == "INVALID_WORKSPACE"


def test_import_job__refused_at_once__import_finished_too(staff, db):
    make_webhook(staff, "http://127.0.0.1:9/hook", events=["import.finished"])

    import_job_start(text="layers:\x00", user=staff)

    [delivery] = deliveries("import.finished")
    assert delivery.payload["job"]["status"] == "failed"


def test_change_request_opened__delivered_to_a_real_receiver(workspace, staff):
    with receiver(200) as hook:
        make_webhook(staff, hook.url)
        change_request_create(
            profile_key="profile-0", title="A larger budget", changes={"budget": 999}, user=staff
        )
        [delivery] = deliveries()

        webhook_delivery_task.call(delivery.pk, 1)

    body = json.loads(hook.requests[0].body)
    assert body["event"] == "change_request.opened"
    assert body["data"]["changeRequest"]["title"] == "A larger budget"

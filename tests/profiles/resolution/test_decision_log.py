"""The decision log: what it records, retention, and that it never fails a resolution."""

import datetime as dt
import logging
import time

import pytest
from django.core.management import call_command
from django.test import override_settings
from django.utils import timezone

from profiles.import_export.imports import workspace_import
from profiles.models import DecisionLog
from profiles.resolution.decision_log import decision_log_record, request_fingerprint
from profiles.resolution.services import profile_resolve
from tests.profiles.conftest import NOW, small_workspace

pytestmark = pytest.mark.django_db


def resolved(request_data):
    workspace_import(document=small_workspace())
    started = time.perf_counter()
    resolution = profile_resolve(profile="profile-0", request=request_data)
    return resolution, started


def test_record__api_resolution__stores_fingerprint_status_and_tokens_not_the_input(admin_user):
    request_data = {"input": {"message": "refund", "customer_id": "C-7"}, "now": NOW}
    resolution, started = resolved(request_data)

    entry = decision_log_record(
        request_data=request_data,
        resolution=resolution,
        source="api",
        started=started,
        user=admin_user,
        auth="token",
    )

    entry.refresh_from_db()
    assert entry.profile_key == "profile-0"
    assert entry.status == resolution["status"]
    assert entry.estimated_tokens == resolution["budget"]["estimatedTokens"]
    assert entry.request_fingerprint == request_fingerprint(request_data)
    assert entry.input is None
    assert entry.workspace_version  # the content version that was resolved
    assert entry.user == admin_user and entry.duration_ms >= 0


@override_settings(DECISION_LOG_STORE_INPUT=True)
def test_record__input_storage_allowed__keeps_the_input():
    request_data = {"input": {"message": "refund"}, "now": NOW}
    resolution, started = resolved(request_data)
    entry = decision_log_record(
        request_data=request_data, resolution=resolution, source="api", started=started
    )
    assert DecisionLog.objects.get(pk=entry.pk).input == {"message": "refund"}


def test_record__previews_not_enabled__records_nothing():
    request_data = {"now": NOW}
    resolution, started = resolved(request_data)
    assert (
        decision_log_record(
            request_data=request_data, resolution=resolution, source="preview", started=started
        )
        is None
    )
    assert DecisionLog.objects.count() == 0


def test_record__write_fails__logs_the_failure_and_returns_none(caplog):
    request_data = {"now": NOW}
    resolution, started = resolved(request_data)
    broken = dict(resolution, blockers=[object()])  # cannot be stored as JSON
    with caplog.at_level(logging.ERROR, logger="profiles.decision_log"):
        entry = decision_log_record(
            request_data=request_data, resolution=broken, source="api", started=started
        )
    assert entry is None
    assert "could not write the decision log entry" in caplog.text
    assert DecisionLog.objects.count() == 0


def test_prune_command__entries_past_retention__deletes_only_those(capsys):
    old = DecisionLog.objects.create(
        request_fingerprint="a",
        status="RESOLVED",
        created_at=timezone.now() - dt.timedelta(days=40),
    )
    recent = DecisionLog.objects.create(request_fingerprint="b", status="BLOCKED")

    call_command("prune_decision_log", "--days", "30")

    assert "deleted 1 decision log entries" in capsys.readouterr().out
    assert list(DecisionLog.objects.values_list("pk", flat=True)) == [recent.pk]
    assert not DecisionLog.objects.filter(pk=old.pk).exists()


def test_admin__decision_log__is_listed_filterable_and_read_only(admin_client):
    DecisionLog.objects.create(request_fingerprint="f" * 64, status="BLOCKED", profile_key="p")
    listing = admin_client.get("/admin/profiles/decisionlog/?status__exact=BLOCKED")
    assert listing.status_code == 200
    assert b"BLOCKED" in listing.content
    assert admin_client.get("/admin/profiles/decisionlog/add/").status_code == 403


def test_admin__decision_log_entry__cannot_be_deleted_one_by_one(admin_client):
    entry = DecisionLog.objects.create(request_fingerprint="f" * 64, status="OK")
    page = admin_client.get(f"/admin/profiles/decisionlog/{entry.pk}/change/")
    assert page.status_code == 200  # a superuser may read it...
    assert b"/delete/" not in page.content  # ...and is offered no delete link

    assert admin_client.get(f"/admin/profiles/decisionlog/{entry.pk}/delete/").status_code == 403
    posted = admin_client.post(f"/admin/profiles/decisionlog/{entry.pk}/delete/", {"post": "yes"})

    assert posted.status_code == 403
    assert DecisionLog.objects.filter(pk=entry.pk).exists()


def test_admin__decision_log_entries__cannot_be_deleted_in_bulk(admin_client):
    entries = [
        DecisionLog.objects.create(request_fingerprint=str(n) * 64, status="OK") for n in range(3)
    ]
    listing = admin_client.get("/admin/profiles/decisionlog/")
    assert b"delete_selected" not in listing.content  # the bulk action is not offered

    posted = admin_client.post(
        "/admin/profiles/decisionlog/",
        {
            "action": "delete_selected",
            "_selected_action": [entry.pk for entry in entries],
            "post": "yes",
        },
    )

    assert posted.status_code in (200, 302)  # "no action selected", nothing done
    assert DecisionLog.objects.count() == 3


def test_admin__decision_log_entry__cannot_be_changed(admin_client):
    entry = DecisionLog.objects.create(request_fingerprint="f" * 64, status="OK", profile_key="p")
    admin_client.post(
        f"/admin/profiles/decisionlog/{entry.pk}/change/",
        {"request_fingerprint": "0" * 64, "status": "BLOCKED", "profile_key": "q"},
    )
    entry.refresh_from_db()
    assert (entry.status, entry.profile_key) == ("OK", "p")


@pytest.mark.django_db(transaction=True)
def test_background_writer__entries_queued__all_written_and_a_bad_one_logged(settings, caplog):
    from profiles.resolution.decision_log import decision_log_flush

    # Given the production mode, where a request only queues its entry,
    settings.DECISION_LOG_ASYNC = True
    request_data = {"now": NOW}
    resolution, started = resolved(request_data)
    broken = dict(resolution, blockers=[object()])  # cannot be stored as JSON

    # when good entries and a bad one are queued,
    with caplog.at_level(logging.ERROR, logger="profiles.decision_log"):
        for _ in range(5):
            assert (
                decision_log_record(
                    request_data=request_data, resolution=resolution, source="api", started=started
                )
                is None
            )
        decision_log_record(
            request_data=request_data, resolution=broken, source="api", started=started
        )
        assert decision_log_flush(timeout=10)

    # then every good entry is stored and the failure is reported, not raised.
    assert DecisionLog.objects.count() == 5
    assert "could not write a decision log entry" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_background_writer__a_row__stored_as_the_synchronous_path_stores_it(settings, admin_user):
    from profiles.resolution.decision_log import decision_log_flush

    # Given a resolution with blockers and its input kept (every field has a value),
    settings.DECISION_LOG_STORE_INPUT = True
    request_data = {"input": {"message": "refund é", "customer_id": "C-7"}, "now": NOW}
    resolution, started = resolved(request_data)
    resolution = dict(resolution, blockers=[{"layer": "kb", "code": "MISSING_REQUIRED_CONTEXT"}])
    arguments = dict(
        request_data=request_data,
        resolution=resolution,
        source="api",
        started=started,
        user=admin_user,
        auth="token",
        profile_version=7,
    )

    # when one row is written synchronously and the same one by the background writer,
    synchronous = decision_log_record(**arguments)
    settings.DECISION_LOG_ASYNC = True
    assert decision_log_record(**arguments) is None
    assert decision_log_flush(timeout=10, close_connection=True)

    # then both rows read back the same, but for their id, time and duration.
    first, second = (
        DecisionLog.objects.filter(pk=pk).values().get()
        for pk in (synchronous.pk, DecisionLog.objects.exclude(pk=synchronous.pk).get().pk)
    )
    for row in (first, second):
        del row["id"], row["duration_ms"]
    assert abs(second.pop("created_at") - first.pop("created_at")) < dt.timedelta(seconds=60)
    assert second == first
    assert second["input"] == request_data["input"] and second["profile_version"] == 7
    assert second["blockers"] == resolution["blockers"]

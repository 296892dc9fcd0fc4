"""The decision log's changelist says how fast the log grows: rows and bytes of the last day,
what the retention period keeps at that rate, and what one token at the rate limit adds."""

import datetime as dt

import pytest
from django.urls import reverse
from django.utils import timezone

from profiles.models import DecisionLog
from profiles.resolution.decision_log import (
    MEASURED_ROW_BYTES,
    decision_log_growth,
    decision_log_row_bytes,
)

pytestmark = pytest.mark.django_db


def log_rows(count: int, *, age: dt.timedelta = dt.timedelta(0)) -> None:
    created = timezone.now() - age
    DecisionLog.objects.bulk_create(
        DecisionLog(
            created_at=created,
            profile_key="support-answer",
            request_fingerprint=f"{n:064x}",
            status="RESOLVED",
        )
        for n in range(count)
    )


def test_growth__rows_of_the_last_day__bytes_retained_and_at_the_rate_limit(settings):
    settings.DECISION_LOG_RETENTION_DAYS = 30
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"resolve": "600/minute"},
    }
    log_rows(1_200)
    log_rows(50, age=dt.timedelta(days=2))  # older than a day: not counted

    growth = decision_log_growth()

    assert growth.rows_last_day == 1_200
    row = decision_log_row_bytes()
    assert growth.bytes_last_day == 1_200 * row
    assert growth.bytes_retained == 30 * 1_200 * row
    # One token at 600 a minute: 864,000 rows a day.
    assert growth.rows_a_day_at_rate == 864_000
    assert growth.bytes_a_day_at_rate == 864_000 * row


def test_growth__sqlite__the_measured_row_size(settings):
    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        pytest.skip("PostgreSQL tells the row size itself")
    assert decision_log_row_bytes() == MEASURED_ROW_BYTES


def test_changelist__staff__shows_the_day_and_the_estimate(admin_client, settings):
    settings.DECISION_LOG_RETENTION_DAYS = 30
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"resolve": "600/minute"},
    }
    log_rows(1_200)

    html = admin_client.get(reverse("admin:profiles_decisionlog_changelist")).content.decode()

    assert 'class="help decision-log-growth"' in html
    assert "Last 24 hours: <strong>1,200 rows" in html
    assert "30-day retention keeps about" in html
    assert "(600/minute) adds 864,000 rows" in html


def test_changelist__no_resolve_limit__no_rate_limit_line(admin_client, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {}}

    html = admin_client.get(reverse("admin:profiles_decisionlog_changelist")).content.decode()

    assert "Last 24 hours: <strong>0 rows" in html
    assert "rate limit" not in html

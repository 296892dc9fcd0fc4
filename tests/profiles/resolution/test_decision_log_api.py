"""Resolutions served by the API are recorded in the decision log."""

import pytest
from django.test import override_settings

from profiles.models import DecisionLog
from profiles.resolution.decision_log import request_fingerprint

pytestmark = pytest.mark.django_db

REQUEST = {
    "profile": "support-answer",
    "input": {"message": "where is my refund", "customer_id": "C-1001"},
    "now": "2026-11-29T12:00:00Z",
}


def test_resolve__served__records_one_entry_without_the_input(reader_client, reader, demo):
    response = reader_client.post("/api/v1/resolve", REQUEST, format="json")
    assert response.status_code == 200

    entry = DecisionLog.objects.get()
    resolution = response.json()
    assert entry.source == "api" and entry.auth == "token" and entry.user == reader
    assert entry.profile_key == "support-answer"
    assert entry.status == resolution["status"]
    assert entry.estimated_tokens == resolution["budget"]["estimatedTokens"]
    assert entry.request_fingerprint == request_fingerprint(REQUEST)
    assert entry.input is None
    assert "C-1001" not in str(entry.blockers)


def test_resolve__bad_request__records_nothing(reader_client, demo):
    response = reader_client.post("/api/v1/resolve", {"input": {}}, format="json")
    assert response.status_code == 400
    assert DecisionLog.objects.count() == 0


@override_settings(DECISION_LOG_PREVIEWS=True)
def test_preview__previews_logged__records_a_preview_entry(reader_client, demo):
    body = {"budget": 300, "input": REQUEST["input"], "now": REQUEST["now"]}
    response = reader_client.post("/api/v1/profiles/support-answer/preview", body, format="json")
    assert response.status_code == 200
    assert DecisionLog.objects.get().source == "preview"

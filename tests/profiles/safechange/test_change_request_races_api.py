"""Change requests applied at the same moment, on PostgreSQL (real row locks, two connections):
of two requests with the same base exactly one applies; one request applied twice applies once.
"""

import threading

import pytest
from django.db import connection, connections

from profiles.models import ChangeRequest, Environment, ProfileVersion
from tests.profiles.conftest import API, token_client

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="row locks need two PostgreSQL connections"
    ),
]


def apply_together(clients_and_ids) -> list:
    """Apply each (client, id) from its own thread, released at the same instant."""
    barrier = threading.Barrier(len(clients_and_ids))
    results: list = [None] * len(clients_and_ids)

    def run(index, client, change_request_id):
        try:
            barrier.wait()
            response = client.post(f"{API}change-requests/{change_request_id}/apply")
            results[index] = (response.status_code, response.json())
        finally:
            connections.close_all()

    threads = [
        threading.Thread(target=run, args=(index, client, change_request_id))
        for index, (client, change_request_id) in enumerate(clients_and_ids)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@pytest.fixture
def two_approved(release, editor, reviewer):
    Environment.objects.create(key="production", requires_change_request=True)
    author, approver = token_client(editor), token_client(reviewer)
    ids = []
    for budget in (701, 702):
        response = author.post(
            API + "change-requests",
            {"profile": "profile-0", "title": f"Budget {budget}", "changes": {"budget": budget}},
            format="json",
        )
        ids.append(response.json()["id"])
        etag = response.headers["ETag"]
        approver.post(f"{API}change-requests/{ids[-1]}/approve", HTTP_IF_MATCH=etag)
    return ids


@pytest.mark.parametrize("attempt", range(3))
def test_apply__two_requests_with_the_same_base_at_once__exactly_one_applies(
    two_approved, editor, reviewer, attempt
):
    results = apply_together(
        [(token_client(editor), two_approved[0]), (token_client(reviewer), two_approved[1])]
    )

    statuses = sorted(status for status, _ in results)
    assert statuses == [200, 409], results
    refused = next(body for status, body in results if status == 409)
    assert refused["error"]["code"] == "STALE_CHANGE_REQUEST"
    versions = ProfileVersion.objects.filter(profile_key="profile-0").order_by("number")
    assert [version.number for version in versions] == [1, 2]
    applied = ChangeRequest.objects.get(status="applied")
    assert versions.last().change_request_id == applied.pk
    assert ChangeRequest.objects.filter(status="open").count() == 1


def test_apply__the_same_request_twice_at_once__applied_once(two_approved, editor, reviewer):
    results = apply_together(
        [(token_client(editor), two_approved[0]), (token_client(reviewer), two_approved[0])]
    )

    assert sorted(status for status, _ in results) == [200, 409], results
    refused = next(body for status, body in results if status == 409)
    assert refused["error"]["code"] == "CHANGE_REQUEST_NOT_OPEN"
    assert ProfileVersion.objects.filter(profile_key="profile-0").count() == 2

"""Schemathesis against the live OpenAPI schema: every operation, bounded examples, as staff.

Each operation gets up to ``MAX_EXAMPLES`` generated requests (hypothesis, derandomized so a
run is repeatable); every response must not be a 5xx and must match the schema. The test
prints the figures (operations, examples, failures) for the record.
"""

from contextlib import contextmanager

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from ctxstudio.wsgi import application

pytestmark = pytest.mark.django_db

MAX_EXAMPLES = 8
CHECKS = [not_a_server_error, response_schema_conformance]


@contextmanager
def connections_kept_open():
    """Keep the test's transaction: the raw WSGI app would close the connection per request
    (Django's own test client disconnects the same handlers)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def test_openapi_schema__fuzzed_requests_as_staff__no_5xx_and_responses_match_the_schema(
    small, staff, capsys
):
    token, _ = Token.objects.get_or_create(user=staff)
    headers = {"Authorization": f"Token {token.key}"}
    examples = 0
    failures: list[str] = []

    def fuzz(operation) -> None:
        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def run(case):
            nonlocal examples
            examples += 1
            try:
                case.call_and_validate(headers=headers, checks=CHECKS)
            except (Exception, BaseExceptionGroup) as exc:  # collected and reported below
                failures.append(f"{operation.label}: {str(exc).splitlines()[0:6]}")

        run()

    with connections_kept_open():
        schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", application)
        operations = [result.ok() for result in schema.get_all_operations()]
        for operation in operations:
            fuzz(operation)

    with capsys.disabled():
        print(
            f"\nschemathesis: {len(operations)} operations, {examples} examples, "
            f"{len(failures)} failures"
        )
    assert len(operations) >= 35
    assert not failures, "\n".join(failures[:20])

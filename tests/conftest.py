"""Suite-wide fixtures."""

import pytest


@pytest.fixture(autouse=True)
def _isolated_cache():
    """Start every test with an empty cache: throttling and login-failure counters live there."""
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture(autouse=True)
def _synchronous_decision_log(settings):
    """Write decision log rows in the test's own transaction (tests of the background writer
    turn this back on explicitly)."""
    settings.DECISION_LOG_ASYNC = False

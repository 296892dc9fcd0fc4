"""Suite-wide fixtures."""

import pytest


@pytest.fixture(autouse=True)
def _isolated_cache():
    """Start every test with an empty cache: throttling and login-failure counters live there."""
    from django.core.cache import cache

    cache.clear()
    yield

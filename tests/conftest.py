"""Suite-wide fixtures."""

import os

import pytest

from tests.oidc_provider.running import Provider


@pytest.fixture(autouse=True)
def _isolated_cache():
    """Start every test with an empty cache (throttling and login-failure counters live there)
    and no compiled workspace, served candidates or API keys held by this process: the
    database is rolled back after each test, and SQLite numbers rows anew, so a customer's
    change stamp (its key rows' count and highest id) could repeat across tests with other
    content; and a key stamp compared by an earlier test would make the first comparison of
    this one fall at a time that depends on the order the tests ran in."""
    from django.core.cache import cache

    from profiles.workspace.cache import workspace_cache_clear
    from profiles.workspace.key_cache import held_clear

    cache.clear()
    workspace_cache_clear()
    held_clear()
    yield
    held_clear()
    workspace_cache_clear()
    cache.clear()


@pytest.fixture(autouse=True)
def _synchronous_decision_log(settings):
    """Write decision log rows in the test's own transaction (tests of the background writer
    turn this back on explicitly)."""
    settings.DECISION_LOG_ASYNC = False


@pytest.fixture
def redis_cache():
    """Make the default cache the local Redis server (what CACHE_URL gives in production).

    Other work shares that server: the keys carry a prefix of this test's own and only they are
    deleted afterwards (never a flush). Skipped when no server answers.
    """
    import uuid

    import redis
    from axes.handlers.proxy import AxesProxyHandler
    from django.core.cache import caches
    from django.test import override_settings

    url = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    server = redis.Redis.from_url(url, socket_connect_timeout=1)
    try:
        server.ping()
    except redis.RedisError:
        pytest.skip(f"no Redis server at {url}")
    prefix = f"test-{uuid.uuid4().hex}"
    backend = {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}
    with override_settings(CACHES={"default": {**backend, "KEY_PREFIX": prefix}}):
        AxesProxyHandler.get_implementation(force=True)  # it holds the cache it started with
        yield caches["default"]
        for key in server.scan_iter(f"{prefix}:*"):
            server.delete(key)
    AxesProxyHandler.get_implementation(force=True)


@pytest.fixture(autouse=True)
def _immediate_tasks(settings):
    """Run background tasks inside the request that enqueues them (tests of the database
    backend and its worker switch back to it explicitly)."""
    settings.TASKS = {
        "default": {
            "BACKEND": "django.tasks.backends.immediate.ImmediateBackend",
            "QUEUES": settings.TASK_QUEUES,
        }
    }


@pytest.fixture(scope="session")
def _texts_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("texts")


@pytest.fixture(autouse=True)
def _mapped_texts(settings, _texts_folder, monkeypatch):
    """Map the texts of every held layer, however small (production maps layers of 1,000
    items and more: profiles.workspace.held_texts), so that every door's tests read held
    texts through their files; the files go to the session's own folder."""
    settings.MAPPED_TEXTS_MIN_ITEMS = 1
    settings.MATERIAL_TEXTS_DIR = str(_texts_folder)
    # What a test's texts folder did to this process (a refused folder, a rebuilt file) is
    # not the next test's: the readiness door reports it.
    from profiles.workspace import held_texts

    monkeypatch.setattr(held_texts, "mapping_problem", "")
    monkeypatch.setattr(held_texts, "last_rebuilt", "")


@pytest.fixture(scope="session")
def oidc_provider(tmp_path_factory):
    """A real OpenID Connect provider (tests/oidc_provider) running on loopback."""
    provider = Provider(tmp_path_factory.mktemp("oidc-provider"))
    yield provider
    provider.stop()

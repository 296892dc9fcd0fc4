"""Fixtures of the API tests: users by role, token clients, the demo and small workspaces."""

from contextlib import contextmanager
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.core.cache import cache as django_cache
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from rest_framework.test import APIClient

from profiles.authoring.scenarios import scenarios_upsert
from profiles.import_export.imports import workspace_import
from profiles.workspace import cache
from tests.profiles.conftest import api_key_for, small_workspace

DEMO = Path(__file__).resolve().parents[3] / "profiles" / "demo"
API = "/api/v1/"
NOW = "2026-11-29T12:00:00Z"


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def fresh_caches():
    """Each test starts with no compiled workspace and no throttle history."""
    cache.workspace_cache_clear()
    django_cache.clear()
    yield
    cache.workspace_cache_clear()
    django_cache.clear()


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


def token_client(user: User) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_key_for(user)}")
    return client


@pytest.fixture
def reader(db) -> User:
    return User.objects.create_user("reader", password="reader-password-1")


@pytest.fixture
def editor(db) -> User:
    user = User.objects.create_user("editor", password="editor-password-1")
    group, _ = Group.objects.get_or_create(name="editors")
    user.groups.add(group)
    return user


@pytest.fixture
def staff(db) -> User:
    return User.objects.create_user("staff", password="staff-password-1", is_staff=True)


@pytest.fixture
def anonymous_client() -> APIClient:
    return APIClient()


@pytest.fixture
def reader_client(reader) -> APIClient:
    return token_client(reader)


@pytest.fixture
def editor_client(editor) -> APIClient:
    return token_client(editor)


@pytest.fixture
def staff_client(staff) -> APIClient:
    return token_client(staff)


def load_demo() -> None:
    import yaml

    workspace_import(text=(DEMO / "workspace.yaml").read_text(encoding="utf-8"))
    scenarios_upsert(scenarios=yaml.safe_load((DEMO / "scenarios.yaml").read_text("utf-8")))


@pytest.fixture
def demo(db) -> None:
    load_demo()


@pytest.fixture
def small(db) -> dict:
    document = small_workspace()
    workspace_import(document=document)
    return document


# --- safe change: a production profile, its staging twin, saved scenarios, a second editor ---

RELEASE_SCENARIOS = [
    {
        "name": "refund question",
        "profile": "profile-0",
        "input": {"message": "refund cards", "customer_id": "C-1"},
        "now": NOW,
        "default": True,
    },
    {"name": "no message", "profile": "profile-0", "input": {"customer_id": "C-0"}, "now": NOW},
    {
        "name": "another customer",
        "profile": "profile-0",
        "input": {"message": "cards", "customer_id": "C-2"},
        "now": NOW,
    },
    {
        "name": "staging trial",
        "profile": "profile-0-staging",
        "input": {"message": "refund", "customer_id": "C-1"},
        "now": NOW,
    },
]


def release_workspace() -> dict:
    """Return the small workspace with profile-0 in production and its staging twin."""
    document = small_workspace()
    production = document["profiles"][0]
    production["environment"] = "production"
    document["profiles"].append(
        {
            "key": "profile-0-staging",
            "name": "Profile 0 (staging)",
            "consumer": production["consumer"],
            "objective": production["objective"],
            "environment": "staging",
            "budget": 900,
            "rules": {"layer-000": {"mode": "inline", "maxItems": 1}},
        }
    )
    return document


@pytest.fixture
def release(db) -> dict:
    document = release_workspace()
    workspace_import(document=document)
    scenarios_upsert(scenarios=RELEASE_SCENARIOS)
    return document


@pytest.fixture
def reviewer(db) -> User:
    user = User.objects.create_user("reviewer", password="reviewer-password-1")
    group, _ = Group.objects.get_or_create(name="editors")
    user.groups.add(group)
    return user


@pytest.fixture
def reviewer_client(reviewer) -> APIClient:
    return token_client(reviewer)

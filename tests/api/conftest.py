"""Fixtures of the API tests: users by role, token clients, the demo and small workspaces."""

from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.core.cache import cache as django_cache
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from profiles import cache
from profiles.services import scenarios_upsert, workspace_import
from tests.profiles.conftest import small_workspace

DEMO = Path(__file__).resolve().parents[2] / "profiles" / "demo"
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


def token_client(user: User) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
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

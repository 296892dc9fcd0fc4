"""Fixtures of every feature's tests, whichever door they go through: conformance workspaces,
a small workspace, API keys; the API's users and token clients, the demo and release
workspaces; conformance case 01 as the studio's tests load it (the studio's own signed-in
editor is ``tests.profiles.studio.fixtures``', imported by the modules that use it)."""

import copy
import datetime as dt
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from django.contrib.auth.models import Group, User
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from rest_framework.test import APIClient

from profiles.authoring.scenarios import scenarios_upsert
from profiles.import_export.imports import workspace_import
from profiles.models import Profile, Scenario
from profiles.workspace.keys import (
    api_key_create,
    api_key_used,
    token_by_key_get,
    token_replace,
)

CONFORMANCE = Path(__file__).resolve().parents[1] / "resolver" / "conformance"
DEMO = Path(__file__).resolve().parents[2] / "profiles" / "demo"
API = "/api/v1/"
NOW = "2026-11-29T12:00:00Z"


def load_cases() -> list[tuple[str, dict]]:
    return [
        (path.stem, yaml.safe_load(path.read_text(encoding="utf-8")))
        for path in sorted(CONFORMANCE.glob("*.yaml"))
    ]


CASES = load_cases()


def is_workspace_error(case: dict) -> bool:
    return (case.get("expect") or {}).get("error", {}).get("code") == "INVALID_WORKSPACE"


WORKSPACE_CASES = [(stem, case) for stem, case in CASES if not is_workspace_error(case)]
INVALID_WORKSPACE_CASES = [(stem, case) for stem, case in CASES if is_workspace_error(case)]


def _scalar(value):
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _clean(value):
    """Drop absent-equivalent values (None, "", [], {}) and turn dates into ISO strings."""
    if isinstance(value, dict):
        cleaned = {str(key): _clean(item) for key, item in value.items()}
        return {key: item for key, item in cleaned.items() if item not in (None, "", [], {})}
    if isinstance(value, list):
        return [_clean(item) for item in value]
    return _scalar(value)


def normalize_document(document: dict) -> dict:
    """Return a workspace document with SPEC §2 defaults made explicit-free, for comparison.

    Two documents that mean the same thing normalize equal: null and empty values are
    absent, render and availability defaults are dropped, dates are ISO strings. A rule
    stays even when empty (an empty rule is ``ruleSource: profile``, not the default).
    """
    document = copy.deepcopy(document)
    result = {"version": 1, "consumers": [], "layers": [], "profiles": []}
    for consumer in document.get("consumers") or []:
        entry = _clean(consumer)
        render = entry.get("render", {})
        if render.get("format") == "markdown":
            render.pop("format")
        if render.get("includeCurrentness") is False:
            render.pop("includeCurrentness")
        if not render:
            entry.pop("render", None)
        result["consumers"].append(entry)
    for layer in document.get("layers") or []:
        items = [_clean(item) for item in layer.get("items") or []]
        entry = _clean({k: v for k, v in layer.items() if k != "items"})
        if entry.get("availability") == "auto":
            entry.pop("availability")
        entry["items"] = items
        result["layers"].append(entry)
    for profile in document.get("profiles") or []:
        rules = {str(key): _clean(rule or {}) for key, rule in (profile.get("rules") or {}).items()}
        entry = _clean({k: v for k, v in profile.items() if k != "rules"})
        entry["rules"] = rules
        result["profiles"].append(entry)
    return result


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def small_workspace(*, layers: int = 3, items: int = 4, profiles: int = 2) -> dict:
    """Return a valid workspace of ``layers`` layers × ``items`` items and some profiles."""
    document = {
        "version": 1,
        "consumers": [
            {"key": "assistant", "name": "Assistant", "render": {"format": "markdown"}},
            {"key": "reviewer", "name": "Reviewer", "render": {"format": "xml"}},
        ],
        "layers": [],
        "profiles": [],
    }
    for layer_index in range(layers):
        layer = {
            "key": f"layer-{layer_index:03d}",
            "name": f"Layer {layer_index}",
            "items": [
                {
                    "path": f"docs/item-{item_index:04d}.md",
                    "title": f"Item {item_index} of layer {layer_index}",
                    "body": f"Refund guidance number {item_index}. Cards take {item_index} days.",
                    "metadata": {"updated": "2026-11-01", "customer_id": f"C-{item_index % 3}"},
                }
                for item_index in range(items)
            ],
        }
        if layer_index % 3 == 1:
            layer["itemFilter"] = {"customer_id": "customer_id"}
        document["layers"].append(layer)
    for profile_index in range(profiles):
        rules = {}
        for layer_index in range(0, layers, 2):
            rules[f"layer-{layer_index:03d}"] = {
                "mode": "retrieve" if layer_index % 4 == 2 else "inline",
                "priority": layer_index,
                "maxItems": 3,
            }
        document["profiles"].append(
            {
                "key": f"profile-{profile_index}",
                "name": f"Profile {profile_index}",
                "consumer": "assistant" if profile_index % 2 == 0 else "reviewer",
                "objective": f"objective-{profile_index}",
                "budget": 800,
                "rules": rules,
            }
        )
    return document


REQUEST = {
    "profile": "profile-0",
    "input": {"message": "refund cards", "customer_id": "C-1"},
    "now": NOW,
}


# --- API keys ---------------------------------------------------------------------------------

_user_keys: dict[int, str] = {}


def api_key_for(user, *, scopes=None, environments=None, expires_at=None, name="test") -> str:
    """Return a working API key of ``user``: the user's token (the same one on each call while
    it lives), or with ``scopes`` a new scoped key."""
    if scopes is not None:
        return api_key_create(
            owner=user, name=name, scopes=scopes, environments=environments, expires_at=expires_at
        ).key
    known = _user_keys.get(user.pk)
    if known is not None:
        record = token_by_key_get(known)
        if record is not None and record.owner_id == user.pk and not record.revoked:
            return known
    record, key = token_replace(user=user)
    # As if just used: query-count tests then count the steady state of a request, not the
    # write of ``lastUsedAt`` that a key's first request of each minute makes.
    api_key_used(key=record)
    _user_keys[user.pk] = key
    return key


# --- the API's users and token clients; the demo and small workspaces --------------------


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


def join_editors(user: User) -> None:
    user.groups.add(Group.objects.get_or_create(name="editors")[0])


def editors_member(name: str) -> User:
    """Return a new member of the editors group, whose password is ``<name>-password-1``."""
    user = User.objects.create_user(name, password=f"{name}-password-1")
    join_editors(user)
    return user


@pytest.fixture
def editor(db) -> User:
    return editors_member("editor")


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
    return editors_member("reviewer")


@pytest.fixture
def reviewer_client(reviewer) -> APIClient:
    return token_client(reviewer)


# --- conformance case 01 as the studio's tests load it ------------------------------------

CASE_01 = next(CONFORMANCE.glob("01-*.yaml"))
CASE_01_PROFILE = "support-answer"


def load_case_01() -> dict:
    return yaml.safe_load(CASE_01.read_text(encoding="utf-8"))


@pytest.fixture
def workspace(db) -> Profile:
    """Import conformance case 01 and save its request as the profile's default scenario."""
    case = load_case_01()
    workspace_import(document=case["workspace"], mode="replace")
    profile = Profile.objects.get(key=CASE_01_PROFILE)
    request = case["request"]
    Scenario.objects.create(
        name="Dana's card refund",
        profile=profile,
        input=request["input"],
        now=request["now"],
        is_default=True,
    )
    return profile


@pytest.fixture
def viewer(db) -> User:
    """A reader (signed in, not in the editors group): may look, may not write."""
    return User.objects.create_user("viewer", "", "viewer-pass-123")

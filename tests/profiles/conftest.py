"""Fixtures for the database side: conformance workspaces, a small workspace and a scaler."""

import copy
import datetime as dt
from pathlib import Path

import pytest
import yaml

from profiles.workspace import cache
from profiles.workspace.keys import (
    api_key_create,
    api_key_used,
    token_by_key_get,
    token_replace,
)

CONFORMANCE = Path(__file__).resolve().parents[1] / "resolver" / "conformance"
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
def fresh_workspace_cache():
    """Each test starts with an empty per-process cache (the database is rolled back)."""
    cache.workspace_cache_clear()
    yield
    cache.workspace_cache_clear()


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

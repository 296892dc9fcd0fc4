"""The demo workspace (profiles/demo): valid, large enough, and every saved scenario resolves.

Between them, the scenarios must show every decision reason, applicability reason, reference
reason, status, blocker, currentness and render format at least once: the demo is how a new
user learns what each of them means. No database is needed for that.

Loaded into a database (``load_demo``, as ``make run`` does), the demo starts protected: its
production needs a change request with one approval, and a second editor is there to give it.
"""

import re
from collections import Counter
from functools import cache
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.core.management import call_command

from profiles.import_export.demo import DEMO_PRODUCTION_ENVIRONMENT
from profiles.models import Activity, Environment, Profile
from profiles.versioning.environments import environment_update
from profiles.workspace.permissions import Role, user_role
from resolver import compile_workspace, validate_workspace
from resolver.cli import load_workspace_text

DEMO_DIR = Path(__file__).resolve().parents[2] / "profiles" / "demo"
WORKSPACE_PATH = DEMO_DIR / "workspace.yaml"
SCENARIOS_PATH = DEMO_DIR / "scenarios.yaml"
SCENARIO_FIELDS = {"name", "profile", "input", "now", "description", "format", "availability"}

EXPECTED_COVERAGE = {
    "decision": {
        "EXCLUDED_BY_PROFILE",
        "LAYER_UNAVAILABLE",
        "AVAILABILITY_UNKNOWN",
        "LAYER_EMPTY",
        "APPLICABILITY_UNKNOWN",
        "NOT_APPLICABLE",
        "STALE_EXCLUDED",
        "INCLUDED_BY_PROFILE",
        "INCLUDED_APPLICABLE",
    },
    "applicability": {
        "IN_SCOPE",
        "MATCHED:customer_id",
        "OBJECTIVE_OUT_OF_SCOPE",
        "CONSUMER_OUT_OF_SCOPE",
        "INPUT_NOT_PROVIDED:customer_id",
        "NO_MATCHING_MATERIAL",
    },
    "reference": {
        "ON_DEMAND",
        "BEYOND_MAX_ITEMS",
        "LAYER_TOKEN_LIMIT",
        "NOT_RETRIEVED",
        "BUDGET_TRIMMED",
    },
    "status": {"RESOLVED", "RENDERING_INCOMPLETE", "BLOCKED"},
    "blocker": {"MISSING_REQUIRED_CONTEXT", "REQUIRED_CONTEXT_OVER_BUDGET"},
    "currentness": {"CURRENT", "UNKNOWN", "NOT_CURRENT"},
    "format": {"markdown", "xml"},
}


@cache
def demo_workspace() -> dict:
    return load_workspace_text(WORKSPACE_PATH.read_text(encoding="utf-8"))


@cache
def demo_scenarios() -> list[dict]:
    return yaml.safe_load(SCENARIOS_PATH.read_text(encoding="utf-8"))


@cache
def compiled_demo():
    return compile_workspace(demo_workspace())


def scenario_request(scenario: dict) -> dict:
    """Return the SPEC §3 request a saved scenario stands for."""
    request = {"profile": scenario["profile"], "input": scenario.get("input") or {}}
    for field in ("now", "format", "availability"):
        if scenario.get(field):
            request[field] = scenario[field]
    return request


@cache
def resolutions() -> tuple[tuple[dict, dict], ...]:
    return tuple(
        (scenario, compiled_demo().resolve(scenario_request(scenario)))
        for scenario in demo_scenarios()
    )


def test_demo_workspace__validated__reports_no_issue():
    assert validate_workspace(demo_workspace()) == []


def test_demo_workspace__counted__has_enough_consumers_layers_items_and_profiles():
    workspace = demo_workspace()
    items = sum(len(layer.get("items") or []) for layer in workspace["layers"])
    environments = {profile.get("environment") for profile in workspace["profiles"]}

    assert len(workspace["consumers"]) >= 4
    assert len(workspace["layers"]) >= 8
    assert items >= 200
    assert len(workspace["profiles"]) >= 6
    assert environments == {"production", "staging", None}


def test_demo_workspace__customer_layers__filter_on_customer_id_and_require_it():
    layers = {layer["key"]: layer for layer in demo_workspace()["layers"]}

    for key in ("customer", "tickets", "orders"):
        assert layers[key]["itemFilter"] == {"customer_id": "customer_id"}, key
        assert layers[key]["requiresInput"] == ["customer_id"], key
    customers = {item["metadata"]["customer_id"] for item in layers["customer"]["items"]}
    assert len(customers) >= 5


def test_demo_scenarios__listed__are_12_to_20_with_unique_names_and_a_fixed_now():
    scenarios = demo_scenarios()
    names = [scenario["name"] for scenario in scenarios]

    assert 12 <= len(scenarios) <= 20
    assert len(set(names)) == len(names)
    for scenario in scenarios:
        assert set(scenario) - {"default"} <= SCENARIO_FIELDS, scenario["name"]
        assert scenario["now"], scenario["name"]
        assert scenario["description"].strip(), scenario["name"]


def test_demo_scenarios__per_profile__exactly_one_default():
    profile_keys = [profile["key"] for profile in demo_workspace()["profiles"]]
    defaults = Counter(s["profile"] for s in demo_scenarios() if s.get("default"))

    assert {key: defaults[key] for key in profile_keys} == dict.fromkeys(profile_keys, 1)


@pytest.mark.parametrize("scenario", demo_scenarios(), ids=lambda scenario: scenario["name"])
def test_demo_scenario__resolved__names_an_existing_profile_and_returns_a_resolution(scenario):
    profile_keys = {profile["key"] for profile in demo_workspace()["profiles"]}
    assert scenario["profile"] in profile_keys

    resolution = compiled_demo().resolve(scenario_request(scenario))

    assert resolution["profile"]["key"] == scenario["profile"]
    assert resolution["status"] in EXPECTED_COVERAGE["status"]


def test_demo_scenarios__all_resolved__cover_every_reason_status_and_format():
    covered = {category: set() for category in EXPECTED_COVERAGE}
    for _, resolution in resolutions():
        covered["status"].add(resolution["status"])
        covered["currentness"].add(resolution["currentness"])
        covered["blocker"].update(blocker["code"] for blocker in resolution["blockers"])
        covered["reference"].update(ref["reason"] for ref in resolution["references"])
        if resolution["output"] is not None:
            covered["format"].add(resolution["output"]["format"])
        for layer in resolution["layers"]:
            covered["decision"].add(layer["decision"]["reason"])
            if layer["applicable"]["reason"] is not None:
                covered["applicability"].add(layer["applicable"]["reason"])

    missing = {c: sorted(EXPECTED_COVERAGE[c] - covered[c]) for c in EXPECTED_COVERAGE}
    unexpected = {c: sorted(covered[c] - EXPECTED_COVERAGE[c]) for c in EXPECTED_COVERAGE}
    assert covered == EXPECTED_COVERAGE, f"missing: {missing}; unexpected: {unexpected}"


def test_demo_scenarios__defaults__show_each_status_in_the_profile_list():
    statuses = {
        resolution["status"] for scenario, resolution in resolutions() if scenario.get("default")
    }

    assert statuses == EXPECTED_COVERAGE["status"]


# --- loaded: the demo starts protected, with a second editor ---------------------------------

SIGN_IN = re.compile(r"Log in at (\S+) as demo / (\S+) \(staff\)")
SECOND_EDITOR = re.compile(r"A second editor to approve change requests: reviewer / (\S+)")


def load_demo(*args: str) -> str:
    out = StringIO()
    call_command("load_demo", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def production() -> tuple[bool, int]:
    row = Environment.objects.get(key=DEMO_PRODUCTION_ENVIRONMENT)
    return row.requires_change_request, row.approvals


def test_demo_workspace__production_environment__is_the_one_its_production_profiles_name():
    environments = {profile.get("environment") for profile in demo_workspace()["profiles"]}

    assert DEMO_PRODUCTION_ENVIRONMENT in environments


@pytest.mark.django_db
def test_load_demo__fresh__production_protected_with_one_approval_recorded_as_the_cli():
    output = load_demo("--no-user")

    assert production() == (True, 1)
    assert 'Environment "production" is protected' in output
    entry = Activity.objects.get(kind="environment", key=DEMO_PRODUCTION_ENVIRONMENT)
    assert (entry.origin, entry.actor_name) == ("cli", "")
    # Its profiles are the protected ones; staging's are not.
    assert set(Profile.objects.filter(environment="production").values_list("key", flat=True))
    assert not Environment.objects.filter(key="staging", requires_change_request=True).exists()


@pytest.mark.django_db
def test_load_demo__reset_after_protection_lifted_or_changed__production_protected_again():
    load_demo("--no-user")
    environment_update(key="production", requires_change_request=False, approvals=3, user=None)

    load_demo("--reset", "--yes", "--no-user")

    assert production() == (True, 1)


@pytest.mark.django_db
def test_load_demo__reset_already_protected__environment_settings_not_rewritten():
    load_demo("--no-user")
    before = Environment.objects.get(key="production").updated_at

    load_demo("--reset", "--yes", "--no-user")

    assert Environment.objects.get(key="production").updated_at == before
    assert Activity.objects.filter(kind="environment").count() == 1


@pytest.mark.django_db
def test_load_demo__fresh__prints_both_sign_ins_that_work_demo_staff_reviewer_editor():
    output = load_demo("--url", "http://127.0.0.1:8123/")

    url, demo_password = SIGN_IN.search(output).groups()
    (reviewer_password,) = SECOND_EDITOR.search(output).groups()
    assert url == "http://127.0.0.1:8123/"
    demo, reviewer = (get_user_model().objects.get(username=name) for name in ("demo", "reviewer"))
    assert demo.check_password(demo_password) and reviewer.check_password(reviewer_password)
    assert (user_role(demo), user_role(reviewer)) == (Role.STAFF, Role.EDITOR)
    assert reviewer.groups.filter(name="editors").exists()
    assert not reviewer.is_staff and not reviewer.is_superuser
    assert Activity.objects.filter(kind="member", key="reviewer", origin="cli").exists()


@pytest.mark.django_db
def test_load_demo__run_twice__second_run_changes_nothing_and_says_how_to_reset_passwords():
    load_demo()
    users = list(get_user_model().objects.order_by("username").values_list("username", "password"))
    environment = Environment.objects.get(key="production").updated_at
    activity = Activity.objects.count()

    second = load_demo()

    assert "changepassword demo" in second
    assert "changepassword reviewer" in second
    assert not SIGN_IN.search(second) and not SECOND_EDITOR.search(second)
    assert (
        list(get_user_model().objects.order_by("username").values_list("username", "password"))
        == users
    )
    assert Environment.objects.get(key="production").updated_at == environment
    assert Activity.objects.count() == activity


@pytest.mark.django_db
def test_load_demo__protection_lifted_then_started_again__stays_lifted():
    load_demo("--no-user")
    environment_update(key="production", requires_change_request=False, approvals=1, user=None)

    load_demo("--no-user")

    assert production() == (False, 1)


@pytest.mark.django_db
def test_load_demo__no_user__creates_neither_user_but_protects_production():
    output = load_demo("--no-user")

    assert not get_user_model().objects.exists()
    assert "Log in at" not in output and "second editor" not in output
    assert production() == (True, 1)

"""Costs bounded per caller (issue 22): the impact dry run throttled in its own scope, one
impact resolving a bounded number of scenarios (the rest listed as skipped, the next call
named), and a draft naming 100,000 unknown layers refused with a bounded list of issues at
every door that takes a draft of rules."""

import json

import pytest

from profiles.authoring.scenarios import scenarios_upsert
from profiles.models import ChangeRequest, Profile
from tests.profiles.conftest import API, NOW

pytestmark = pytest.mark.django_db

IMPACT = API + "profiles/profile-0/impact"
FEWER_ITEMS = {"rules": {"layer-000": {"maxItems": 1}}}
# 100,000 rules of layers that do not exist: a 3.5 MB body.
UNKNOWN_LAYERS = {f"no-such-layer-{n:06d}": {"maxItems": 1} for n in range(100_000)}


@pytest.fixture
def rates(settings):
    def set_rates(**rates):
        settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}

    return set_rates


# --- the throttle --------------------------------------------------------------------------


def test_impact__over_its_rate__429_with_retry_after(release, reader_client, rates):
    rates(impact="2/minute")

    statuses = [reader_client.post(IMPACT, {}, format="json").status_code for _ in range(3)]

    assert statuses == [200, 200, 429]
    throttled = reader_client.post(IMPACT, {}, format="json")
    assert throttled.json()["error"]["code"] == "THROTTLED"
    assert int(throttled["Retry-After"]) >= 1


def test_impact__own_scope__the_preview_rate_is_untouched(release, reader_client, rates):
    rates(impact="1/minute", preview="1/minute")
    assert reader_client.post(IMPACT, {}, format="json").status_code == 200

    preview = reader_client.post(API + "profiles/profile-0/preview", {}, format="json")

    assert preview.status_code == 200


def test_impact__default_rate__thirty_a_minute(settings):
    assert settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["impact"] == "30/minute"


# --- the bound of resolutions --------------------------------------------------------------


def test_impact__more_scenarios_than_the_bound__rest_skipped_and_next_names_the_call(
    release, reader_client, settings
):
    # Given a bound of 4 resolutions (2 scenarios) and 3 saved scenarios of profile-0,
    settings.IMPACT_MAX_RESOLUTIONS = 4

    body = reader_client.post(IMPACT, FEWER_ITEMS, format="json").json()

    # the first 2 are resolved, the third is named as skipped,
    assert body["summary"] == {"scenarios": 3, "changed": 2, "skipped": 1}
    assert [entry.get("skipped", False) for entry in body["impact"]] == [False, False, True]
    skipped = body["impact"][2]
    assert (skipped["before"], skipped["after"], skipped["changed"]) == (None, None, False)
    # and the answer names the call that resolves the rest.
    assert body["next"].endswith("/api/v1/profiles/profile-0/impact?offset=2")
    rest = reader_client.post(body["next"], FEWER_ITEMS, format="json").json()
    assert [entry.get("skipped", False) for entry in rest["impact"]] == [True, True, False]
    assert rest["impact"][2]["scenario"] == skipped["scenario"]
    assert rest["impact"][2]["after"] is not None
    assert rest["next"] is None


def test_impact__within_the_bound__nothing_skipped_and_no_next(release, reader_client):
    body = reader_client.post(IMPACT, FEWER_ITEMS, format="json").json()

    assert body["summary"]["skipped"] == 0
    assert body["next"] is None


@pytest.mark.parametrize("offset", ["-1", "x", "²"])
def test_impact__offset_not_a_whole_number__400_naming_it(release, reader_client, offset):
    response = reader_client.post(f"{IMPACT}?offset={offset}", {}, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "offset"


def test_change_request__more_scenarios_than_the_bound__same_rule_impact_skips_the_rest(
    release, editor_client, settings
):
    settings.IMPACT_MAX_RESOLUTIONS = 4
    scenarios_upsert(
        scenarios=[
            {"name": f"extra {n}", "profile": "profile-0", "input": {}, "now": NOW}
            for n in range(3)
        ]
    )

    response = editor_client.post(
        API + "change-requests",
        {"profile": "profile-0", "title": "Fewer items", "changes": FEWER_ITEMS},
        format="json",
    )

    # The request is proposed (a change request is never refused for its scenario count),
    assert response.status_code == 201
    body = response.json()
    # its impact resolved 2 of the 6 scenarios and names the 4 others as skipped.
    assert body["summary"]["scenarios"] == 6
    assert body["summary"]["skipped"] == 4
    stored = ChangeRequest.objects.get(pk=body["id"]).impact
    assert sum(1 for entry in stored if entry.get("skipped")) == 4


# --- a draft naming 100,000 unknown layers ------------------------------------------------


def assert_bounded_unknown_layers(error: dict, prefix: str) -> None:
    assert error["code"] == "INVALID_WORKSPACE"
    issues = error["issues"]
    # At most 100 issues: the first 99 unknown layers, then one counting the rest.
    assert len(issues) == 100
    assert issues[0] == {
        "path": f"{prefix}rules.no-such-layer-000000",
        "message": 'layer "no-such-layer-000000" does not exist',
    }
    assert issues[98]["path"] == f"{prefix}rules.no-such-layer-000098"
    assert issues[99]["path"] == f"{prefix}rules"
    assert issues[99]["message"].startswith("99,901 more rules name layers that do not exist")


def test_impact__draft_of_100000_unknown_layers__400_with_a_bounded_list(release, reader_client):
    response = reader_client.post(
        IMPACT, json.dumps({"rules": UNKNOWN_LAYERS}), content_type="application/json"
    )

    assert response.status_code == 400
    assert_bounded_unknown_layers(response.json()["error"], "changes.")
    assert len(response.content) < 20_000  # was 9.2 MB: every one of the 100,000 listed


def test_change_request__draft_of_100000_unknown_layers__400_bounded_nothing_proposed(
    release, editor_client
):
    body = {"profile": "profile-0", "title": "Many", "changes": {"rules": UNKNOWN_LAYERS}}

    response = editor_client.post(
        API + "change-requests", json.dumps(body), content_type="application/json"
    )

    assert response.status_code == 400
    assert_bounded_unknown_layers(response.json()["error"], "changes.")
    assert not ChangeRequest.objects.exists()


def test_profile_patch__rules_of_100000_unknown_layers__400_bounded_nothing_written(
    release, editor_client
):
    response = editor_client.patch(
        API + "profiles/profile-1",
        json.dumps({"rules": UNKNOWN_LAYERS}),
        content_type="application/json",
    )

    assert response.status_code == 400
    error = response.json()["error"]
    assert_bounded_unknown_layers(error, error["issues"][0]["path"].partition("rules.")[0])
    assert Profile.objects.get(key="profile-1").version == 1


def test_preview__draft_of_100000_unknown_layers__400_at_the_first(release, reader_client):
    response = reader_client.post(
        API + "profiles/profile-0/preview",
        json.dumps({"rules": UNKNOWN_LAYERS}),
        content_type="application/json",
    )

    assert response.status_code == 400
    assert len(response.json()["error"]["issues"]) == 1


def test_profile_patch__150_issues__100_listed_and_the_rest_counted(release, editor_client):
    # Rules of existing layers, each with 50 unknown fields: 150 issues of the engine's own.
    rules = {f"layer-00{n}": {f"field{m}": 1 for m in range(50)} for n in range(3)}

    response = editor_client.patch(API + "profiles/profile-1", {"rules": rules}, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert len(error["issues"]) == 100
    assert error["moreIssues"] == 50

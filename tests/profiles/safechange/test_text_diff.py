"""The rendered text diff of a version diff and of the compare view: for a chosen saved
scenario, the lines a change removes and adds to the text the consumer receives, over the API
and in the studio; an unknown scenario is a clear refusal, never a 500."""

import pytest
from django.contrib.auth.models import Group, User
from django.core.cache import cache as django_cache
from django.urls import reverse

from profiles.import_export.imports import workspace_import
from profiles.models import Profile, Scenario
from profiles.safechange.text_diff import TEXT_DIFF_MAX_LINES, text_diff
from tests.profiles.conftest import API, NOW, small_workspace, token_client

pytestmark = pytest.mark.django_db

DIFF = API + "profiles/profile-0/diff"


@pytest.fixture(autouse=True)
def no_throttle_history():
    django_cache.clear()
    yield
    django_cache.clear()


@pytest.fixture
def small(db) -> dict:
    document = small_workspace()
    workspace_import(document=document)
    return document


@pytest.fixture
def editor(db) -> User:
    user = User.objects.create_user("editor", password="editor-password-1")
    user.groups.add(Group.objects.get_or_create(name="editors")[0])
    return user


@pytest.fixture
def versions(small, editor):
    """profile-0: version 1 admits 3 items of layer-000, version 2 only 1; a saved scenario."""
    Scenario.objects.create(
        name="refund question",
        profile=Profile.objects.get(key="profile-0"),
        input={"message": "refund cards", "customer_id": "C-1"},
        now=NOW,
    )
    response = token_client(editor).patch(
        API + "profiles/profile-0/rules/layer-000", {"maxItems": 1}, format="json"
    )
    assert response.status_code == 200
    return token_client(editor)


def test_diff_api__scenario__text_shows_the_removed_lines(versions):
    response = versions.get(DIFF, {"from": 1, "to": 2, "scenario": "refund question"})

    assert response.status_code == 200
    text = response.json()["text"]
    assert text["scenario"] == "refund question"
    inline = "### Item 1 of layer 0"  # version 2 offers it as a reference only
    assert inline in text["before"] and inline not in text["after"]
    removed = [line for line in text["diff"].splitlines() if line.startswith("-")]
    assert f"-{inline}" in removed
    assert text["diff"].startswith("--- version 1\n+++ version 2\n")
    assert response.json()["changes"] == [{"path": "rules.layer-000.maxItems", "from": 3, "to": 1}]


def test_diff_api__no_scenario__no_text(versions):
    response = versions.get(DIFF, {"from": 1, "to": 2})

    assert response.status_code == 200
    assert "text" not in response.json()


def test_diff_api__unknown_scenario__404_naming_scenario(versions):
    response = versions.get(DIFF, {"from": 1, "to": 2, "scenario": "no such scenario"})

    assert response.status_code == 404
    error = response.json()["error"]
    assert error["path"] == "scenario" and "no such scenario" in error["message"]


def test_diff_api__scenario_name_too_long__400(versions):
    response = versions.get(DIFF, {"scenario": "s" * 201})

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "scenario"


def test_diff_api__same_version_both_sides__same_text_empty_diff(versions):
    response = versions.get(DIFF, {"from": 2, "to": 2, "scenario": "refund question"})

    text = response.json()["text"]
    assert text["before"] == text["after"] and text["diff"] == ""


def test_diff_api__scenario__throttled_as_two_resolutions(versions, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "resolve": "3/minute",
        },
    }
    query = {"from": 1, "to": 2, "scenario": "refund question"}

    assert versions.get(DIFF, query).status_code == 200
    assert versions.get(DIFF, query).status_code == 429
    assert versions.get(DIFF, {"from": 1, "to": 2}).status_code == 200  # resolves nothing


def test_history_page__scenario__shows_removed_lines_labelled(versions, client, editor):
    client.force_login(editor)

    response = client.get(
        reverse("profile-history", args=["profile-0"]),
        {"from": 1, "to": 2, "scenario": "refund question"},
    )

    assert response.status_code == 200
    page = response.content.decode()
    assert 'data-text-diff="changed"' in page
    assert '<li class="removed"><span class="visually-hidden">removed: </span>' in page
    assert "### Item 1 of layer 0" in page
    scenario = Scenario.objects.get(name="refund question")
    assert f'<option value="{scenario.pk}" selected>refund question</option>' in page


def test_history_page__unknown_scenario__400_with_a_clear_message(versions, client, editor):
    client.force_login(editor)

    response = client.get(
        reverse("profile-history", args=["profile-0"]), {"scenario": "no such scenario"}
    )

    assert response.status_code == 400
    assert "has no saved scenario &quot;no such scenario&quot;" in response.content.decode()


def test_compare_page__two_profiles__rendered_text_diff_of_the_sample(versions, client, editor):
    client.force_login(editor)

    response = client.get(
        reverse("profile-compare"),
        {"a": "profile-0", "b": "profile-1", "message": "refund cards", "customer_id": "C-1"},
    )

    assert response.status_code == 200
    page = response.content.decode()
    assert 'id="text-diff-heading"' in page
    assert 'data-text-diff="changed"' in page


def test_text_diff__long_texts__bounded_and_counted():
    before = "\n".join(f"line {n}" for n in range(TEXT_DIFF_MAX_LINES))
    after = "\n".join(f"other {n}" for n in range(TEXT_DIFF_MAX_LINES))

    diff = text_diff(before, after, scenario="big")

    assert len(diff.diff.splitlines()) == TEXT_DIFF_MAX_LINES
    assert diff.truncated == 2 * TEXT_DIFF_MAX_LINES + 3 - TEXT_DIFF_MAX_LINES


def test_text_diff__blocked_side__diff_against_nothing():
    diff = text_diff(None, "## KB\nRefunds take 5 days.", scenario="s")

    assert [line.kind for line in diff.lines] == ["hunk", "added", "added"]
    assert diff.changed

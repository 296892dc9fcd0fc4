"""Issue 38: one convention for naming a saved scenario in a studio URL (``?scenario=``): the
links carry its id; the editor, History and Compare accept its id or its name."""

# ruff: noqa: F811 (the studio's editor fixtures, imported: the tests' arguments)

from urllib.parse import urlencode

import pytest
from django.urls import reverse

from profiles.models import Scenario
from tests.profiles.studio.fixtures import editor, editor_client  # noqa: F401 (the studio's)

pytestmark = pytest.mark.django_db

EDITOR = "/profiles/support-answer/"
HISTORY = "/profiles/support-answer/history/"


@pytest.fixture
def other(workspace) -> Scenario:
    return Scenario.objects.create(
        name="Refund for C-2, by name",
        profile=workspace,
        input={"message": "refund my card", "customer_id": "C-2"},
        now="2026-03-01T12:00:00Z",
    )


def picked(html: str, scenario: Scenario) -> bool:
    return f'<option value="{scenario.pk}" selected>' in html


@pytest.mark.parametrize("by", ["id", "name"])
def test_editor__scenario_named_by_id_or_name__loaded(editor_client, other, by):
    value = str(other.pk) if by == "id" else other.name

    response = editor_client.get(f"{EDITOR}?{urlencode({'scenario': value})}")

    assert response.status_code == 200
    html = response.content.decode()
    assert picked(html, other)
    assert 'value="C-2"' in html
    assert f"{EDITOR}?scenario={other.pk}" in html  # the shareable link names it by id


def test_editor__scenario_of_no_such_id_or_name__404(editor_client, workspace):
    assert editor_client.get(EDITOR, {"scenario": "no such scenario"}).status_code == 404


@pytest.mark.parametrize("by", ["id", "name"])
def test_history__scenario_named_by_id_or_name__rendered_text_shown(editor_client, other, by):
    value = str(other.pk) if by == "id" else other.name

    response = editor_client.get(HISTORY, {"scenario": value})

    assert response.status_code == 200
    html = response.content.decode()
    assert "data-text-diff=" in html
    assert picked(html, other)
    assert f'<option value="{other.pk}"' in html  # the form sends the id


def test_history__scenario_of_another_profile_by_id__400(editor_client, workspace):
    elsewhere = Scenario.objects.exclude(profile=workspace).first() or Scenario.objects.create(
        name="Another profile's",
        profile=type(workspace).objects.exclude(pk=workspace.pk).first(),
        input={"message": "hello"},
    )

    response = editor_client.get(HISTORY, {"scenario": str(elsewhere.pk)})

    assert response.status_code == 400


@pytest.mark.parametrize("by", ["id", "name"])
def test_compare__scenario_named_by_id_or_name__loaded(editor_client, other, by):
    value = str(other.pk) if by == "id" else other.name
    query = {"a": "support-answer", "b": "qa-review", "scenario": value, "load": "1"}

    response = editor_client.get(reverse("profile-compare"), query)

    assert response.status_code == 200
    assert f'<option value="{other.pk}" selected>' in response.content.decode()

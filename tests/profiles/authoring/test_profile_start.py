"""What a new profile's rules start from (``profile_create(start_from=…)``): every layer on
the default rule, no layer, only some layers, or a copy of another profile's rules."""

import pytest

from profiles.authoring.profiles import StartFrom, profile_create
from profiles.import_export.documents import workspace_export
from profiles.import_export.imports import workspace_import
from profiles.models import Profile
from profiles.workspace.writing import EntryInvalid
from tests.profiles.conftest import small_workspace

pytestmark = pytest.mark.django_db

NEW = {"key": "release-bot", "consumer": "assistant", "objective": "changelog", "budget": 500}


def saved_rules(key: str) -> dict:
    entry = next(p for p in workspace_export()["profiles"] if p["key"] == key)
    return entry.get("rules") or {}


def test_profile_create__start_from_none__every_layer_excluded():
    workspace_import(document=small_workspace())

    profile_create(document=NEW, start_from=StartFrom(kind="none"))

    assert saved_rules("release-bot") == {
        key: {"participation": "exclude"} for key in ("layer-000", "layer-001", "layer-002")
    }


def test_profile_create__start_from_layers__the_others_excluded_the_chosen_on_default():
    workspace_import(document=small_workspace())

    profile_create(document=NEW, start_from=StartFrom(kind="layers", layers=("layer-001",)))

    assert saved_rules("release-bot") == {
        "layer-000": {"participation": "exclude"},
        "layer-002": {"participation": "exclude"},
    }


def test_profile_create__start_from_copy__the_rules_of_that_profile():
    workspace_import(document=small_workspace())

    profile_create(document=NEW, start_from=StartFrom(kind="copy", profile="profile-0"))

    assert saved_rules("release-bot") == saved_rules("profile-0") != {}


def test_profile_create__start_from_default__no_rule():
    workspace_import(document=small_workspace())

    profile_create(document=NEW, start_from=StartFrom())

    assert saved_rules("release-bot") == {}


@pytest.mark.parametrize(
    ("start", "path", "message"),
    [
        (StartFrom(kind="layers", layers=("layer-001", "nope")), "startFrom.layers[1]", "nope"),
        (StartFrom(kind="copy", profile="ghost"), "startFrom.profile", "ghost"),
        (StartFrom(kind="everything"), "startFrom.kind", "must be one of"),
    ],
)
def test_profile_create__start_from_unknown__refused_at_its_field_nothing_written(
    start, path, message
):
    workspace_import(document=small_workspace())

    with pytest.raises(EntryInvalid) as caught:
        profile_create(document=NEW, start_from=start)

    (issue,) = caught.value.field_issues
    assert issue.path == path
    assert message in issue.message
    assert not Profile.objects.filter(key="release-bot").exists()

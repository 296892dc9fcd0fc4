"""A profile's selection written one entry at a time (issue 33): the studio, the API, the
admin and change sets write through ``profile_update``, a restore, an applied change request
and a promotion through ``profile_write_document``; whatever part of the selection changes,
the stored profile is the document's and resolves as the CLI resolves the document."""

import copy

import pytest
from django.contrib.auth.models import Group, User

from profiles.authoring.profiles import profile_update, profile_write_document
from profiles.import_export.imports import workspace_import
from profiles.models import Profile
from profiles.safechange.change_requests import change_request_apply, change_request_approve
from profiles.safechange.change_sets import change_set_create
from profiles.safechange.selectors import change_request_etag
from resolver.documents import dump_yaml
from tests.profiles.import_export.test_import_sequences import CASES, assert_stored_as_the_file

pytestmark = pytest.mark.django_db

CASE = CASES[next(stem for stem in CASES if stem.startswith("26-"))]
MOVES = {
    "consumer": {"consumer": "ops-agent"},
    "environment": {"environment": "production"},
    "consumer and environment": {"consumer": "ops-agent", "environment": "staging"},
}


def write(writer: str, entry: dict, moved: dict) -> None:
    if writer == "update":
        profile_update(key=entry["key"], changes=moved)
    elif writer == "update, replace":
        profile_update(
            key=entry["key"], changes={k: v for k, v in entry.items() if k != "key"}, replace=True
        )
    else:
        profile_write_document(key=entry["key"], document=entry, user=None)


@pytest.mark.parametrize("writer", ["update", "update, replace", "write document"])
@pytest.mark.parametrize("moved", list(MOVES))
def test_profile_writers__selection_changes_but_the_objective__stored_as_the_document(
    tmp_path, writer, moved
):
    # Given the workspace of case 26
    workspace_import(document=copy.deepcopy(CASE["workspace"]))

    # When a writer moves support-answer to another consumer and/or environment
    document = copy.deepcopy(CASE["workspace"])
    entry = document["profiles"][0]
    entry.update(MOVES[moved])
    write(writer, entry, MOVES[moved])

    # Then the workspace is the document, and answers as the CLI does for the document
    path = tmp_path / "workspace.yaml"
    path.write_text(dump_yaml(document), encoding="utf-8")
    assert_stored_as_the_file(path, document, CASE["request"])


def editor(name: str) -> User:
    user = User.objects.create_user(name)
    user.groups.add(Group.objects.get_or_create(name="editors")[0])
    return user


def apply_set(changes: list[dict]) -> None:
    """Open a change set with ``changes``, approve it and apply it."""
    author, approver = editor("author"), editor("approver")
    change_request = change_set_create(changes=changes, user=author)
    change_request.refresh_from_db()
    change_request_approve(
        pk=change_request.pk, user=approver, if_match=change_request_etag(change_request)
    )
    change_request_apply(pk=change_request.pk, user=approver)


def update(key: str, **value) -> dict:
    return {"kind": "profile", "op": "update", "key": key, "value": value}


SWAPS = {
    # support-answer and qa-review take each other's consumer and objective
    "consumer and objective": (
        [
            update("support-answer", consumer="qa-bot", objective="review-answer"),
            update("qa-review", consumer="support-assistant", objective="answer-ticket"),
        ],
        {
            "support-answer": ("qa-bot", "review-answer", None),
            "qa-review": ("support-assistant", "answer-ticket", None),
        },
    ),
    # support-answer and its production twin swap environments (nothing else changes)
    "environment": (
        [
            update("support-answer", environment="production"),
            update("support-answer-prod", environment=None),
        ],
        {
            "support-answer": ("support-assistant", "answer-ticket", "production"),
            "support-answer-prod": ("support-assistant", "answer-ticket", None),
        },
    ),
}


@pytest.mark.parametrize("swapped", list(SWAPS))
def test_change_set__profiles_swap_selections__applied_as_the_set_gives(tmp_path, swapped):
    # Given the workspace of case 26 with a production twin of support-answer
    document = copy.deepcopy(CASE["workspace"])
    twin = {**copy.deepcopy(document["profiles"][0]), "key": "support-answer-prod"}
    document["profiles"].append({**twin, "environment": "production", "budget": 300})
    workspace_import(document=copy.deepcopy(document))

    # When an approved change set swaps two profiles' selections (each taking one the
    # other holds until it is written) and is applied
    changes, expected = SWAPS[swapped]
    apply_set(changes)

    # Then each profile has the selection the set gives, and the workspace answers as the
    # CLI does for the document the set leaves
    stored = Profile.objects.values_list("key", "consumer__key", "objective", "environment")
    assert {key: rest for key, *rest in stored if key in expected} == {
        key: list(selection) for key, selection in expected.items()
    }
    for entry in document["profiles"]:
        if entry["key"] in expected:
            consumer, objective, environment = expected[entry["key"]]
            entry.update(consumer=consumer, objective=objective)
            entry.pop("environment", None)
            if environment is not None:
                entry["environment"] = environment
    path = tmp_path / "workspace.yaml"
    path.write_text(dump_yaml(document), encoding="utf-8")
    assert_stored_as_the_file(path, document, CASE["request"])

"""A profile's selection written one entry at a time (issue 33): the studio, the API, the
admin and change sets write through ``profile_update``, a restore, an applied change request
and a promotion through ``profile_write_document``; whatever part of the selection changes,
the stored profile is the document's and resolves as the CLI resolves the document."""

import copy

import pytest

from profiles.authoring.profiles import profile_update, profile_write_document
from profiles.import_export.workspace import workspace_import
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

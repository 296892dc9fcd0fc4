"""Import and export of workspace documents through the database (SPEC §2)."""

import json

import pytest
import yaml

from profiles.import_export.documents import WorkspaceImportError, workspace_export
from profiles.import_export.imports import workspace_import
from profiles.models import Consumer, Item, Layer, Profile, Rule, WorkspaceVersion
from profiles.resolution.services import workspace_resolve
from profiles.workspace.validation import issues_in_text
from resolver import RequestError, ValidationIssue, resolve
from resolver.documents import dump_yaml
from tests.profiles.conftest import (
    INVALID_WORKSPACE_CASES,
    WORKSPACE_CASES,
    normalize_document,
    small_workspace,
)

pytestmark = pytest.mark.django_db


def row_counts() -> dict:
    return {
        model.__name__: model.objects.count() for model in (Consumer, Layer, Item, Profile, Rule)
    }


def resolution_or_error(resolver_call):
    try:
        return json.loads(json.dumps(resolver_call()))
    except RequestError as exc:
        return exc.as_dict()


@pytest.mark.parametrize(("stem", "case"), WORKSPACE_CASES, ids=[s for s, _ in WORKSPACE_CASES])
def test_workspace_export__after_importing_a_conformance_workspace__gives_back_the_document(
    stem, case
):
    workspace_import(document=case["workspace"])

    exported = workspace_export()

    assert normalize_document(exported) == normalize_document(case["workspace"])


@pytest.mark.parametrize(("stem", "case"), WORKSPACE_CASES, ids=[s for s, _ in WORKSPACE_CASES])
def test_workspace_resolve__conformance_case_from_the_database__equals_resolving_the_document(
    stem, case
):
    workspace_import(document=case["workspace"])

    from_database = resolution_or_error(lambda: workspace_resolve(request=case["request"]))
    from_document = resolution_or_error(lambda: resolve(case["workspace"], case["request"]))

    assert from_database == from_document


@pytest.mark.parametrize(
    ("stem", "case"), INVALID_WORKSPACE_CASES, ids=[s for s, _ in INVALID_WORKSPACE_CASES]
)
def test_workspace_import__invalid_conformance_workspace__rejected_at_its_path_writing_nothing(
    stem, case
):
    with pytest.raises(WorkspaceImportError) as caught:
        workspace_import(document=case["workspace"])

    assert caught.value.issues[0].path == case["expect"]["error"]["path"]
    assert set(row_counts().values()) == {0}


def test_workspace_export__yaml_text__reimports_to_the_same_rows():
    workspace_import(document=small_workspace())
    text = workspace_export(format="yaml")

    summary = workspace_import(text=text)

    assert not summary.changed
    assert normalize_document(yaml.safe_load(text)) == normalize_document(small_workspace())


def test_workspace_export__json_format__is_the_same_document():
    workspace_import(document=small_workspace())

    text = workspace_export(format="json")

    assert json.loads(text) == workspace_export()


BROKEN = """\
version: 1
consumers:
  - key: assistant
layers:
  - key: kb
    items:
      - path: kb/a.md
      - path: kb/a.md
  - key: Bad Key
profiles:
  - key: answer
    consumer: nobody
    objective: answer
    budget: 0
    rules:
      kb: {mode: sideways}
"""


def test_workspace_import__file_with_several_errors__names_every_error_and_writes_nothing():
    workspace_import(document=small_workspace())
    before = row_counts()
    version_before = WorkspaceVersion.current_token()

    with pytest.raises(WorkspaceImportError) as caught:
        workspace_import(text=BROKEN)

    messages = caught.value.messages
    assert any(m.startswith("layers[0].items[1].path:") and "kb/a.md" in m for m in messages)
    assert any(m.startswith("layers[1].key:") for m in messages)
    assert any(m.startswith("profiles[0].consumer:") for m in messages)
    assert any(m.startswith("profiles[0].budget:") for m in messages)
    assert any(m.startswith("profiles[0].rules.kb.mode:") for m in messages)
    assert row_counts() == before
    assert WorkspaceVersion.current_token() == version_before


def test_workspace_import__duplicate_yaml_key__is_rejected_naming_the_line():
    text = "version: 1\nconsumers:\n  - key: a\n    key: b\n"

    with pytest.raises(WorkspaceImportError) as caught:
        workspace_import(text=text)

    assert "duplicate" in str(caught.value).lower()
    assert "line 4" in str(caught.value)
    assert Consumer.objects.count() == 0


def test_workspace_import__same_file_twice__changes_nothing_the_second_time():
    workspace_import(document=small_workspace())
    token = WorkspaceVersion.current_token()
    history_total = Item.history.count()

    summary = workspace_import(document=small_workspace())

    assert not summary.changed
    assert WorkspaceVersion.current_token() == token
    assert Item.history.count() == history_total


def test_workspace_import__merge__upserts_and_keeps_what_the_file_does_not_name():
    workspace_import(document=small_workspace(layers=3, items=4))
    partial = {
        "version": 1,
        "layers": [
            {
                "key": "layer-000",
                "name": "Renamed",
                "items": [
                    {"path": "docs/item-0000.md", "title": "Changed title"},
                    {"path": "docs/new.md", "title": "New"},
                ],
            }
        ],
    }

    summary = workspace_import(document=partial)

    layer = Layer.objects.get(key="layer-000")
    assert layer.name == "Renamed"
    assert layer.items.get(path="docs/item-0000.md").title == "Changed title"
    assert layer.items.filter(path="docs/new.md").exists()
    assert layer.items.count() == 5  # four kept, one new
    assert Layer.objects.count() == 3
    assert Profile.objects.count() == 2
    assert summary.counts["items"]["created"] == 1
    assert summary.counts["items"]["updated"] == 1


def test_workspace_import__replace__deletes_what_the_file_does_not_contain():
    workspace_import(document=small_workspace(layers=3, items=4))
    smaller = small_workspace(layers=2, items=2, profiles=1)

    summary = workspace_import(document=smaller, mode="replace")

    assert normalize_document(workspace_export()) == normalize_document(smaller)
    assert Layer.objects.count() == 2
    assert Item.objects.count() == 4
    assert Profile.objects.count() == 1
    assert summary.counts["layers"]["deleted"] == 1


def test_workspace_import__merge_creating_a_selection_clash__is_rejected_with_the_file_path():
    workspace_import(document=small_workspace())
    clash = {
        "profiles": [
            {"key": "copy", "consumer": "assistant", "objective": "objective-0", "budget": 5}
        ]
    }

    with pytest.raises(WorkspaceImportError) as caught:
        workspace_import(document=clash)

    assert any(issue.path.startswith("profiles[") for issue in caught.value.issues)
    assert not Profile.objects.filter(key="copy").exists()


def test_workspace_import__profile_in_merge__gets_exactly_the_file_rules():
    workspace_import(document=small_workspace())
    profile = small_workspace()["profiles"][0]
    profile["rules"] = {"layer-001": {"participation": "exclude"}}

    workspace_import(document={"profiles": [profile]})

    rules = Rule.objects.filter(profile__key="profile-0")
    assert [(rule.layer.key, rule.participation) for rule in rules] == [("layer-001", "exclude")]


def test_workspace_import__yaml_dates_in_metadata__are_stored_as_iso_strings():
    text = """\
consumers: [{key: a}]
layers:
  - key: kb
    items:
      - path: 2026-01-02
        metadata: {updated: 2026-11-20, seen: 2026-11-20T10:30:00Z}
"""
    workspace_import(text=text)

    item = Item.objects.get()
    assert item.path == "2026-01-02"
    assert item.metadata["updated"] == "2026-11-20"
    assert item.metadata["seen"].startswith("2026-11-20T10:30:00")


def test_workspace_export__rule_fields_not_given__stay_absent_and_priorities_keep_their_type():
    document = small_workspace()
    document["profiles"][0]["rules"] = {
        "layer-000": {"priority": 7},
        "layer-001": {"priority": 2.5, "currentness": {"maxAgeDays": 30}},
        "layer-002": {},
    }
    workspace_import(document=document)

    rules = workspace_export()["profiles"][0]["rules"]

    assert rules == {
        "layer-000": {"priority": 7},
        "layer-001": {"priority": 2.5, "currentness": {"maxAgeDays": 30}},
        "layer-002": {},
    }
    assert type(rules["layer-000"]["priority"]) is int


# -- what the summary names ----------------------------------------------------------------


def test_workspace_import__merge__summary_names_what_was_created_and_updated():
    workspace_import(document=small_workspace())
    document = small_workspace()
    document["layers"][0]["name"] = "Renamed"
    document["layers"][0]["items"][0]["title"] = "Changed title"
    document["layers"][0]["items"].append({"path": "docs/new.md", "title": "New"})
    document["profiles"][1]["budget"] = 900
    document["profiles"][1]["rules"]["layer-000"]["maxItems"] = 5

    summary = workspace_import(document=document)

    names = summary.as_dict()["names"]
    assert names["layers"] == {"created": [], "updated": ["layer-000"], "deleted": []}
    assert names["items"] == {
        "created": ["layer-000/docs/new.md"],
        "updated": ["layer-000/docs/item-0000.md"],
        "deleted": [],
    }
    assert names["profiles"]["updated"] == ["profile-1"]
    assert names["rules"]["updated"] == ["profile-1/layer-000"]
    assert names["consumers"] == {"created": [], "updated": [], "deleted": []}
    assert "profiles: 1 updated (profile-1), 1 unchanged" in str(summary)


def test_workspace_import__replace__summary_names_deletions_with_what_they_take_along():
    workspace_import(document=small_workspace(layers=3, items=4, profiles=2))

    summary = workspace_import(
        document=small_workspace(layers=2, items=2, profiles=1), mode="replace"
    )

    names = summary.as_dict()["names"]
    assert names["layers"]["deleted"] == ["layer-002"]
    assert names["profiles"]["deleted"] == ["profile-1"]
    assert sorted(names["items"]["deleted"]) == sorted(
        [f"layer-00{layer}/docs/item-000{item}.md" for layer in (0, 1) for item in (2, 3)]
        + [f"layer-002/docs/item-000{item}.md" for item in range(4)]
    )
    # A rule goes with its profile (profile-1) or with its layer (layer-002).
    assert sorted(names["rules"]["deleted"]) == [
        "profile-0/layer-002",
        "profile-1/layer-000",
        "profile-1/layer-002",
    ]
    for kind in ("consumers", "layers", "items", "profiles", "rules"):
        assert summary.counts[kind]["deleted"] == len(names[kind]["deleted"]), kind


def test_workspace_import__many_items__names_at_most_50_and_counts_them_all():
    summary = workspace_import(document=small_workspace(layers=1, items=120, profiles=1))

    listed = summary.as_dict()["names"]["items"]["created"]
    assert summary.counts["items"]["created"] == 120
    assert listed == [f"layer-000/docs/item-{n:04d}.md" for n in range(50)]
    assert "items: 120 created (layer-000/docs/item-0000.md, " in str(summary)
    assert "layer-000/docs/item-0049.md and 70 more)" in str(summary)
    assert len(json.dumps(summary.as_dict())) < 5_000


def test_issues_in_text__issue_about_the_stored_workspace__gets_no_line_from_the_file():
    text = "profiles:\n- key: answer\n  budget: -1\n"
    issues = [
        ValidationIssue("profiles[0].budget", "must be at least 1"),
        ValidationIssue(
            "profiles[0].budget", "must be at least 1 (in the stored workspace)", stored=True
        ),
        ValidationIssue(
            "profiles[0]", "clashes (conflicts with stored profile other)", stored=True
        ),
    ]

    in_file, stored, conflict = issues_in_text(issues, text=text)

    assert (in_file.entry, in_file.line, in_file.column) == ("profile answer", 3, 11)
    assert (stored, conflict) == (issues[1], issues[2])


def test_workspace_import__merge_errors__name_the_files_paths_or_the_stored_rows():
    stored = small_workspace(layers=2, items=2, profiles=1)
    workspace_import(document=stored)
    profile = stored["profiles"][0]
    text = dump_yaml(
        {
            "layers": [
                {"key": "fresh", "items": [{"path": "a.md"}, {"path": "b.md"}, {"path": "a.md"}]}
            ],
            "profiles": [
                {
                    "key": "clash",
                    "consumer": profile["consumer"],
                    "objective": profile["objective"],
                    "budget": 100,
                }
            ],
        }
    )

    with pytest.raises(WorkspaceImportError) as caught:
        workspace_import(text=text)

    messages = {issue.path: issue.message for issue in caught.value.issues}
    # The stored workspace has two layers and one profile before the file's: the paths in
    # the messages are the file's (layers[0]), or name the stored row.
    assert messages["layers[0].items[2].path"] == (
        'duplicate path "a.md" (first at layers[0].items[0])'
    )
    assert messages["profiles[0]"].startswith(
        f"another profile (stored profile {profile['key']}) already has consumer"
    )

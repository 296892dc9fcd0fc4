"""The change-set document algebra (``profiles.safechange.change_set_documents``): a set's
entries applied to a SPEC §2 document, tested like the engine, without the database (no test
here is marked ``django_db``: a query would fail it)."""

import copy

import pytest

from profiles.safechange.change_set_documents import (
    document_with_changes,
    set_affected_profiles,
    set_entity_changes,
)
from profiles.safechange.change_set_entries import (
    ChangeSetInvalid,
    applied_order,
    change_set_entries,
)


def workspace() -> dict:
    """Two consumers, two layers of one and two items, a profile reading both layers."""
    return {
        "version": 1,
        "consumers": [
            {"key": "assistant", "name": "Assistant"},
            {"key": "reviewer", "name": "Reviewer", "render": {"format": "xml"}},
        ],
        "layers": [
            {
                "key": "policies",
                "name": "Policies",
                "items": [{"path": "refunds.md", "title": "Refunds", "body": "Within 30 days."}],
            },
            {
                "key": "notes",
                "name": "Notes",
                "description": "Fast-moving",
                "items": [
                    {"path": "a.md", "title": "A", "body": "First."},
                    {"path": "b.md", "title": "B", "body": "Second."},
                ],
            },
        ],
        "profiles": [
            {
                "key": "support",
                "name": "Support",
                "consumer": "assistant",
                "objective": "answer",
                "budget": 800,
                "rules": {"policies": {"maxItems": 3}, "notes": {"priority": 1}},
            }
        ],
    }


def test_consumers__created_updated_deleted():
    result = document_with_changes(
        workspace(),
        [
            {"kind": "consumer", "op": "create", "value": {"key": "bot", "name": "Bot"}},
            {
                "kind": "consumer",
                "op": "update",
                "key": "reviewer",
                "value": {"name": "Editor", "render": None},
            },
            {"kind": "consumer", "op": "delete", "key": "assistant"},
            {"kind": "profile", "op": "update", "key": "support", "value": {"consumer": "bot"}},
        ],
    )

    assert result["consumers"] == [
        {"key": "reviewer", "name": "Editor"},
        {"key": "bot", "name": "Bot"},
    ]
    assert result["profiles"][0]["consumer"] == "bot"


def test_layers_and_items__created_updated_deleted():
    result = document_with_changes(
        workspace(),
        [
            {
                "kind": "layer",
                "op": "create",
                "value": {
                    "key": "faq",
                    "name": "FAQ",
                    "items": [{"path": "q.md", "title": "Q", "body": "Answer."}],
                },
            },
            {"kind": "layer", "op": "update", "key": "notes", "value": {"description": None}},
            {"kind": "item", "op": "create", "layer": "notes", "value": {"path": "c.md"}},
            {
                "kind": "item",
                "op": "update",
                "layer": "policies",
                "path": "refunds.md",
                "value": {"body": "Within 60 days."},
            },
            {"kind": "item", "op": "delete", "layer": "notes", "path": "a.md"},
        ],
    )

    assert result["layers"] == [
        {
            "key": "policies",
            "name": "Policies",
            "items": [{"path": "refunds.md", "title": "Refunds", "body": "Within 60 days."}],
        },
        {
            "key": "notes",
            "name": "Notes",
            "items": [{"path": "b.md", "title": "B", "body": "Second."}, {"path": "c.md"}],
        },
        {
            "key": "faq",
            "name": "FAQ",
            "items": [{"path": "q.md", "title": "Q", "body": "Answer."}],
        },
    ]


def test_profiles__created_updated_deleted():
    document = workspace()
    document["profiles"].append(
        {"key": "triage", "name": "Triage", "consumer": "reviewer", "objective": "sort"}
    )
    profile = {
        "key": "sales",
        "name": "Sales",
        "consumer": "reviewer",
        "objective": "sell",
        "budget": 500,
    }

    result = document_with_changes(
        document,
        [
            {"kind": "profile", "op": "create", "value": profile},
            {"kind": "profile", "op": "update", "key": "triage", "value": {"budget": 300}},
            {"kind": "profile", "op": "delete", "key": "support"},
        ],
    )

    assert result["profiles"] == [
        {
            "key": "triage",
            "name": "Triage",
            "consumer": "reviewer",
            "objective": "sort",
            "budget": 300,
        },
        profile,
    ]


def test_a_rule_removed__before_its_layer_is_deleted_whatever_the_order_given():
    changes = [
        {"kind": "layer", "op": "delete", "key": "notes"},
        {"kind": "profile", "op": "update", "key": "support", "value": {"rules": {"notes": None}}},
    ]

    result = document_with_changes(workspace(), changes)

    assert [layer["key"] for layer in result["layers"]] == ["policies"]
    assert result["profiles"][0]["rules"] == {"policies": {"maxItems": 3}}
    assert [(entry.kind, entry.op) for entry in applied_order(change_set_entries(changes))] == [
        ("profile", "update"),
        ("layer", "delete"),
    ]


def test_a_rule_partial_per_layer__merged_and_every_rule_removed():
    document = workspace()

    merged = document_with_changes(
        document,
        [
            {
                "kind": "profile",
                "op": "update",
                "key": "support",
                "value": {"rules": {"policies": {"maxItems": 5}}},
            }
        ],
    )
    cleared = document_with_changes(
        document,
        [{"kind": "profile", "op": "update", "key": "support", "value": {"rules": None}}],
    )

    assert merged["profiles"][0]["rules"] == {
        "policies": {"maxItems": 5},
        "notes": {"priority": 1},
    }
    assert "rules" not in cleared["profiles"][0]


def test_the_document_given__is_not_modified():
    document = workspace()
    kept = copy.deepcopy(document)

    document_with_changes(
        document,
        [
            {"kind": "item", "op": "delete", "layer": "notes", "path": "a.md"},
            {"kind": "layer", "op": "update", "key": "policies", "value": {"name": "Rules"}},
            {"kind": "consumer", "op": "delete", "key": "reviewer"},
        ],
    )

    assert document == kept


def test_an_entity_missing_or_existing__refused_at_its_change():
    with pytest.raises(ChangeSetInvalid) as caught:
        document_with_changes(
            workspace(),
            [
                {"kind": "consumer", "op": "create", "value": {"key": "assistant", "name": "A"}},
                {"kind": "layer", "op": "update", "key": "missing", "value": {"name": "M"}},
                {"kind": "item", "op": "delete", "layer": "notes", "path": "z.md"},
            ],
        )

    assert [(issue.path, issue.message) for issue in caught.value.issues] == [
        ("changes[0]", 'consumer "assistant" exists already'),
        ("changes[1].key", 'no layer "missing"'),
        ("changes[2].path", 'no item "notes/z.md"'),
    ]


def test_a_result_not_a_valid_workspace__refused_at_the_change_that_made_it():
    with pytest.raises(ChangeSetInvalid) as caught:
        document_with_changes(workspace(), [{"kind": "layer", "op": "delete", "key": "notes"}])

    assert caught.value.issues[0].path.startswith("profiles[0]")


def test_entity_changes_and_affected_profiles():
    before = workspace()
    changes = [
        {
            "kind": "item",
            "op": "update",
            "layer": "notes",
            "path": "b.md",
            "value": {"title": "Bee"},
        }
    ]
    entries = change_set_entries(changes)
    after = document_with_changes(before, changes)

    entity_changes = set_entity_changes(before, after, entries)

    assert [(change.kind, change.key, change.path) for change in entity_changes] == [
        ("item", "notes", "b.md")
    ]
    assert set_affected_profiles(before, after, entity_changes) == ["support"]

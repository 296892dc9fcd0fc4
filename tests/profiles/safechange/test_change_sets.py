"""Change sets (issue 21): one change request over several entities, validated against the
workspace, with the impact on every affected profile, applied atomically through the write
services, refused when an entity it touches moved."""

import pytest
from django.contrib.auth.models import Group, User
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from profiles.authoring.profiles import profile_save_rules
from profiles.authoring.scenarios import scenarios_upsert
from profiles.import_export.documents import workspace_export
from profiles.import_export.imports import workspace_import
from profiles.material.items import item_update
from profiles.material.layers import layer_update
from profiles.models import Activity, ChangeRequest, Environment, Item, Layer, ProfileVersion
from profiles.safechange.change_requests import (
    change_request_apply,
    change_request_approve,
    change_request_rebase,
    change_request_update,
)
from profiles.safechange.change_set_documents import document_with_changes
from profiles.safechange.change_set_entries import ChangeSetInvalid
from profiles.safechange.change_sets import (
    StaleChangeSet,
    change_set_create,
    change_set_from_entity_changes,
)
from profiles.safechange.selectors import change_request_etag
from profiles.versioning.environments import ChangeRequestRequired
from profiles.workspace.entity_changes import canonical_entry, workspace_entity_changes
from resolver import validate_workspace
from tests.profiles.conftest import RELEASE_SCENARIOS, release_workspace, small_workspace

pytestmark = pytest.mark.django_db

RELEASE_NOTES = {
    "key": "release-notes",
    "name": "Release notes",
    "items": [{"path": "2026-12.md", "title": "December", "body": "Cards refund in two days."}],
}
MAX_ITEMS_2 = {"layer-000": {"maxItems": 2}}
THE_SET = [
    {"kind": "layer", "op": "create", "value": RELEASE_NOTES},
    {
        "kind": "profile",
        "op": "update",
        "key": "profile-0",
        "value": {"rules": {"release-notes": {"participation": "exclude"}, **MAX_ITEMS_2}},
    },
    {"kind": "profile", "op": "update", "key": "profile-1", "value": {"rules": MAX_ITEMS_2}},
    {
        "kind": "profile",
        "op": "update",
        "key": "profile-0-staging",
        "value": {"rules": MAX_ITEMS_2},
    },
]


def editor_named(name: str) -> User:
    user = User.objects.create_user(name, password=f"{name}-password-1")
    group, _ = Group.objects.get_or_create(name="editors")
    user.groups.add(group)
    return user


@pytest.fixture
def people(db):
    return editor_named("author"), editor_named("approver")


@pytest.fixture
def protected(db):
    workspace_import(document=release_workspace())
    scenarios_upsert(scenarios=RELEASE_SCENARIOS)
    Environment.objects.create(key="production", requires_change_request=True)


def approve(change_request: ChangeRequest, user) -> None:
    change_request.refresh_from_db()
    change_request_approve(
        pk=change_request.pk, user=user, if_match=change_request_etag(change_request)
    )


class Unchanged:
    """What a refused apply must leave as it was: rows, versions, activity."""

    def __init__(self):
        self.document = workspace_export()
        self.versions = ProfileVersion.objects.count()
        self.activity = Activity.objects.count()

    def check(self):
        assert workspace_export() == self.document
        assert ProfileVersion.objects.count() == self.versions
        assert Activity.objects.count() == self.activity


# --- create --------------------------------------------------------------------------------


def test_create__layer_rules_in_three_profiles__affected_impact_bases_and_default_title(
    protected, people
):
    author, _ = people

    change_request = change_set_create(changes=THE_SET, user=author)

    assert change_request.is_change_set
    assert change_request.title == (
        "Create layer release-notes; change profile-0, profile-1, profile-0-staging"
    )
    assert change_request.affected_profiles == ["profile-0", "profile-0-staging", "profile-1"]
    assert change_request.entity_bases["layer:release-notes"] is None
    assert change_request.entity_bases["profile:profile-0"].startswith('"')
    assert {row["profile"] for row in change_request.impact} == {"profile-0", "profile-0-staging"}
    assert len(change_request.impact) == len(RELEASE_SCENARIOS)
    assert all(
        {"profile", "scenario", "before", "after", "changed"} <= set(row)
        for row in change_request.impact
    )
    # Nothing is written by opening it.
    assert not Layer.objects.filter(key="release-notes").exists()


def test_create__invalid_entry__400_names_the_change_and_field(protected, people):
    author, _ = people
    changes = [
        THE_SET[0],
        {
            "kind": "profile",
            "op": "update",
            "key": "profile-1",
            "value": {"rules": {"layer-000": {"maxItems": -3}}},
        },
    ]

    with pytest.raises(ChangeSetInvalid) as caught:
        change_set_create(changes=changes, user=author)

    assert caught.value.path.startswith("changes[1].value.rules.layer-000")
    assert not ChangeRequest.objects.exists()


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"kind": "layer"}, "changes"),
        ([{"kind": "rule", "op": "create", "value": {}}], "changes[0].kind"),
        (
            [{"kind": "layer", "op": "update", "key": "layer-000", "value": {"governed": True}}],
            "changes[0].value.governed",
        ),
        (
            [{"kind": "layer", "op": "update", "key": "layer-000", "value": {"maxItems": 3}}],
            "changes[0].value.maxItems",
        ),
        (
            [
                {"kind": "layer", "op": "delete", "key": "layer-000"},
                {"kind": "layer", "op": "update", "key": "layer-000", "value": {"name": "x"}},
            ],
            "changes[1]",
        ),
        (
            [{"kind": "layer", "op": "create", "value": {"key": "layer-000", "name": "Again"}}],
            "changes[0]",
        ),
        (
            [
                {
                    "kind": "item",
                    "op": "update",
                    "layer": "layer-000",
                    "path": "nope.md",
                    "value": {"title": "x"},
                }
            ],
            "changes[0].path",
        ),
        (
            [
                {
                    "kind": "profile",
                    "op": "update",
                    "key": "profile-1",
                    "value": {"rules": {"no-such-layer": {"maxItems": 1}}},
                }
            ],
            "changes[0].value.rules.no-such-layer",
        ),
    ],
)
def test_create__malformed_set__400_at_the_entry(protected, people, changes, path):
    author, _ = people

    with pytest.raises(ChangeSetInvalid) as caught:
        change_set_create(changes=changes, user=author)

    assert caught.value.path == path, caught.value.extra
    assert not ChangeRequest.objects.exists()


def test_create__more_than_the_bound__refused_before_anything_is_read(protected, people):
    author, _ = people
    changes = [
        {"kind": "item", "op": "delete", "layer": "layer-000", "path": f"{n}.md"}
        for n in range(1_001)
    ]

    with pytest.raises(ChangeSetInvalid, match="at most 1,000 changes"):
        change_set_create(changes=changes, user=author)


# --- apply ---------------------------------------------------------------------------------


def test_apply__layer_and_rules_in_three_profiles__all_written_one_version_each_and_activity(
    protected, people
):
    # Given the set, approved by another editor
    author, approver = people
    change_request = change_set_create(changes=THE_SET, user=author)
    approve(change_request, approver)
    before = {key: versions(key) for key in ("profile-0", "profile-1", "profile-0-staging")}

    # When it is applied
    change_request_apply(pk=change_request.pk, user=approver)

    # Then everything is written, each profile once, all of it logged under the request
    change_request.refresh_from_db()
    assert change_request.status == "applied"
    assert Layer.objects.get(key="release-notes").items.count() == 1
    document = {p["key"]: p for p in workspace_export()["profiles"]}
    assert document["profile-0"]["rules"]["release-notes"] == {"participation": "exclude"}
    for key in ("profile-0", "profile-1", "profile-0-staging"):
        assert document[key]["rules"]["layer-000"]["maxItems"] == 2
        assert versions(key) == [*before[key], before[key][-1] + 1]
        latest = ProfileVersion.objects.get(profile_key=key, number=versions(key)[-1])
        assert (latest.source, latest.author, latest.approvers) == (
            "change-request",
            author,
            ["approver"],
        )
        assert latest.change_request_id == change_request.pk
    logged = Activity.objects.filter(change_request=change_request)
    assert {(row.kind, row.key, row.op) for row in logged} >= {
        ("layer", "release-notes", "create"),
        ("item", "release-notes", "create"),
        ("profile", "profile-0", "update"),
        ("profile", "profile-1", "update"),
        ("profile", "profile-0-staging", "update"),
    }
    assert {row.origin for row in logged} == {"change-request"}


def versions(key: str) -> list[int]:
    return list(
        ProfileVersion.objects.filter(profile_key=key)
        .order_by("number")
        .values_list("number", flat=True)
    )


def test_apply__one_entry_refused_by_the_write_path__nothing_written(protected, people):
    # Given a set whose last entry the write path refuses at apply (a layer still in use:
    # profile-1 keeps its rule for layer-002, which only the database's state says)
    author, approver = people
    changes = [
        THE_SET[0],
        {"kind": "profile", "op": "update", "key": "profile-1", "value": {"budget": 777}},
        {"kind": "layer", "op": "delete", "key": "layer-001"},
    ]
    change_request = change_set_create(changes=changes, user=author)
    approve(change_request, approver)
    # A rule for layer-001 is added (in staging: no request needed)... which also moves the
    # profile it is in; the set does not touch profile-0-staging, so it is not stale.
    profile_save_rules(profile="profile-0-staging", rules={"layer-001": {"maxItems": 1}})
    unchanged = Unchanged()

    with pytest.raises(ChangeSetInvalid) as caught:
        change_request_apply(pk=change_request.pk, user=approver)

    assert caught.value.path == "changes[2]"
    assert "profile-0-staging" in caught.value.message
    unchanged.check()
    change_request.refresh_from_db()
    assert change_request.status == "open"


def test_apply__an_entity_moved__409_stale_names_it_and_nothing_written(protected, people):
    author, approver = people
    change_request = change_set_create(changes=THE_SET, user=author)
    approve(change_request, approver)
    profile_save_rules(profile="profile-1", rules={"layer-000": {"maxItems": 4}})
    unchanged = Unchanged()

    with pytest.raises(StaleChangeSet) as caught:
        change_request_apply(pk=change_request.pk, user=approver)

    assert caught.value.extra["entities"] == ["profile:profile-1"]
    assert "profile:profile-1" in caught.value.message
    unchanged.check()


def test_rebase__stale_set__new_bases_approvals_withdrawn_then_applies(protected, people):
    author, approver = people
    change_request = change_set_create(changes=THE_SET, user=author)
    approve(change_request, approver)
    profile_save_rules(profile="profile-1", rules={"layer-002": {"maxItems": 1}})

    change_request_rebase(pk=change_request.pk, user=author)

    change_request.refresh_from_db()
    assert change_request.revision == 2
    assert not change_request.approvals.exists()
    approve(change_request, approver)
    change_request_apply(pk=change_request.pk, user=approver)
    rules = {p["key"]: p for p in workspace_export()["profiles"]}["profile-1"]["rules"]
    assert (rules["layer-000"]["maxItems"], rules["layer-002"]["maxItems"]) == (2, 1)


def test_edit__new_list__revalidated_new_revision_approvals_withdrawn(protected, people):
    author, approver = people
    change_request = change_set_create(changes=THE_SET, user=author)
    approve(change_request, approver)

    change_request_update(pk=change_request.pk, user=author, changes=THE_SET[:1])

    change_request.refresh_from_db()
    assert change_request.revision == 2
    assert not change_request.approvals.exists()
    assert [entry["kind"] for entry in change_request.entity_changes] == ["layer"]
    with pytest.raises(ChangeSetInvalid):
        change_request_update(pk=change_request.pk, user=author, changes=[{"kind": "x"}])


def test_apply__protected_profile_affected__needs_its_environment_approvals(protected, people):
    author, approver = people
    Environment.objects.filter(key="production").update(approvals=2)
    change_request = change_set_create(changes=THE_SET, user=author)
    approve(change_request, approver)

    with pytest.raises(Exception, match="1 of the 2 approvals"):
        change_request_apply(pk=change_request.pk, user=approver)


# --- governed material -------------------------------------------------------------------


def test_governed_item_edit__refused_directly_applied_through_a_set(protected, people):
    author, approver = people
    Layer.objects.filter(key="layer-000").update(governed=True)
    path = "docs/item-0000.md"

    with pytest.raises(ChangeRequestRequired) as caught:
        item_update(layer="layer-000", path=path, changes={"title": "Edited"}, user=author)
    assert "profile-0" in caught.value.profiles

    change_request = change_set_create(
        changes=[
            {
                "kind": "item",
                "op": "update",
                "layer": "layer-000",
                "path": path,
                "value": {"title": "Edited"},
            }
        ],
        user=author,
    )
    assert "profile-0" in change_request.affected_profiles
    approve(change_request, approver)
    change_request_apply(pk=change_request.pk, user=approver)
    assert Item.objects.get(layer__key="layer-000", path=path).title == "Edited"


def test_layer_condition__refused_directly_applied_through_a_set(protected, people):
    author, approver = people

    with pytest.raises(ChangeRequestRequired):
        layer_update(key="layer-001", changes={"itemFilter": None}, user=author)

    change_request = change_set_create(
        changes=[
            {"kind": "layer", "op": "update", "key": "layer-001", "value": {"itemFilter": None}}
        ],
        user=author,
    )
    approve(change_request, approver)
    change_request_apply(pk=change_request.pk, user=approver)
    assert (
        "itemFilter"
        not in {layer["key"]: layer for layer in workspace_export()["layers"]}["layer-001"]
    )


# --- document_with_changes: a set from two workspaces gives the second --------------------


@st.composite
def workspace_pairs(draw):
    """Two small valid workspaces over the same vocabulary (keys, paths, fields)."""

    def one():
        document = small_workspace(
            layers=draw(st.integers(1, 3)),
            items=draw(st.integers(0, 3)),
            profiles=draw(st.integers(0, 2)),
        )
        for layer in document["layers"]:
            if draw(st.booleans()):
                layer["description"] = draw(st.sampled_from(["Policies", "Fast-moving"]))
            if draw(st.booleans()):
                layer.pop("itemFilter", None)
            for item in layer["items"]:
                if draw(st.booleans()):
                    item["title"] = draw(st.sampled_from(["A", "B"]))
        keys = [layer["key"] for layer in document["layers"]]
        for profile in document["profiles"]:
            profile["budget"] = draw(st.sampled_from([500, 800]))
            rules = {}
            for key in keys:
                choice = draw(st.sampled_from(["none", "exclude", "max"]))
                if choice == "exclude":
                    rules[key] = {"participation": "exclude"}
                elif choice == "max":
                    rules[key] = {"maxItems": draw(st.integers(1, 3))}
            profile["rules"] = rules
        if draw(st.booleans()):
            document["consumers"][1]["render"] = {"format": "markdown"}
        return document

    return one(), one()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(pair=workspace_pairs())
def test_document_with_changes__set_from_two_workspaces__gives_the_second(pair):
    before, after = pair
    assert validate_workspace(before) == [] and validate_workspace(after) == []
    stored = workspace_stored(before)
    changes = workspace_entity_changes(stored, after)

    result = document_with_changes(stored, change_set_from_entity_changes(changes))

    assert workspace_entity_changes(result, after) == []


def workspace_stored(document: dict) -> dict:
    """Return the document as the stored workspace gives it (its canonical form)."""
    return {
        "version": 1,
        "consumers": [canonical_entry("consumer", entry) for entry in document["consumers"]],
        "layers": [
            {
                **canonical_entry("layer", {k: v for k, v in layer.items() if k != "items"}),
                "items": [canonical_entry("item", item) for item in layer["items"]],
            }
            for layer in document["layers"]
        ],
        "profiles": [canonical_entry("profile", entry) for entry in document["profiles"]],
    }


def test_apply__nulls__remove_the_fields_and_all_rules(protected, people):
    author, approver = people
    changes = [
        {
            "kind": "profile",
            "op": "update",
            "key": "profile-1",
            "value": {"name": None, "rules": None},
        },
        {"kind": "layer", "op": "update", "key": "layer-001", "value": {"description": "Kept"}},
    ]
    change_request = change_set_create(changes=changes, user=author)
    approve(change_request, approver)

    change_request_apply(pk=change_request.pk, user=approver)

    profile = {p["key"]: p for p in workspace_export()["profiles"]}["profile-1"]
    assert "name" not in profile and not profile.get("rules")
    layer = {layer["key"]: layer for layer in workspace_export()["layers"]}["layer-001"]
    assert layer["description"] == "Kept"

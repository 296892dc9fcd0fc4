"""Rule edits (layer key -> partial rule, None for the default rule) applied in one place:
the editor's save, the API's rule writes and a change request's proposed document agree."""

import pytest

from profiles.authoring.profiles import profile_save_rules
from profiles.import_export.documents import workspace_export
from profiles.import_export.imports import workspace_import
from profiles.safechange.change_requests import changes_applied
from profiles.workspace.validation import rules_merged
from tests.profiles.conftest import small_workspace

SAVED = {"kb": {"mode": "retrieve", "priority": 5}, "tickets": {"mode": "inline"}}


def test_rules_merged__partial_none_and_new_layer__merged_like_merge_rule_and_saved_untouched():
    edits = {"kb": {"priority": 9, "mode": None}, "tickets": None, "faq": {"maxItems": 2}}

    rules = rules_merged(SAVED, edits)

    assert rules == {"kb": {"priority": 9}, "faq": {"maxItems": 2}}
    assert SAVED == {"kb": {"mode": "retrieve", "priority": 5}, "tickets": {"mode": "inline"}}


def test_rules_merged__partial_not_an_object__kept_for_the_validator_to_report():
    assert rules_merged(SAVED, {"kb": ["inline"]})["kb"] == ["inline"]


def profile_document(key: str) -> dict:
    return next(entry for entry in workspace_export()["profiles"] if entry["key"] == key)


@pytest.mark.django_db
def test_change_request_document__same_edits__same_rules_as_the_direct_save():
    # Given a saved profile and one set of rule edits
    workspace_import(document=small_workspace())
    saved = profile_document("profile-0")
    edits = {"layer-000": {"priority": 42, "mode": None}, "layer-001": {"maxItems": 2}}

    # When a change request proposes them, and the editor saves them
    proposed = changes_applied(saved, {"rules": edits})
    profile_save_rules(profile="profile-0", rules=edits)

    # Then both documents have the same rules
    assert proposed["rules"] == profile_document("profile-0")["rules"]
    assert proposed["rules"]["layer-000"] == {"priority": 42, "maxItems": 3}

"""Saving rule edits and the database's own safety net."""

import pytest
from django.db import IntegrityError, transaction

from profiles.authoring.profiles import profile_save_rules
from profiles.import_export.documents import workspace_export
from profiles.import_export.imports import workspace_import
from profiles.models import Consumer, Layer, Profile, Rule, WorkspaceVersion
from profiles.resolution.services import profile_resolve
from profiles.workspace.validation import WorkspaceValidationError, instance_issues
from tests.profiles.conftest import REQUEST, small_workspace

pytestmark = pytest.mark.django_db


def test_profile_save_rules__valid_partial_edit__saves_it_and_the_preview_matches(
    django_user_model,
):
    workspace_import(document=small_workspace())
    user = django_user_model.objects.create_user("editor")
    edits = {"layer-000": {"mode": "on-demand", "maxItems": None}, "layer-002": None}
    preview = profile_resolve(
        profile="profile-0", request=REQUEST, rule_overrides=edits, budget_override=900
    )

    profile_save_rules(profile="profile-0", rules=edits, budget=900, user=user)

    saved = workspace_export()["profiles"][0]
    assert saved["rules"]["layer-000"] == {"mode": "on-demand", "priority": 0}
    assert "layer-002" not in saved["rules"]
    assert saved["budget"] == 900
    after = profile_resolve(profile="profile-0", request=REQUEST)
    assert after == preview
    rule = Rule.objects.get(profile__key="profile-0", layer__key="layer-000")
    assert rule.updated_by == user
    assert rule.history.first().history_user == user


def test_profile_save_rules__required_with_exclude__is_refused_with_the_engine_path():
    workspace_import(document=small_workspace())
    token = WorkspaceVersion.current_token()

    with pytest.raises(WorkspaceValidationError) as caught:
        profile_save_rules(
            profile="profile-0",
            rules={"layer-000": {"required": True, "participation": "exclude"}},
            budget=0,
        )

    messages = caught.value.messages
    assert any(m.startswith("profiles[0].budget:") for m in messages)
    assert any(m.startswith("profiles[0].rules.layer-000") for m in messages)
    assert Rule.objects.get(profile__key="profile-0", layer__key="layer-000").required is None
    assert Profile.objects.get(key="profile-0").budget == 800
    assert WorkspaceVersion.current_token() == token


def test_rule_row__required_and_excluded__is_rejected_by_the_database():
    workspace_import(document=small_workspace())
    rule = Rule.objects.get(profile__key="profile-0", layer__key="layer-000")
    rule.required = True
    rule.participation = "exclude"

    with pytest.raises(IntegrityError), transaction.atomic():
        rule.save()


def test_profile_row__second_profile_without_environment_for_a_pair__is_rejected_by_the_database():
    workspace_import(document=small_workspace())
    consumer = Consumer.objects.get(key="assistant")

    with pytest.raises(IntegrityError), transaction.atomic():
        Profile.objects.create(key="twin", consumer=consumer, objective="objective-0", budget=5)


def test_profile_row__same_pair_in_two_environments__is_allowed():
    workspace_import(document=small_workspace())
    consumer = Consumer.objects.get(key="assistant")

    Profile.objects.create(
        key="prod", consumer=consumer, objective="objective-0", environment="production", budget=5
    )
    Profile.objects.create(
        key="stage", consumer=consumer, objective="objective-0", environment="staging", budget=5
    )

    assert Profile.objects.filter(objective="objective-0").count() == 3


def test_item_row__duplicate_path_in_a_layer__is_rejected_by_the_database():
    workspace_import(document=small_workspace())
    layer = Layer.objects.get(key="layer-000")

    with pytest.raises(IntegrityError), transaction.atomic():
        layer.items.create(path="docs/item-0000.md")


def test_rule_row__bad_mode__is_rejected_by_the_database():
    workspace_import(document=small_workspace())

    with pytest.raises(IntegrityError), transaction.atomic():
        Rule.objects.filter(profile__key="profile-0").update(mode="sideways")


def test_instance_issues__layer_filter_with_an_empty_input_key__lands_on_the_item_filter_field():
    workspace_import(document=small_workspace())
    layer = Layer.objects.get(key="layer-000")
    layer.item_filter = {"customer_id": ""}

    issues = instance_issues(layer)

    assert [field for field, _ in issues] == ["item_filter"]


def test_instance_issues__rule_with_zero_max_tokens__lands_on_the_max_tokens_field():
    workspace_import(document=small_workspace())
    rule = Rule.objects.get(profile__key="profile-0", layer__key="layer-000")
    rule.max_tokens = 0

    issues = instance_issues(rule)

    assert [field for field, _ in issues] == ["max_tokens"]


def test_instance_issues__consumer_renamed_to_a_taken_key__reports_the_engine_duplicate_message():
    workspace_import(document=small_workspace())
    consumer = Consumer.objects.get(key="reviewer")
    consumer.key = "assistant"

    issues = instance_issues(consumer)

    assert issues and issues[0][0] == "key"
    assert 'duplicate consumer key "assistant"' in issues[0][1]

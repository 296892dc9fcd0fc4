"""The admin as reviewers use it: lists, change pages, history with diffs, the resolve page."""

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils.html import escape

from profiles.import_export.imports import workspace_import
from profiles.models import ApiKey, Item, Layer, Profile, ProfileVersion, Rule, Scenario
from profiles.models.keys import key_hash
from tests.profiles.conftest import NOW, api_key_for, small_workspace

pytestmark = pytest.mark.django_db

MODELS = ["consumer", "layer", "item", "profile", "rule", "scenario", "workspaceversion"]
RULE_FIELDS = [
    "participation",
    "mode",
    "required",
    "priority",
    "max_items",
    "max_tokens",
    "order",
    "facets",
    "currentness_max_age_days",
    "currentness_field",
    "currentness_on_stale",
    "currentness_on_unknown",
]


@pytest.fixture
def workspace():
    workspace_import(document=small_workspace())
    profile = Profile.objects.get(key="profile-0")
    Scenario.objects.create(
        name="Customer C-1 asks about refunds",
        profile=profile,
        input={"message": "refund cards", "customer_id": "C-1"},
        now=NOW,
        is_default=True,
    )
    return profile


def profile_form_data(profile: Profile, **changes) -> dict:
    """Return the POST data of the profile change page as it is, with ``changes`` applied."""
    data = {
        "key": profile.key,
        "name": profile.name,
        "consumer": profile.consumer_id,
        "objective": profile.objective,
        "environment": profile.environment or "",
        "budget": profile.budget,
        "description": profile.description,
    }
    rules = list(profile.rules.order_by("position", "id"))
    data.update(
        {
            "rules-TOTAL_FORMS": len(rules),
            "rules-INITIAL_FORMS": len(rules),
            "rules-MIN_NUM_FORMS": 0,
            "rules-MAX_NUM_FORMS": 1000,
        }
    )
    for index, rule in enumerate(rules):
        prefix = f"rules-{index}-"
        data[prefix + "id"] = rule.pk
        data[prefix + "profile"] = profile.pk
        data[prefix + "layer"] = rule.layer_id
        for field in RULE_FIELDS:
            value = getattr(rule, field)
            if field == "required":
                value = {None: "unknown", True: "true", False: "false"}[value]
            elif field == "facets":
                value = "null" if value is None else str(value).replace("'", '"')
            data[prefix + field] = "" if value is None else value
    for key, value in changes.items():
        data[key] = value
    return data


@pytest.mark.parametrize("model", MODELS)
def test_admin_changelist__superuser__lists_the_rows(admin_client, workspace, model):
    response = admin_client.get(reverse(f"admin:profiles_{model}_changelist"))

    assert response.status_code == 200


@pytest.mark.parametrize("model", ["consumer", "layer", "item", "profile", "rule", "scenario"])
def test_admin_change_and_history_pages__superuser__load(admin_client, workspace, model):
    instance = {
        "consumer": lambda: workspace.consumer,
        "layer": lambda: Layer.objects.first(),
        "item": lambda: Item.objects.first(),
        "profile": lambda: workspace,
        "rule": lambda: Rule.objects.first(),
        "scenario": lambda: Scenario.objects.first(),
    }[model]()

    change = admin_client.get(reverse(f"admin:profiles_{model}_change", args=[instance.pk]))
    history = admin_client.get(reverse(f"admin:profiles_{model}_history", args=[instance.pk]))

    assert change.status_code == 200
    assert history.status_code == 200


def test_admin_profile_change_page__has_a_resolve_button(admin_client, workspace):
    response = admin_client.get(reverse("admin:profiles_profile_change", args=[workspace.pk]))

    assert reverse("admin:profiles_profile_resolve", args=[workspace.pk]) in response.text


def test_admin_layer_change_page__links_to_its_items_filtered_by_layer(admin_client, workspace):
    layer = Layer.objects.get(key="layer-000")

    response = admin_client.get(reverse("admin:profiles_layer_change", args=[layer.pk]))
    items = admin_client.get(
        reverse("admin:profiles_item_changelist") + f"?layer__id__exact={layer.pk}"
    )

    assert f"?layer__id__exact={layer.pk}" in response.text
    assert "4 items" in response.text
    assert items.status_code == 200
    assert "docs/item-0003.md" in items.text


def test_admin_resolve_view__default_scenario__shows_status_decisions_and_output(
    admin_client, workspace
):
    response = admin_client.get(reverse("admin:profiles_profile_resolve", args=[workspace.pk]))

    assert response.status_code == 200
    text = response.text
    assert "Customer C-1 asks about refunds" in text
    assert 'id="resolve-status"' in text
    assert "INCLUDED_BY_PROFILE" in text or "INCLUDED_APPLICABLE" in text
    assert "## Layer 0" in text  # the rendered markdown output
    assert Scenario.objects.count() == 1  # read-only: nothing created


def test_admin_resolve_view__anonymous__is_sent_to_the_login_page(client, workspace):
    response = client.get(reverse("admin:profiles_profile_resolve", args=[workspace.pk]))

    assert response.status_code == 302
    assert "login" in response["Location"]


def test_admin_profile_save__budget_changed__history_shows_who_changed_which_field(
    admin_client, admin_user, workspace
):
    url = reverse("admin:profiles_profile_change", args=[workspace.pk])

    response = admin_client.post(url, profile_form_data(workspace, budget=1234))

    assert response.status_code == 302, response.text[:2000]
    workspace.refresh_from_db()
    assert workspace.budget == 1234
    assert workspace.updated_by == admin_user
    record = workspace.history.first()
    assert record.history_user == admin_user
    delta = record.diff_against(record.prev_record)
    assert [(c.field, c.old, c.new) for c in delta.changes if c.field == "budget"] == [
        ("budget", 800, 1234)
    ]
    history = admin_client.get(reverse("admin:profiles_profile_history", args=[workspace.pk]))
    assert "<strong>Budget:</strong>" in history.text
    assert "1234" in history.text


def test_admin_profile_save__fields_and_a_rule_changed__one_version_with_both(
    admin_client, admin_user, workspace
):
    url = reverse("admin:profiles_profile_change", args=[workspace.pk])
    versions = ProfileVersion.objects.filter(profile_key=workspace.key)
    before = versions.count()

    response = admin_client.post(
        url, profile_form_data(workspace, budget=1234, **{"rules-0-max_items": "2"})
    )

    assert response.status_code == 302, response.text[:2000]
    assert versions.count() == before + 1
    latest = versions.order_by("-number").first()
    assert latest.author == admin_user
    assert latest.document["budget"] == 1234
    assert latest.document["rules"]["layer-000"]["maxItems"] == 2


def test_admin_profile_save__rule_required_and_excluded__shows_the_engine_message_and_saves_nothing(
    admin_client, workspace
):
    url = reverse("admin:profiles_profile_change", args=[workspace.pk])
    data = profile_form_data(
        workspace, **{"rules-0-required": "true", "rules-0-participation": "exclude"}
    )

    response = admin_client.post(url, data)

    assert response.status_code == 200
    assert "a required layer cannot have participation exclude" in response.text
    rule = Rule.objects.get(profile=workspace, layer__key="layer-000")
    assert rule.participation is None
    assert rule.required is None


def test_admin_item_save__path_taken_in_the_layer__shows_the_engine_message(
    admin_client, workspace
):
    layer = Layer.objects.get(key="layer-000")
    url = reverse("admin:profiles_item_add")

    response = admin_client.post(
        url,
        {"layer": layer.pk, "path": "docs/item-0001.md", "title": "", "body": "", "metadata": "{}"},
    )

    assert response.status_code == 200
    assert layer.items.count() == 4
    assert escape('duplicate path "docs/item-0001.md"') in response.text


def test_admin_consumer_save__bad_key__shows_the_key_pattern(admin_client, workspace):
    response = admin_client.post(
        reverse("admin:profiles_consumer_add"), {"key": "Not A Key", "name": ""}
    )

    assert response.status_code == 200
    assert "must match" in response.text


def test_admin_profile_add__with_a_rule__creates_both_and_records_the_author(
    admin_client, admin_user, workspace
):
    layer = Layer.objects.get(key="layer-001")
    data = {
        "key": "new-profile",
        "name": "New profile",
        "consumer": workspace.consumer_id,
        "objective": "fresh-objective",
        "environment": "",
        "budget": 300,
        "description": "",
        "rules-TOTAL_FORMS": 1,
        "rules-INITIAL_FORMS": 0,
        "rules-MIN_NUM_FORMS": 0,
        "rules-MAX_NUM_FORMS": 1000,
        "rules-0-layer": layer.pk,
        "rules-0-participation": "include",
        "rules-0-mode": "on-demand",
        "rules-0-required": "unknown",
        "rules-0-facets": "null",
    }

    response = admin_client.post(reverse("admin:profiles_profile_add"), data)

    assert response.status_code == 302, response.text[:3000]
    profile = Profile.objects.get(key="new-profile")
    rule = profile.rules.get()
    assert (rule.layer, rule.participation, rule.mode, rule.required) == (
        layer,
        "include",
        "on-demand",
        None,
    )
    assert profile.created_by == admin_user
    assert rule.created_by == admin_user
    version = ProfileVersion.objects.get(profile_key="new-profile")  # one, with its rule
    assert version.number == 1
    assert version.document["rules"] == {
        "layer-001": {"participation": "include", "mode": "on-demand"}
    }


def test_admin_profile_add__selection_taken__shows_the_engine_message(admin_client, workspace):
    data = {
        "key": "twin",
        "name": "",
        "consumer": workspace.consumer_id,
        "objective": workspace.objective,
        "environment": "",
        "budget": 300,
        "description": "",
        "rules-TOTAL_FORMS": 0,
        "rules-INITIAL_FORMS": 0,
        "rules-MIN_NUM_FORMS": 0,
        "rules-MAX_NUM_FORMS": 1000,
    }

    response = admin_client.post(reverse("admin:profiles_profile_add"), data)

    assert response.status_code == 200
    assert "already has consumer" in response.text
    assert not Profile.objects.filter(key="twin").exists()


# --- API keys ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_admin_api_keys__listed_and_opened__no_key_and_no_hash_on_any_page(admin_client):
    owner = User.objects.create_user("dana")
    key = api_key_for(owner, scopes=["read"], name="dana's bot")
    token = api_key_for(owner)
    record = ApiKey.objects.get(kind="scoped")

    changelist = admin_client.get(reverse("admin:profiles_apikey_changelist"))
    detail = admin_client.get(reverse("admin:profiles_apikey_change", args=[record.pk]))

    for response in (changelist, detail):
        assert response.status_code == 200
        html = response.content.decode()
        for secret in (key, token, record.hash, key_hash(token)):
            assert secret not in html
    listed = changelist.content.decode()
    for shown in ("dana&#x27;s bot", record.prefix, "dana", "read"):
        assert shown in listed
    assert admin_client.get(reverse("admin:profiles_apikey_add")).status_code == 403


@pytest.mark.django_db
def test_admin_api_keys__revoke_action__the_key_gets_401(admin_client, client):
    key = api_key_for(User.objects.create_user("dana"), scopes=["read"])
    record = ApiKey.objects.get()

    response = admin_client.post(
        reverse("admin:profiles_apikey_changelist"),
        {"action": "revoke", "_selected_action": [record.pk]},
    )

    assert response.status_code == 302
    assert ApiKey.objects.get().revoked_at is not None
    api = client.get("/api/v1/profiles/", headers={"Authorization": f"Bearer {key}"})
    assert api.status_code == 401


def test_admin_model_names__every_registered_model__plural_is_english(admin_client):
    # Django's default plural appends an "s": "webhook deliverys" (issue 38).
    plurals = {model._meta.verbose_name_plural for model in admin.site._registry}
    wrong = [plural for plural in plurals if plural.endswith("ys") and plural[-3:-2] not in "aeiou"]
    assert wrong == []
    index = admin_client.get(reverse("admin:index")).content.decode()
    assert "Webhook deliveries" in index
    assert "deliverys" not in index

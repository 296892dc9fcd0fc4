"""CRUD endpoints: status codes, error shapes, permissions, pagination, filters, query counts."""

import pytest

from profiles.authoring.scenarios import scenarios_upsert
from profiles.import_export.imports import workspace_import
from profiles.models import Consumer, Item, Layer, Profile, Rule, Scenario, WorkspaceVersion
from tests.profiles.conftest import API, NOW, small_workspace

pytestmark = pytest.mark.django_db

REQUEST = {
    "profile": "profile-0",
    "input": {"message": "refund cards", "customer_id": "C-1"},
    "now": NOW,
}


def error(response) -> dict:
    return response.json()["error"]


# --- permissions --------------------------------------------------------------------------

COLLECTIONS = ["consumers/", "layers/", "profiles/", "scenarios/", "layers/layer-000/items/"]


@pytest.mark.parametrize("url", [*COLLECTIONS, "profiles/profile-0", "workspace"])
def test_any_endpoint__anonymous__401_in_the_error_shape(small, anonymous_client, url):
    response = anonymous_client.get(API + url)

    assert response.status_code == 401
    assert error(response)["code"] == "NOT_AUTHENTICATED"


@pytest.mark.parametrize("url", ["consumers/", "layers/", "profiles/", "scenarios/"])
def test_collections__reader__can_read(small, reader_client, url):
    assert reader_client.get(API + url).status_code == 200


@pytest.mark.parametrize(
    ("method", "url", "body"),
    [
        ("post", "consumers/", {"key": "new-one"}),
        ("patch", "consumers/assistant", {"name": "x"}),
        ("delete", "consumers/reviewer", None),
        ("post", "layers/", {"key": "new-layer"}),
        ("put", "layers/layer-000", {"name": "x"}),
        ("post", "layers/layer-000/items/", {"path": "x"}),
        ("post", "profiles/", {"key": "p", "consumer": "assistant", "objective": "o", "budget": 5}),
        ("patch", "profiles/profile-0", {"budget": 5}),
        ("put", "profiles/profile-0/rules/layer-001", {"mode": "inline"}),
        ("delete", "profiles/profile-0", None),
        ("post", "workspace", {"version": 1}),
    ],
)
def test_writes__reader__403_and_nothing_changes(small, reader_client, method, url, body):
    version = WorkspaceVersion.current_token()

    response = getattr(reader_client, method)(API + url, body, format="json")

    assert response.status_code == 403
    assert error(response)["code"] == "PERMISSION_DENIED"
    assert WorkspaceVersion.current_token() == version


def test_writes__editors_group_member__allowed(small, editor_client):
    response = editor_client.patch(API + "consumers/assistant", {"name": "Helper"}, format="json")

    assert response.status_code == 200
    assert Consumer.objects.get(key="assistant").name == "Helper"


# --- pagination and filters ---------------------------------------------------------------


def test_items_list__page_size__pages_through_every_item_once(editor_client, db):
    workspace_import(document=small_workspace(layers=1, items=7))

    first = editor_client.get(API + "layers/layer-000/items/?page_size=3").json()
    second = editor_client.get(API + "layers/layer-000/items/?page_size=3&page=2").json()
    third = editor_client.get(API + "layers/layer-000/items/?page_size=3&page=3").json()

    paths = [item["path"] for page in (first, second, third) for item in page["results"]]
    assert first["count"] == 7
    assert first["next"].endswith("page=2&page_size=3")
    assert third["next"] is None
    assert paths == [f"docs/item-{n:04d}.md" for n in range(7)]


def test_list__page_past_the_end__404_not_found(small, reader_client):
    response = reader_client.get(API + "layers/?page=99")

    assert response.status_code == 404
    assert error(response)["code"] == "NOT_FOUND"


def test_list__page_size_above_500__capped_at_500(editor_client, db):
    workspace_import(document=small_workspace(layers=1, items=501))

    page = editor_client.get(API + "layers/layer-000/items/?page_size=10000").json()

    assert len(page["results"]) == 500


def test_items_list__q_and_metadata_filter__only_matching_items(small, editor_client):
    by_customer = editor_client.get(API + "layers/layer-000/items/?metadata.customer_id=C-1")
    by_text = editor_client.get(API + "layers/layer-000/items/?q=number 2")

    assert [item["path"] for item in by_customer.json()["results"]] == ["docs/item-0001.md"]
    assert [item["path"] for item in by_text.json()["results"]] == ["docs/item-0002.md"]
    assert by_customer.json()["results"][0]["ref"] == "layer-000/docs/item-0001.md"


@pytest.mark.parametrize("value", ["%C2%B2", "-%C2%B2", "%D9%A3", "-"])
def test_items_list__metadata_value_not_ascii_digits__compared_as_text(small, editor_client, value):
    response = editor_client.get(API + f"layers/layer-000/items/?metadata.customer_id={value}")

    assert response.status_code == 200
    assert response.json()["results"] == []


def test_items_list__bad_metadata_field__400_naming_the_parameter(small, editor_client):
    response = editor_client.get(API + "layers/layer-000/items/?metadata.a__b=1")

    assert response.status_code == 400
    assert error(response)["path"] == "metadata.a__b"


def test_profiles_list__filters_and_search__narrow_the_results(small, reader_client):
    by_consumer = reader_client.get(API + "profiles/?consumer=reviewer").json()
    by_objective = reader_client.get(API + "profiles/?objective=objective-0").json()
    by_search = reader_client.get(API + "profiles/?search=Profile 1").json()

    assert [p["key"] for p in by_consumer["results"]] == ["profile-1"]
    assert [p["key"] for p in by_objective["results"]] == ["profile-0"]
    assert [p["key"] for p in by_search["results"]] == ["profile-1"]


def test_layers_list__search__matches_key_and_name(small, reader_client):
    response = reader_client.get(API + "layers/?search=layer 2").json()

    assert [layer["key"] for layer in response["results"]] == ["layer-002"]
    assert response["results"][0]["itemCount"] == 4


@pytest.mark.parametrize(
    ("url", "queries"),
    [
        ("layers/", 4),
        ("profiles/", 5),
        ("consumers/", 4),
        ("scenarios/", 4),
        ("layers/layer-000/items/", 6),
    ],
)
def test_lists__ten_times_more_rows__same_number_of_queries(
    editor_client, db, django_assert_max_num_queries, url, queries
):
    for size in (2, 20):
        workspace_import(
            document=small_workspace(layers=size, items=size, profiles=size), mode="replace"
        )
        scenarios_upsert(
            scenarios=[
                {"name": f"s{n}", "profile": f"profile-{n}", "input": {}, "now": NOW}
                for n in range(size)
            ]
        )
        with django_assert_max_num_queries(queries):
            response = editor_client.get(API + url)
        assert response.status_code == 200


# --- consumers ----------------------------------------------------------------------------


def test_consumers__create_read_update_delete__round_trip(small, editor_client):
    created = editor_client.post(
        API + "consumers/", {"key": "summarizer", "render": {"format": "xml"}}, format="json"
    )
    read = editor_client.get(API + "consumers/summarizer")
    updated = editor_client.put(API + "consumers/summarizer", {"name": "Sum"}, format="json")
    deleted = editor_client.delete(API + "consumers/summarizer")

    assert created.status_code == 201
    assert created["Location"].endswith("/api/v1/consumers/summarizer")
    assert read.json() == {"key": "summarizer", "render": {"format": "xml"}}
    assert read["ETag"]
    assert updated.json() == {"key": "summarizer", "name": "Sum"}
    assert deleted.status_code == 204
    assert editor_client.get(API + "consumers/summarizer").status_code == 404


def test_consumers__slashless_collection_url__works_for_post(small, editor_client):
    response = editor_client.post(API + "consumers", {"key": "no-slash"}, format="json")

    assert response.status_code == 201


def test_consumers__existing_key__409_conflict(small, editor_client):
    response = editor_client.post(API + "consumers/", {"key": "assistant"}, format="json")

    assert response.status_code == 409
    assert error(response) == {
        "code": "CONFLICT",
        "message": 'key: consumer "assistant" already exists',
        "path": "key",
        "retryable": False,
    }


def test_consumers__delete_one_used_by_a_profile__409_and_kept(small, editor_client):
    response = editor_client.delete(API + "consumers/assistant")

    assert response.status_code == 409
    assert "profile-0" in error(response)["message"]
    assert Consumer.objects.filter(key="assistant").exists()


def test_consumers__bad_render_format__400_with_the_engine_path_and_the_field(small, editor_client):
    response = editor_client.post(
        API + "consumers/", {"key": "c3", "render": {"format": "html"}}, format="json"
    )

    assert response.status_code == 400
    assert error(response)["code"] == "INVALID_WORKSPACE"
    assert error(response)["path"] == "consumers[2].render.format"
    assert error(response)["field"] == "render.format"
    assert not Consumer.objects.filter(key="c3").exists()


def test_consumers__key_change_in_put__400_at_key(small, editor_client):
    response = editor_client.put(API + "consumers/assistant", {"key": "other"}, format="json")

    assert response.status_code == 400
    assert error(response)["path"] == "key"


def test_consumer__unknown_key__404_not_found(small, reader_client):
    response = reader_client.get(API + "consumers/nope")

    assert response.status_code == 404
    assert error(response)["code"] == "NOT_FOUND"


def test_unknown_endpoint__404_in_the_error_shape(small, reader_client):
    response = reader_client.get(API + "no-such-thing")

    assert response.status_code == 404
    assert error(response)["code"] == "NOT_FOUND"


def test_method_not_allowed__405_in_the_error_shape(small, reader_client):
    response = reader_client.get(API + "resolve")

    assert response.status_code == 405
    assert error(response)["code"] == "METHOD_NOT_ALLOWED"


# --- layers and items ---------------------------------------------------------------------


def test_layers__create_with_bad_availability__400_and_nothing_written(small, editor_client):
    version = WorkspaceVersion.current_token()

    response = editor_client.post(
        API + "layers/", {"key": "notes", "availability": "sometimes"}, format="json"
    )

    assert response.status_code == 400
    assert error(response)["path"] == "layers[3].availability"
    assert error(response)["field"] == "availability"
    assert not Layer.objects.filter(key="notes").exists()
    assert WorkspaceVersion.current_token() == version


def test_layers__patch__changes_the_field_and_keeps_the_items(small, editor_client):
    response = editor_client.patch(
        API + "layers/layer-001", {"name": "Tickets", "requiresInput": ["x"]}, format="json"
    )

    assert response.status_code == 200
    assert response.json()["name"] == "Tickets"
    assert response.json()["itemFilter"] == {"customer_id": "customer_id"}
    assert Item.objects.filter(layer__key="layer-001").count() == 4


def test_layers__delete_with_rules_in_profiles__409(small, editor_client):
    response = editor_client.delete(API + "layers/layer-000")

    assert response.status_code == 409
    assert Layer.objects.filter(key="layer-000").exists()


def test_layers__delete_without_rules__204_and_items_gone(small, editor_client):
    response = editor_client.delete(API + "layers/layer-001")

    assert response.status_code == 204
    assert not Item.objects.filter(layer__key="layer-001").exists()


def test_items__path_with_slashes__created_read_and_deleted_by_its_url(small, editor_client):
    body = {"path": "guides/refunds/cards.md", "title": "Cards", "metadata": {"tag": "a"}}

    created = editor_client.post(API + "layers/layer-000/items/", body, format="json")
    read = editor_client.get(API + "layers/layer-000/items/guides/refunds/cards.md")
    deleted = editor_client.delete(API + "layers/layer-000/items/guides/refunds/cards.md")

    assert created.status_code == 201
    assert read.json() == {
        "ref": "layer-000/guides/refunds/cards.md",
        "path": "guides/refunds/cards.md",
        "title": "Cards",
        "body": "",
        "metadata": {"tag": "a"},
    }
    assert deleted.status_code == 204
    assert not Item.objects.filter(path="guides/refunds/cards.md").exists()


def test_items__duplicate_path__409(small, editor_client):
    response = editor_client.post(
        API + "layers/layer-000/items/", {"path": "docs/item-0000.md"}, format="json"
    )

    assert response.status_code == 409
    assert error(response)["path"] == "path"


def test_items__invalid_field__400_with_engine_path(small, editor_client):
    response = editor_client.patch(
        API + "layers/layer-000/items/docs/item-0000.md", {"title": ["a", "list"]}, format="json"
    )

    assert response.status_code == 400
    assert error(response)["path"] == "layers[0].items[0].title"
    assert error(response)["field"] == "title"


def test_items__unknown_layer__404(small, editor_client):
    assert editor_client.get(API + "layers/nope/items/").status_code == 404


# --- profiles and rules -------------------------------------------------------------------


def test_profiles__representation__has_rules_keyed_by_layer_and_an_etag(small, reader_client):
    response = reader_client.get(API + "profiles/profile-0")

    assert response.status_code == 200
    assert response["ETag"].startswith('"')
    assert response.json() == {
        "key": "profile-0",
        "name": "Profile 0",
        "consumer": "assistant",
        "objective": "objective-0",
        "budget": 800,
        "rules": {
            "layer-000": {"mode": "inline", "priority": 0, "maxItems": 3},
            "layer-002": {"mode": "retrieve", "priority": 2, "maxItems": 3},
        },
    }


def test_profiles__create__resolvable_at_once(small, editor_client):
    body = {
        "key": "fresh",
        "consumer": "assistant",
        "objective": "new-objective",
        "budget": 300,
        "rules": {"layer-002": {"participation": "exclude"}},
    }

    created = editor_client.post(API + "profiles/", body, format="json")
    resolved = editor_client.post(API + "resolve", {**REQUEST, "profile": "fresh"}, format="json")

    assert created.status_code == 201
    assert resolved.status_code == 200
    layers = {layer["layer"]: layer for layer in resolved.json()["layers"]}
    assert layers["layer-002"]["decision"]["reason"] == "EXCLUDED_BY_PROFILE"


def test_profiles__invalid_rule_in_put__400_with_engine_path(small, editor_client):
    body = {
        "consumer": "assistant",
        "objective": "objective-0",
        "budget": 800,
        "rules": {"layer-000": {"mode": "sideways"}},
    }

    response = editor_client.put(API + "profiles/profile-0", body, format="json")

    assert response.status_code == 400
    assert error(response)["path"] == "profiles[0].rules.layer-000.mode"
    assert error(response)["field"] == "rules.layer-000.mode"
    assert Rule.objects.get(profile__key="profile-0", layer__key="layer-000").mode == "inline"


def test_profiles__patch_rules__replaces_named_layers_and_keeps_the_others(small, editor_client):
    response = editor_client.patch(
        API + "profiles/profile-0",
        {"budget": 500, "rules": {"layer-000": None, "layer-001": {"mode": "on-demand"}}},
        format="json",
    )

    assert response.status_code == 200
    assert response.json()["budget"] == 500
    assert response.json()["rules"] == {
        "layer-002": {"mode": "retrieve", "priority": 2, "maxItems": 3},
        "layer-001": {"mode": "on-demand"},
    }


def test_profiles__selection_taken_by_another_profile__400_and_unchanged(small, editor_client):
    response = editor_client.patch(
        API + "profiles/profile-1",
        {"consumer": "assistant", "objective": "objective-0"},
        format="json",
    )

    assert response.status_code == 400
    assert error(response)["path"].startswith("profiles[1]")
    assert Profile.objects.get(key="profile-1").objective == "objective-1"


def test_profiles__delete__204_and_its_scenarios_go_too(small, editor_client):
    scenarios_upsert(scenarios=[{"name": "s", "profile": "profile-1", "input": {}}])

    response = editor_client.delete(API + "profiles/profile-1")

    assert response.status_code == 204
    assert not Profile.objects.filter(key="profile-1").exists()
    assert not Scenario.objects.exists()


def test_rules__get_default_rule_layer__ruleSource_default(small, reader_client):
    response = reader_client.get(API + "profiles/profile-0/rules/layer-001")

    assert response.json() == {
        "profile": "profile-0",
        "layer": "layer-001",
        "ruleSource": "default",
        "rule": {},
    }


def test_rules__put_patch_delete__change_what_resolve_uses(small, editor_client):
    put = editor_client.put(
        API + "profiles/profile-0/rules/layer-000",
        {"participation": "exclude"},
        format="json",
    )
    excluded = editor_client.post(API + "resolve", REQUEST, format="json").json()
    patch = editor_client.patch(
        API + "profiles/profile-0/rules/layer-000", {"participation": None}, format="json"
    )
    delete = editor_client.delete(API + "profiles/profile-0/rules/layer-000")
    after = editor_client.post(API + "resolve", REQUEST, format="json").json()

    assert put.json()["rule"] == {"participation": "exclude"}
    decision = {layer["layer"]: layer for layer in excluded["layers"]}["layer-000"]["decision"]
    assert decision["reason"] == "EXCLUDED_BY_PROFILE"
    assert patch.json()["rule"] == {}
    assert delete.status_code == 204
    assert {layer["layer"]: layer for layer in after["layers"]}["layer-000"][
        "ruleSource"
    ] == "default"


def test_rules__invalid_combination__400_with_engine_path_and_unchanged(small, editor_client):
    response = editor_client.patch(
        API + "profiles/profile-0/rules/layer-000", {"required": True, "maxItems": 0}, format="json"
    )

    assert response.status_code == 400
    assert error(response)["path"].startswith("profiles[0].rules.layer-000")
    assert Rule.objects.get(profile__key="profile-0", layer__key="layer-000").max_items == 3


def test_rules__unknown_layer__404(small, reader_client):
    assert reader_client.get(API + "profiles/profile-0/rules/nope").status_code == 404


# --- scenarios ----------------------------------------------------------------------------


def test_scenarios__create_read_patch_delete__round_trip(small, editor_client):
    body = {"name": "Card refund", "profile": "profile-0", "input": {"customer_id": "C-1"}}

    created = editor_client.post(API + "scenarios/", body, format="json")
    patched = editor_client.patch(API + "scenarios/Card refund", {"now": NOW}, format="json")
    resolved = editor_client.post(API + "resolve", {"scenario": "Card refund"}, format="json")
    deleted = editor_client.delete(API + "scenarios/Card refund")

    assert created.status_code == 201
    assert patched.json()["now"] == NOW
    assert patched.json()["input"] == {"customer_id": "C-1"}
    assert resolved.json()["now"] == NOW
    assert deleted.status_code == 204


def test_scenarios__unknown_layer_in_availability__400_at_the_body_path(small, editor_client):
    body = {"name": "s", "profile": "profile-0", "availability": {"nope": "unknown"}}

    response = editor_client.post(API + "scenarios/", body, format="json")

    assert response.status_code == 400
    assert error(response)["path"] == "availability.nope"


def test_scenarios__existing_name__409(small, editor_client):
    scenarios_upsert(scenarios=[{"name": "s", "profile": "profile-0", "input": {}}])

    response = editor_client.post(
        API + "scenarios/", {"name": "s", "profile": "profile-0"}, format="json"
    )

    assert response.status_code == 409


def test_options__views_with_and_without_a_serializer__fields_where_one_is_declared(
    small, editor_client
):
    consumers = editor_client.options(API + "consumers/").json()
    rule = editor_client.options(API + "profiles/profile-0/rules/layer-000").json()
    apply = editor_client.options(API + "change-requests/1/apply")

    assert "key" in consumers["actions"]["POST"]
    assert "maxItems" in rule["actions"]["PUT"]  # the rule viewset finds its object itself
    assert apply.status_code == 200 and "actions" not in apply.json()  # it reads no serializer

"""POST expand (the privacy rule) and POST profiles/<key>/preview (a draft, nothing written)."""

import json

import pytest

from profiles.models import Consumer, Item, Layer, Profile, Rule, Scenario, WorkspaceVersion
from tests.profiles.conftest import API, NOW

pytestmark = pytest.mark.django_db

DANA = {
    "profile": "support-answer",
    "input": {"message": "Where is my refund?", "customer_id": "C-1001"},
    "now": NOW,
}
NOT_AVAILABLE = {
    "error": {
        "code": "REF_NOT_AVAILABLE",
        "message": "reference not available for this request",
        "path": "ref",
        "retryable": False,
    }
}


def expand(client, ref, request=DANA):
    return client.post(API + "expand", {**request, "ref": ref}, format="json")


def resolution(client, request=DANA) -> dict:
    return client.post(API + "resolve", request, format="json").json()


def test_expand__reference_of_the_resolution__returns_the_item_with_json_safe_metadata(
    demo, reader_client
):
    references = resolution(reader_client)["references"]
    glossary = next(entry for entry in references if entry["reason"] == "ON_DEMAND")

    response = expand(reader_client, glossary["ref"])

    assert response.status_code == 200
    body = response.json()
    stored = Item.objects.get(layer__key=glossary["layer"], path=glossary["item"])
    assert body == {
        "ref": glossary["ref"],
        "layer": glossary["layer"],
        "item": glossary["item"],
        "title": stored.title,
        "body": stored.body,
        "metadata": stored.metadata,
    }
    json.dumps(body["metadata"])


def test_expand__every_ref_the_resolution_lists__is_expandable(demo, reader_client):
    result = resolution(reader_client)
    refs = {entry["ref"] for entry in result["references"]}
    for layer in result["layers"]:
        for entry in layer["materialized"]["items"]:
            refs.add(f"{layer['layer']}/{entry['item']}")

    statuses = {ref: expand(reader_client, ref).status_code for ref in sorted(refs)}

    assert refs
    assert set(statuses.values()) == {200}


def test_expand__another_customers_item__404_identical_to_a_ref_that_does_not_exist(
    demo, reader_client
):
    other_ticket = Item.objects.filter(layer__key="tickets").exclude(
        metadata__customer_id="C-1001"
    )[0]

    other_customer = expand(reader_client, f"tickets/{other_ticket.path}")
    other_profile = expand(reader_client, "customer/C-1002")
    nonexistent = expand(reader_client, "tickets/T-00000-does-not-exist")

    assert other_customer.status_code == other_profile.status_code == nonexistent.status_code
    assert other_customer.status_code == 404
    assert other_customer.content == other_profile.content == nonexistent.content
    assert nonexistent.json() == NOT_AVAILABLE


@pytest.mark.parametrize(
    "ref",
    [
        "customer/C-1002",
        "customer//C-1002",
        "customer/../customer/C-1002",
        " customer/C-1002",
        "CUSTOMER/C-1002",
        "customer%2FC-1002",
        "customer",
        "/customer/C-1002",
        "customer/C-1002/",
        "customer/c-1002",
        "no-such-layer/C-1002",
    ],
)
def test_expand__other_customers_ref_spelled_any_way__same_404(demo, reader_client, ref):
    response = expand(reader_client, ref)

    assert response.status_code == 404
    assert response.json() == NOT_AVAILABLE


def test_expand__the_other_customers_own_request__can_expand_their_item(demo, reader_client):
    marcus = {**DANA, "input": {"customer_id": "C-1002", "message": "refund"}}

    assert expand(reader_client, "customer/C-1002", marcus).status_code == 200
    assert expand(reader_client, "customer/C-1001", marcus).status_code == 404


def test_expand__without_the_filter_input__customer_layers_offer_nothing(demo, reader_client):
    anonymous_visitor = {**DANA, "input": {"message": "Where is my refund?"}}

    response = expand(reader_client, "customer/C-1001", anonymous_visitor)

    assert response.json() == NOT_AVAILABLE


def test_expand__item_of_an_omitted_layer__404(demo, reader_client):
    result = resolution(reader_client)
    omitted = next(
        layer["layer"]
        for layer in result["layers"]
        if layer["decision"]["kind"] == "omitted" and layer["available"]["items"]
    )
    item = Item.objects.filter(layer__key=omitted).first()

    response = expand(reader_client, f"{omitted}/{item.path}")

    assert response.json() == NOT_AVAILABLE


def test_expand__currentness_excluded_item__404(demo, reader_client):
    excluded = resolution(reader_client)["currentnessExcluded"]
    assert excluded

    response = expand(reader_client, f"{excluded[0]['layer']}/{excluded[0]['item']}")

    assert response.json() == NOT_AVAILABLE


def test_expand__not_retrieved_reference__is_available(demo, reader_client):
    references = resolution(reader_client)["references"]
    not_retrieved = next(entry for entry in references if entry["reason"] == "NOT_RETRIEVED")

    assert expand(reader_client, not_retrieved["ref"]).status_code == 200


@pytest.mark.parametrize("detail", ["summary", "full", None])
def test_expand__any_detail__offers_the_refs_of_the_full_resolution(demo, reader_client, detail):
    # Given refs a summary resolution does not list (not retrieved, trimmed by the budget)
    full = resolution(reader_client)
    listed_by_summary = {
        entry["ref"]
        for entry in resolution(reader_client, {**DANA, "detail": "summary"})["references"]
    }
    unlisted = [
        entry["ref"] for entry in full["references"] if entry["ref"] not in listed_by_summary
    ]
    assert unlisted

    # When they are expanded with the detail in the request
    statuses = {
        expand(reader_client, ref, {**DANA, "detail": detail}).status_code for ref in unlisted
    }

    # Then the same refs are offered as for a full resolution
    assert statuses == {200}


@pytest.mark.parametrize("detail", ["summary", "full"])
def test_expand__another_customers_item_with_either_detail__404_identical_to_an_unknown_ref(
    demo, reader_client, detail
):
    request = {**DANA, "detail": detail}
    other_ticket = Item.objects.filter(layer__key="tickets").exclude(
        metadata__customer_id="C-1001"
    )[0]

    other_customer = expand(reader_client, f"tickets/{other_ticket.path}", request)
    other_profile = expand(reader_client, "customer/C-1002", request)
    nonexistent = expand(reader_client, "tickets/T-00000-does-not-exist", request)

    assert other_customer.status_code == other_profile.status_code == nonexistent.status_code
    assert other_customer.status_code == 404
    assert other_customer.content == other_profile.content == nonexistent.content
    assert nonexistent.json() == NOT_AVAILABLE


def test_expand__bad_detail__400_at_detail(demo, reader_client):
    response = expand(reader_client, "customer/C-1001", {**DANA, "detail": "brief"})

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "detail"


@pytest.mark.parametrize("ref", [None, 12, "", ["customer/C-1001"]])
def test_expand__missing_or_non_string_ref__400_at_ref(demo, reader_client, ref):
    body = {**DANA, "ref": ref} if ref is not None else DANA

    response = reader_client.post(API + "expand", body, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "ref"


def test_expand__bad_request_fields__400_with_the_engine_path(demo, reader_client):
    response = expand(reader_client, "customer/C-1001", {**DANA, "now": "soon"})

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "now"


def test_items_endpoints__reader__403_so_material_is_reached_only_through_expand(
    demo, reader_client
):
    listing = reader_client.get(API + "layers/customer/items/")
    detail = reader_client.get(API + "layers/customer/items/C-1002")
    export = reader_client.get(API + "workspace")

    assert listing.status_code == detail.status_code == export.status_code == 403


# --- preview ------------------------------------------------------------------------------


def database_state() -> dict:
    counts = {
        model.__name__: model.objects.count()
        for model in (Consumer, Layer, Item, Profile, Rule, Scenario)
    }
    for model in (Consumer, Layer, Item, Profile, Rule, Scenario):
        counts[f"history-{model.__name__}"] = model.history.count()
    counts["version"] = WorkspaceVersion.current_token()
    return counts


def test_preview__draft_rules_and_budget__change_the_resolution_and_write_nothing(
    demo, reader_client
):
    saved = resolution(reader_client)
    before = database_state()

    response = reader_client.post(
        API + "profiles/support-answer/preview",
        {
            "rules": {"kb": {"mode": "on-demand"}, "glossary": {"participation": "exclude"}},
            "budget": 900,
            "input": DANA["input"],
            "now": NOW,
        },
        format="json",
    )

    assert response.status_code == 200
    draft = response.json()
    layers = {layer["layer"]: layer for layer in draft["layers"]}
    assert draft["budget"]["limit"] == 900
    assert layers["kb"]["decision"]["kind"] == "on-demand"
    assert layers["glossary"]["decision"]["reason"] == "EXCLUDED_BY_PROFILE"
    assert draft != saved
    assert database_state() == before
    assert resolution(reader_client) == saved


def test_preview__no_draft__equals_resolving_the_saved_profile(demo, reader_client):
    response = reader_client.post(
        API + "profiles/support-answer/preview",
        {"input": DANA["input"], "now": NOW},
        format="json",
    )

    assert response.content == reader_client.post(API + "resolve", DANA, format="json").content


def test_preview__detail_summary__equals_resolving_the_saved_profile_with_summary(
    demo, reader_client
):
    summary = {**DANA, "detail": "summary"}

    response = reader_client.post(
        API + "profiles/support-answer/preview",
        {"input": DANA["input"], "now": NOW, "detail": "summary"},
        format="json",
    )

    assert response.status_code == 200
    assert response.json()["detail"] == "summary"
    assert response.content == reader_client.post(API + "resolve", summary, format="json").content


def test_preview__bad_detail__400_at_detail(demo, reader_client):
    response = reader_client.post(
        API + "profiles/support-answer/preview", {"detail": "brief"}, format="json"
    )

    assert response.status_code == 400
    assert response.json()["error"]["path"] == "detail"


def test_preview__invalid_draft_rule__400_invalid_workspace_at_the_engine_path(demo, reader_client):
    before = database_state()

    response = reader_client.post(
        API + "profiles/support-answer/preview",
        {"rules": {"kb": {"mode": "sideways"}}},
        format="json",
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "INVALID_WORKSPACE"
    assert response.json()["error"]["path"] == "profiles[0].rules.kb.mode"
    assert database_state() == before


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"budget": 0}, "profiles[0].budget"),
        ({"rules": {"nope": {"mode": "inline"}}}, "profiles[0].rules.nope"),
        ({"rules": {"kb": {"required": True, "maxItems": 0}}}, "profiles[0].rules.kb"),
        ({"profile": "other"}, "profile"),
    ],
)
def test_preview__bad_draft__400_naming_the_path(demo, reader_client, body, path):
    response = reader_client.post(API + "profiles/support-answer/preview", body, format="json")

    assert response.status_code == 400
    assert response.json()["error"]["path"].startswith(path)


def test_preview__unknown_profile__404_profile_not_found(demo, reader_client):
    response = reader_client.post(API + "profiles/nope/preview", {}, format="json")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "PROFILE_NOT_FOUND"


def test_preview__anonymous__401(demo, anonymous_client):
    response = anonymous_client.post(API + "profiles/support-answer/preview", {}, format="json")

    assert response.status_code == 401


def test_expand__warm_cache__token_user_version_and_fetch_queries_only(
    demo, reader_client, django_assert_max_num_queries
):
    reader_client.post(API + "resolve", DANA, format="json")

    # Token, user, version, and one fetch of the served layers' items for the customer
    with django_assert_max_num_queries(4):
        response = expand(reader_client, "customer/C-1001")

    assert response.status_code == 200

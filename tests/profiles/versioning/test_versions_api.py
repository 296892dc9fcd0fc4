"""Profile versions over the API: every write appends one, diff by SPEC paths, restore appends,
and a resolution names the version that answered it."""

import pytest

from profiles.models import DecisionLog, Profile, ProfileVersion
from tests.profiles.conftest import API, NOW

pytestmark = pytest.mark.django_db

PROFILE = API + "profiles/profile-1"


def versions(key: str = "profile-1") -> list[ProfileVersion]:
    return list(ProfileVersion.objects.filter(profile_key=key).order_by("number"))


def test_import__new_profiles__each_starts_at_version_1(small):
    assert [(version.profile_key, version.number) for version in ProfileVersion.objects.all()] == [
        ("profile-0", 1),
        ("profile-1", 1),
    ]
    assert versions()[0].document["rules"]["layer-000"]["maxItems"] == 3
    assert Profile.objects.get(key="profile-1").version == 1


def test_patch_budget__editor__appends_version_2_with_author_and_document(
    small, editor, editor_client
):
    response = editor_client.patch(PROFILE, {"budget": 650}, format="json")

    assert response.status_code == 200
    latest = versions()[-1]
    assert (latest.number, latest.author, latest.source) == (2, editor, "write")
    assert latest.document["budget"] == 650
    assert versions()[0].document["budget"] == 800  # version 1 is untouched


def test_rule_patch__same_value_again__no_new_version(small, editor_client):
    url = PROFILE + "/rules/layer-000"
    editor_client.patch(url, {"maxItems": 1}, format="json")

    response = editor_client.patch(url, {"maxItems": 1}, format="json")

    assert response.status_code == 200
    assert [version.number for version in versions()] == [1, 2]


def test_versions_list__after_two_writes__newest_first_with_the_fields(small, editor_client):
    editor_client.patch(PROFILE, {"budget": 650}, format="json")
    editor_client.patch(PROFILE + "/rules/layer-002", {"maxItems": 1}, format="json")

    response = editor_client.get(PROFILE + "/versions")

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3
    assert [entry["number"] for entry in body["results"]] == [3, 2, 1]
    first = body["results"][0]
    assert first["author"] == "editor"
    assert {"number", "author", "createdAt", "message"} <= set(first)
    assert "profile" not in first


def test_version_detail__version_1__has_the_profile_document_with_rules(small, reader_client):
    response = reader_client.get(PROFILE + "/versions/1")

    assert response.status_code == 200
    document = response.json()["profile"]
    assert document["key"] == "profile-1"
    assert document["budget"] == 800
    assert document["rules"]["layer-002"] == {"mode": "retrieve", "priority": 2, "maxItems": 3}


def test_version_detail__unknown_number__404(small, reader_client):
    response = reader_client.get(PROFILE + "/versions/9")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "NOT_FOUND"


def test_diff__budget_and_max_items_changed__paths_use_spec_names(small, editor_client):
    editor_client.patch(PROFILE, {"budget": 650}, format="json")
    editor_client.patch(
        PROFILE + "/rules/layer-000",
        {"maxItems": 2, "currentness": {"maxAgeDays": 30}},
        format="json",
    )
    editor_client.patch(PROFILE + "/rules/layer-001", {"mode": "on-demand"}, format="json")

    response = editor_client.get(PROFILE + "/diff?from=1&to=4")

    assert response.status_code == 200
    assert response.json()["changes"] == [
        {"path": "budget", "from": 800, "to": 650},
        {"path": "rules.layer-000.maxItems", "from": 3, "to": 2},
        {"path": "rules.layer-000.currentness", "from": None, "to": {"maxAgeDays": 30}},
        {"path": "rules.layer-001", "from": None, "to": {"mode": "on-demand"}},
    ]


def test_diff__no_parameters__latest_against_the_one_before(small, editor_client):
    editor_client.patch(PROFILE, {"budget": 650}, format="json")
    editor_client.patch(PROFILE, {"budget": 700}, format="json")

    body = editor_client.get(PROFILE + "/diff").json()

    assert (body["fromVersion"], body["toVersion"]) == (2, 3)
    assert body["changes"] == [{"path": "budget", "from": 650, "to": 700}]


def test_diff__bad_and_unknown_numbers__400_and_404(small, reader_client):
    assert reader_client.get(PROFILE + "/diff?from=x").status_code == 400
    missing = reader_client.get(PROFILE + "/diff?from=1&to=7")
    assert missing.status_code == 404
    assert missing.json()["error"]["path"] == "to"


NOT_A_VERSION_NUMBER = [
    pytest.param("%C2%B2", id="superscript-two"),  # str.isdigit accepts it, int() does not
    pytest.param("%D9%A3", id="arabic-indic-three"),  # str.isdecimal and int() accept it
    pytest.param("0", id="zero"),
    pytest.param("-1", id="negative"),
    pytest.param("9" * 19, id="beyond-a-column"),
    pytest.param("9" * 5_000, id="beyond-int-digits"),
]


@pytest.mark.parametrize("value", NOT_A_VERSION_NUMBER)
@pytest.mark.parametrize("name", ["from", "to"])
def test_diff__number_not_in_ascii_digits__400_naming_the_parameter(
    small, reader_client, name, value
):
    response = reader_client.get(f"{PROFILE}/diff?{name}={value}")

    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["path"]) == ("INVALID_REQUEST", name)
    assert error["message"].startswith(f"{name}: must be a version number")


def test_restore__version_1_after_two_writes__appends_version_4_equal_to_1(small, editor_client):
    editor_client.patch(PROFILE, {"budget": 650}, format="json")
    editor_client.delete(PROFILE + "/rules/layer-000")
    before = [(version.number, version.document) for version in versions()]
    etag = editor_client.get(PROFILE)["ETag"]

    response = editor_client.post(PROFILE + "/versions/1/restore", HTTP_IF_MATCH=etag)

    assert response.status_code == 201
    assert response.json()["number"] == 4
    assert response.json()["restoredFrom"] == 1
    assert [(version.number, version.document) for version in versions()][:3] == before
    assert versions()[-1].document == versions()[0].document
    assert Profile.objects.get(key="profile-1").budget == 800
    assert response["ETag"] == editor_client.get(PROFILE)["ETag"]
    assert response["Location"] == f"http://testserver{PROFILE}/versions/4"
    assert editor_client.get(response["Location"]).json()["number"] == 4


def test_restore__stale_if_match__412_and_no_version(small, editor_client):
    etag = editor_client.get(PROFILE)["ETag"]
    editor_client.patch(PROFILE, {"budget": 650}, format="json")

    response = editor_client.post(PROFILE + "/versions/1/restore", HTTP_IF_MATCH=etag)

    assert response.status_code == 412
    assert [version.number for version in versions()] == [1, 2]
    assert Profile.objects.get(key="profile-1").budget == 650


def test_restore__the_current_version__200_and_nothing_appended(small, editor_client):
    response = editor_client.post(PROFILE + "/versions/1/restore")

    assert response.status_code == 200
    assert response.json()["number"] == 1
    assert len(versions()) == 1


def test_restore__reader__403(small, reader_client):
    response = reader_client.post(PROFILE + "/versions/1/restore")

    assert response.status_code == 403
    assert len(versions()) == 1


def test_delete_profile__versions_stay_and_the_last_records_the_deletion(small, editor_client):
    assert editor_client.delete(PROFILE).status_code == 204

    response = editor_client.get(PROFILE + "/versions")

    assert [(entry["number"], entry["deleted"]) for entry in response.json()["results"]] == [
        (2, True),
        (1, False),
    ]


def test_restore__deleted_profile__recreates_it_as_a_new_version(small, editor_client):
    editor_client.delete(PROFILE)

    response = editor_client.post(PROFILE + "/versions/1/restore")

    assert response.status_code == 201
    assert response.json()["number"] == 3
    assert Profile.objects.get(key="profile-1").version == 3


def test_resolve__after_a_write__x_profile_version_names_the_answering_version(
    small, editor_client, reader_client
):
    request = {"profile": "profile-1", "input": {"message": "refund"}, "now": NOW}
    first = reader_client.post(API + "resolve", request, format="json")
    editor_client.patch(PROFILE, {"budget": 650}, format="json")

    second = reader_client.post(API + "resolve", request, format="json")

    assert first["X-Profile-Version"] == "1"
    assert second["X-Profile-Version"] == "2"
    assert second.json()["budget"]["limit"] == 650
    assert "version" not in second.json()["profile"]  # the SPEC §7 body is unchanged
    logged = list(DecisionLog.objects.order_by("id").values_list("profile_version", flat=True))
    assert logged == [1, 2]


def test_resolve__by_consumer_and_objective__header_names_the_selected_profile(
    small, editor_client, reader_client
):
    editor_client.patch(API + "profiles/profile-0", {"budget": 650}, format="json")

    response = reader_client.post(
        API + "resolve",
        {"consumer": "assistant", "objective": "objective-0", "now": NOW},
        format="json",
    )

    assert response.json()["profile"]["key"] == "profile-0"
    assert response["X-Profile-Version"] == "2"

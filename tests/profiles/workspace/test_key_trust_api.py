"""What no scoped API key may do, whatever its owner's role (issue 33): decide which layers are
governed. The rule is one function (``profiles.workspace.permissions.governance_refusal``),
asked by the layer services every door calls."""

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from profiles.import_export.export_stream import workspace_document_read
from profiles.material.layers import layer_update
from profiles.models import ApiKey, Layer
from profiles.models.keys import EXPIRY_LATEST
from profiles.versioning.protection import GovernedByStaff
from profiles.workspace.permissions import governance_refusal
from resolver.documents import dump_yaml
from tests.profiles.conftest import API, api_key_for, token_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def governed(demo):
    """The demo with its policies governed (as ``load_demo`` leaves them)."""
    Layer.objects.filter(key="policies").update(governed=True)


def bearer(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def error(response) -> dict:
    return response.json()["error"]


# --- governance: staff's, never a key's ----------------------------------------------------


def test_governed__staff_write_key_patches_it__403_forbidden_and_unchanged(governed, staff):
    client = bearer(api_key_for(staff, scopes=["write"]))

    response = client.patch(API + "layers/policies", {"governed": False}, format="json")

    assert response.status_code == 403
    assert error(response)["code"] == "FORBIDDEN"
    assert error(response)["path"] == "governed"
    assert "API key" in error(response)["message"]
    assert Layer.objects.get(key="policies").governed


def test_governed__staff_write_key_puts_or_creates__403_and_nothing_written(governed, staff):
    client = bearer(api_key_for(staff, scopes=["write"]))
    entry = client.get(API + "layers/policies").json()
    etag = client.get(API + "layers/policies").headers["ETag"]

    put = client.put(
        API + "layers/policies",
        {**entry, "governed": False},
        format="json",
        HTTP_IF_MATCH=etag,
    )
    created = client.post(
        API + "layers/",
        {"key": "legal-texts", "name": "Legal texts", "governed": True},
        format="json",
    )

    assert (put.status_code, error(put)["path"]) == (403, "governed")
    assert (created.status_code, error(created)["path"]) == (403, "governed")
    assert Layer.objects.get(key="policies").governed
    assert not Layer.objects.filter(key="legal-texts").exists()


def test_governed__staff_write_key_sends_it_unchanged__200(governed, staff):
    # A read-modify-write round trip carries the flag as it is: no change, nothing refused.
    client = bearer(api_key_for(staff, scopes=["write"]))

    response = client.patch(
        API + "layers/policies", {"governed": True, "description": "Our rules"}, format="json"
    )

    assert response.status_code == 200
    assert Layer.objects.get(key="policies").description == "Our rules"


def test_governed__staff_own_token__200_as_for_environment_protection(governed, staff):
    response = token_client(staff).patch(
        API + "layers/policies", {"governed": False}, format="json"
    )

    assert response.status_code == 200
    assert not Layer.objects.get(key="policies").governed


def test_governed__service_with_a_scoped_key__refused_at_the_service(governed, staff):
    api_key_for(staff, scopes=["write"])
    key = ApiKey.objects.get(kind=ApiKey.Kind.SCOPED)

    with pytest.raises(GovernedByStaff):
        layer_update(key="policies", changes={}, governed=False, user=staff, api_key=key)

    assert Layer.objects.get(key="policies").governed
    assert governance_refusal(staff, key) is not None
    assert governance_refusal(staff) is None
    assert governance_refusal(None) is None  # an operator's command


# --- a key limited to environments: every door that resolves a profile ---------------------

SCENARIO = "Dana asks about a late refund"  # a saved scenario of support-answer (production)


def test_staging_key__diff_text_and_impact_of_production__403_naming_the_environment(demo, editor):
    client = bearer(api_key_for(editor, scopes=["read"], environments=["staging"]))

    diff = client.get(API + "profiles/support-answer/diff", {"scenario": SCENARIO})
    impact = client.post(API + "profiles/support-answer/impact", {"budget": 500}, format="json")

    for refused in (diff, impact):
        assert refused.status_code == 403
        assert error(refused)["code"] == "FORBIDDEN"
        assert 'environment "production"' in error(refused)["message"]
        assert "text" not in refused.json() and "impact" not in refused.json()


def test_staging_key__diff_without_text_and_staging_doors__200(demo, editor):
    # The version diff itself is configuration (not limited by environment); only resolving is.
    client = bearer(api_key_for(editor, scopes=["read"], environments=["staging"]))

    changes = client.get(API + "profiles/support-answer/diff")
    impact = client.post(
        API + "profiles/support-answer-staging/impact", {"budget": 500}, format="json"
    )

    assert changes.status_code == 200 and "text" not in changes.json()
    assert impact.status_code == 200
    assert impact.json()["profile"] == "support-answer-staging"


def test_production_key__diff_text__200_with_the_text(demo, editor):
    client = bearer(api_key_for(editor, scopes=["read"], environments=["production"]))

    response = client.get(API + "profiles/support-answer/diff", {"scenario": SCENARIO})

    assert response.status_code == 200
    assert "text" in response.json()


# --- an expiry that stays readable -----------------------------------------------------------


@pytest.mark.parametrize(
    "expires",
    ["9999-12-31T23:59:59-14:00", "9999-12-31T23:59:59.5Z", "10000-01-01T00:00:00Z"],
)
def test_create__expiry_past_year_9999_in_utc__400_naming_the_bound(demo, editor, expires):
    response = token_client(editor).post(
        API + "keys", {"name": "bot", "scopes": ["read"], "expiresAt": expires}, format="json"
    )

    assert response.status_code == 400
    assert error(response)["path"] == "expiresAt"
    assert "9999-12-31T23:59:59Z" in error(response)["message"]
    assert not ApiKey.objects.filter(kind=ApiKey.Kind.SCOPED).exists()


def test_create_api_key_command__expiry_past_year_9999_in_utc__refused_naming_the_bound(
    demo, editor
):
    with pytest.raises(CommandError, match=r"--expires: must be at most 9999-12-31T23:59:59Z"):
        call_command(
            "create_api_key", "editor", "--scope", "read", "--expires", "9999-12-31T23:59:59-14:00"
        )

    assert not ApiKey.objects.filter(kind=ApiKey.Kind.SCOPED).exists()


def test_create__latest_expiry_and_a_far_offset__201_read_back(demo, editor):
    client = token_client(editor)

    latest = client.post(
        API + "keys",
        {"name": "a", "scopes": ["read"], "expiresAt": "9999-12-31T23:59:59Z"},
        format="json",
    )
    offset = client.post(
        API + "keys",
        {"name": "b", "scopes": ["read"], "expiresAt": "9999-12-31T09:59:59-14:00"},
        format="json",
    )

    assert (latest.status_code, offset.status_code) == (201, 201)
    listed = {key["name"]: key["expiresAt"] for key in client.get(API + "keys").json()["results"]}
    assert listed == {"a": "9999-12-31T23:59:59Z", "b": "9999-12-31T23:59:59Z"}
    assert bearer(latest.json()["key"]).get(API + "layers/").status_code == 200


def plant_unreadable_expiry(record: ApiKey) -> None:
    """Store year 10000 in UTC as the column holds it, past what the checks allow (a row
    written before them, or by hand)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "UPDATE profiles_apikey SET expires_at = '10000-01-01 13:59:59+00' WHERE id = %s",
                [record.pk],
            )
        else:
            cursor.execute(
                "UPDATE profiles_apikey SET expires_at = '10000-01-01 13:59:59' WHERE id = %s",
                [record.pk],
            )


def test_key_with_an_unreadable_expiry__every_list_its_requests_and_revoke__work(
    demo, editor, staff
):
    # Given a key whose stored expiry no driver can read back
    key = api_key_for(editor, scopes=["read"], name="far future")
    record = ApiKey.objects.get(kind=ApiKey.Kind.SCOPED)
    plant_unreadable_expiry(record)
    admin = Client()
    admin.force_login(staff)
    studio = Client()
    studio.force_login(editor)

    # Then every list shows it, at the latest moment a key may expire
    for client in (token_client(editor), token_client(staff)):
        listed = client.get(API + "keys")
        assert listed.status_code == 200
        assert listed.json()["results"][0]["expiresAt"] == "9999-12-31T23:59:59Z"
    page = studio.get("/tokens/")
    assert page.status_code == 200 and "far future" in page.content.decode()
    assert admin.get("/admin/profiles/apikey/").status_code == 200
    assert admin.get(f"/admin/profiles/apikey/{record.pk}/change/").status_code == 200
    assert ApiKey.objects.get(pk=record.pk).expires_at == EXPIRY_LATEST
    # And the key works until it is revoked, then gets 401
    assert bearer(key).get(API + "layers/").status_code == 200
    assert token_client(editor).delete(API + f"keys/{record.pk}").status_code == 204
    assert bearer(key).get(API + "layers/").status_code == 401


def demo_document_with_budget(profile: str, budget: int) -> str:
    document = workspace_document_read()
    for entry in document["profiles"]:
        if entry["key"] == profile:
            entry["budget"] = budget
    return dump_yaml(document)


def test_staging_key__import_dry_run_resolving_production__403_and_staging_only__200(demo, editor):
    client = bearer(api_key_for(editor, scopes=["write"], environments=["staging"]))

    production = client.post(
        API + "workspace?dryRun=true",
        demo_document_with_budget("support-answer", 700),
        content_type="application/yaml",
    )
    staging = client.post(
        API + "workspace?dryRun=true",
        demo_document_with_budget("support-answer-staging", 700),
        content_type="application/yaml",
    )

    assert production.status_code == 403
    assert error(production)["code"] == "FORBIDDEN"
    assert 'environment "production"' in error(production)["message"]
    assert "impact" not in production.json()
    assert staging.status_code == 200, staging.content
    assert staging.json()["affectedProfiles"] == ["support-answer-staging"]


# --- a change request's stored impact: resolutions the key may read ------------------------


def test_staging_key__change_request_of_production__impact_withheld(demo, editor):
    # Given a request on a production profile, its impact resolved on every saved scenario
    opened = token_client(editor).post(
        API + "change-requests",
        {"profile": "support-answer", "title": "Smaller", "changes": {"budget": 500}},
        format="json",
    )
    assert opened.status_code == 201, opened.content
    assert opened.json()["impact"], "the demo's production profile has saved scenarios"
    url = API + f"change-requests/{opened.json()['id']}"

    # When keys limited to staging, then to production, read it
    staging = bearer(api_key_for(editor, scopes=["read"], environments=["staging"])).get(url)
    production = bearer(api_key_for(editor, scopes=["read"], environments=["production"])).get(url)

    # Then only the key that may resolve production reads production's resolutions
    assert staging.status_code == 200 and production.status_code == 200
    assert staging.json()["impact"] == []
    assert production.json()["impact"] == opened.json()["impact"]


def test_staging_key__change_set_moving_a_profile_to_production__its_impact_withheld(demo, editor):
    # Given a set that moves a staging profile into a new environment
    opened = token_client(editor).post(
        API + "change-requests",
        {
            "title": "Promote by hand",
            "changes": [
                {
                    "kind": "profile",
                    "op": "update",
                    "key": "support-answer-staging",
                    "value": {"environment": "production", "objective": "moved"},
                }
            ],
        },
        format="json",
    )
    assert opened.status_code == 201, opened.content
    profiles = {entry["profile"] for entry in opened.json()["impact"]}
    assert "support-answer-staging" in profiles
    url = API + f"change-requests/{opened.json()['id']}"

    staging = bearer(api_key_for(editor, scopes=["read"], environments=["staging"])).get(url)
    both = bearer(api_key_for(editor, scopes=["read"], environments=["staging", "production"])).get(
        url
    )

    # Then the staging key does not read what the profile answers once in production
    assert "support-answer-staging" not in {e["profile"] for e in staging.json()["impact"]}
    assert "support-answer-staging" in {e["profile"] for e in both.json()["impact"]}

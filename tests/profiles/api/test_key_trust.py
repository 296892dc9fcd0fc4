"""What no scoped API key may do, whatever its owner's role (issue 33): decide which layers are
governed. The rule is one function (``profiles.workspace.permissions.governance_refusal``),
asked by the layer services every door calls."""

import pytest
from rest_framework.test import APIClient

from profiles.material.layers import layer_update
from profiles.models import ApiKey, Layer
from profiles.safechange.protection import GovernedByStaff
from profiles.workspace.permissions import governance_refusal
from tests.profiles.api.conftest import API, token_client
from tests.profiles.conftest import api_key_for

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

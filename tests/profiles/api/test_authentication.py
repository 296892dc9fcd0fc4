"""Token authentication: the precompiled lookup answers exactly as DRF's ORM lookup does."""

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from profiles.workspace.tokens import token_by_key_get

pytestmark = pytest.mark.django_db


def test_token_by_key_get__existing_key__the_same_token_and_user_as_the_orm_in_one_query():
    user = User.objects.create_user("reader", email="reader@example.com", first_name="Ré")
    token = Token.objects.create(user=user)
    expected = Token.objects.select_related("user").get(key=token.key)

    with CaptureQueriesContext(connection) as queries:
        found = token_by_key_get(token.key)

    assert len(queries) == 1
    for field in Token._meta.concrete_fields:
        assert getattr(found, field.attname) == getattr(expected, field.attname)
    for field in User._meta.concrete_fields:  # dates are dates on SQLite too
        assert getattr(found.user, field.attname) == getattr(expected.user, field.attname)
    assert not found._state.adding and not found.user._state.adding


def test_token_by_key_get__unknown_key__none():
    assert token_by_key_get("0" * 40) is None


@pytest.mark.parametrize(
    ("header", "active", "message"),
    [
        ("Token " + "0" * 40, True, "Invalid token."),
        (None, False, "User inactive or deleted."),
    ],
)
def test_api__bad_token_or_inactive_user__401_with_drf_messages(header, active, message):
    user = User.objects.create_user("someone", is_active=active)
    token = Token.objects.create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header or f"Token {token.key}")

    response = client.get("/api/v1/layers")

    assert response.status_code == 401
    assert message in response.content.decode()

"""The API's users and clients (tests/profiles/api/conftest.py) for the versioning tests of
every door."""

# ruff: noqa: F401

from tests.profiles.api.conftest import (
    editor,
    editor_client,
    fast_passwords,
    fresh_caches,
    reviewer,
    reviewer_client,
    staff,
    staff_client,
)

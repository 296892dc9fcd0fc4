"""Fixtures of the project-wide tests: the people of every role on conformance case 01."""

import pytest

from profiles.models import ImportJob
from profiles.workspace import cache
from tests.profiles.doors.roles import LAYER, People, load_workspace, make_people


@pytest.fixture
def people(db, settings) -> People:
    """Return one user and client per role, case 01 loaded and an import job of the editor's."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.workspace_cache_clear()
    load_workspace()
    people = make_people()
    ImportJob.objects.create(user=people.users["editor"], source_bytes=1)
    ImportJob.objects.create(
        user=people.users["editor"], kind=ImportJob.Kind.BULK, layer=LAYER, source_bytes=1
    )
    yield people
    cache.workspace_cache_clear()

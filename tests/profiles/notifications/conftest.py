"""Fixtures of the webhook tests: a staff member and an editor, receivers allowed on 127.0.0.1."""

import pytest
from django.contrib.auth.models import Group, User

from profiles.notifications.webhooks import webhook_create
from profiles.workspace.permissions import EDITORS_GROUP

SECRET = "a-shared-secret-of-some-length"


@pytest.fixture
def staff(db) -> User:
    return User.objects.create_user("dana", is_staff=True)


@pytest.fixture
def editor(db) -> User:
    user = User.objects.create_user("lee")
    user.groups.add(Group.objects.get_or_create(name=EDITORS_GROUP)[0])
    return user


@pytest.fixture(autouse=True)
def local_receivers(settings):
    """The test's receivers listen on 127.0.0.1: allowed as DEBUG allows it on one machine.
    Retries are due at once and an attempt waits at most one second."""
    settings.WEBHOOKS_ALLOW_PRIVATE = True
    settings.WEBHOOKS_RETRY_BASE_SECONDS = 0
    settings.WEBHOOKS_TIMEOUT_SECONDS = 1
    settings.WEBHOOKS_MAX_ATTEMPTS = 5


def make_webhook(user, url, events=("change_request.opened",), **fields):
    return webhook_create(user=user, url=url, events=list(events), secret=SECRET, **fields)

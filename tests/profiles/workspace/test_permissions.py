"""The permission model: roles, capabilities, one query per user, the editors group."""

import importlib

import pytest
from django.apps import apps
from django.contrib.auth.models import AnonymousUser, Group, User
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from profiles.workspace.permissions import (
    EDITORS_GROUP,
    IMPORT_EXPORT,
    MANAGE_KEYS,
    READ_CONFIG,
    READ_MATERIAL,
    RESOLVE,
    WRITE_MATERIAL,
    WRITE_RULES,
    Capability,
    Role,
    user_can,
    user_role,
)

EDITORS_MIGRATION = importlib.import_module("profiles.migrations.0004_editors_group")


def make_user(role: str) -> User:
    if role == "staff":
        return User.objects.create_user("staff", is_staff=True)
    user = User.objects.create_user(role)
    if role == "editor":
        user.groups.add(Group.objects.get_or_create(name=EDITORS_GROUP)[0])
    return user


EXPECTED = {
    "reader": {RESOLVE, READ_CONFIG},
    "editor": {
        RESOLVE,
        READ_CONFIG,
        READ_MATERIAL,
        WRITE_RULES,
        WRITE_MATERIAL,
        IMPORT_EXPORT,
        MANAGE_KEYS,
    },
    "staff": set(Capability),
}


@pytest.mark.django_db
@pytest.mark.parametrize("role", sorted(EXPECTED))
def test_user_can__each_role__has_exactly_its_capabilities(role):
    user = make_user(role)

    granted = {capability for capability in Capability if user_can(user, capability)}

    assert granted == EXPECTED[role]
    assert user_role(user) == Role(role)


@pytest.mark.django_db
def test_user_can__anonymous_or_inactive__nothing():
    inactive = User.objects.create_user("gone", is_staff=True, is_active=False)

    assert not any(user_can(AnonymousUser(), capability) for capability in Capability)
    assert not any(user_can(inactive, capability) for capability in Capability)
    assert not any(user_can(None, capability) for capability in Capability)


@pytest.mark.django_db
def test_user_can__superuser_without_is_staff__staff_role():
    user = User.objects.create_user("root", is_superuser=True)

    assert user_role(user) is Role.STAFF


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["reader", "editor"])
def test_user_can__every_capability_asked_twice__at_most_one_query(role):
    user = User.objects.get(pk=make_user(role).pk)  # a fresh object, as a request gets

    with CaptureQueriesContext(connection) as queries:
        for _ in range(2):
            for capability in Capability:
                user_can(user, capability)

    assert len(queries) == 1


@pytest.mark.django_db
def test_editors_group__migrated_database__exists():
    assert Group.objects.filter(name=EDITORS_GROUP).count() == 1


@pytest.mark.django_db
def test_editors_group_migration__run_again__keeps_the_one_group_and_its_members():
    editor = make_user("editor")

    EDITORS_MIGRATION.create_editors_group(apps, connection.schema_editor())

    group = Group.objects.get(name=EDITORS_GROUP)
    assert list(group.user_set.all()) == [editor]


@pytest.mark.django_db(transaction=True)
def test_editors_group_migration__reversed__removes_only_an_empty_group():
    make_user("editor")

    # Given members: going back keeps the group (nobody loses their role silently).
    call_command("migrate", "profiles", "0003_decision_log", verbosity=0)
    assert Group.objects.filter(name=EDITORS_GROUP).exists()
    call_command("migrate", "profiles", verbosity=0)

    # Without members, back removes it and forward creates it again.
    User.objects.get(username="editor").groups.clear()
    call_command("migrate", "profiles", "0003_decision_log", verbosity=0)
    assert not Group.objects.filter(name=EDITORS_GROUP).exists()
    call_command("migrate", "profiles", verbosity=0)
    assert Group.objects.filter(name=EDITORS_GROUP).count() == 1

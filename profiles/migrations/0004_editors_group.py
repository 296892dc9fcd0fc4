"""Create the ``editors`` group (profiles.permissions.EDITORS_GROUP): its members are editors.

Idempotent: an existing group (created by hand or by an earlier deployment) is kept with its
members. Reversing removes the group only while it has no members, so going back never takes
anyone's role away silently.
"""

from django.db import migrations

# Frozen here (a migration does not import the code it predates): see EDITORS_GROUP.
EDITORS_GROUP = "editors"


def create_editors_group(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Group.objects.using(schema_editor.connection.alias).get_or_create(name=EDITORS_GROUP)


def remove_empty_editors_group(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    groups = Group.objects.using(schema_editor.connection.alias).filter(name=EDITORS_GROUP)
    groups.filter(user__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("profiles", "0003_decision_log"),
    ]

    operations = [migrations.RunPython(create_editors_group, remove_empty_editors_group)]

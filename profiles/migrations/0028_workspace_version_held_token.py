"""The held token: what workers compile moves apart from served layers' items (one row)."""

from django.db import migrations, models


def held_from_token(apps, schema_editor):
    version = apps.get_model("profiles", "WorkspaceVersion")
    version.objects.update(held_token=models.F("token"))


class Migration(migrations.Migration):
    dependencies = [("profiles", "0027_invitation")]

    operations = [
        migrations.AddField(
            model_name="workspaceversion",
            name="held_token",
            field=models.CharField(default="", max_length=32),
        ),
        migrations.RunPython(held_from_token, migrations.RunPython.noop),
    ]

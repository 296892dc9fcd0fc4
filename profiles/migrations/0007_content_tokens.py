# Content tokens for incremental recompiles: one per layer (its fields and items), one for
# consumers, profiles and rules; and an index for "the items of a layer in document order".

import uuid

from django.db import migrations, models

import profiles.models


def give_each_layer_its_own_token(apps, schema_editor):
    """The column default is computed once for the existing rows: make each token unique."""
    Layer = apps.get_model("profiles", "Layer")
    for layer in Layer.objects.only("pk"):
        Layer.objects.filter(pk=layer.pk).update(content_token=uuid.uuid4().hex)
    WorkspaceVersion = apps.get_model("profiles", "WorkspaceVersion")
    WorkspaceVersion.objects.filter(profiles_token="").update(profiles_token=uuid.uuid4().hex)


class Migration(migrations.Migration):
    dependencies = [
        ("profiles", "0006_import_job"),
    ]

    operations = [
        migrations.AddField(
            model_name="layer",
            name="content_token",
            field=models.CharField(
                default=profiles.models.new_token, editable=False, max_length=32
            ),
        ),
        migrations.AddField(
            model_name="workspaceversion",
            name="profiles_token",
            field=models.CharField(default="", max_length=32),
        ),
        migrations.AddIndex(
            model_name="item",
            index=models.Index(fields=["layer", "position"], name="item_layer_position"),
        ),
        migrations.RunPython(give_each_layer_its_own_token, migrations.RunPython.noop),
    ]

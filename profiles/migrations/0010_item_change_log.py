# The item change log: which items each write changed, so a worker keeping a compiled
# workspace re-reads just those (profiles.item_changes, profiles.cache).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("profiles", "0009_existing_profiles_become_version_one"),
    ]

    operations = [
        migrations.CreateModel(
            name="ItemChange",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("layer_id", models.BigIntegerField()),
                ("path", models.CharField(blank=True, max_length=255, null=True)),
                (
                    "op",
                    models.CharField(
                        choices=[
                            ("create", "item created"),
                            ("update", "item changed"),
                            ("delete", "item deleted"),
                            ("layer", "layer's items rewritten"),
                        ],
                        max_length=8,
                    ),
                ),
                ("after_prune", models.BooleanField(default=False)),
            ],
            options={
                "ordering": ["id"],
            },
        ),
    ]

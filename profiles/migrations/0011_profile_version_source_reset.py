# Profile versions written by an operator's reset of the demo (load_demo --reset).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("profiles", "0010_item_change_log"),
    ]

    operations = [
        migrations.AlterField(
            model_name="profileversion",
            name="protection_bypassed",
            field=models.BooleanField(
                default=False,
                help_text="Written directly in a protected environment by staff or an operator's reset.",
            ),
        ),
        migrations.AlterField(
            model_name="profileversion",
            name="source",
            field=models.CharField(
                choices=[
                    ("write", "direct write"),
                    ("change-request", "applied change request"),
                    ("restore", "restore"),
                    ("migration", "existing profile"),
                    ("reset", "demo reset (load_demo --reset)"),
                ],
                default="write",
                max_length=16,
            ),
        ),
    ]

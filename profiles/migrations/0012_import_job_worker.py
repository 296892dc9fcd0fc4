# The worker process running an import job, to tell a job whose worker died (profiles.imports).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("profiles", "0011_profile_version_source_reset"),
    ]

    operations = [
        migrations.AddField(
            model_name="importjob",
            name="worker",
            field=models.CharField(
                blank=True,
                default="",
                help_text="The worker process running the job: host:pid:start time.",
                max_length=300,
            ),
        ),
    ]

"""The import task moved with its feature (profiles.import_export.jobs): tasks queued before the
move name the old path, and a worker loads a task by its path."""

from django.db import migrations

OLD = "profiles.imports.workspace_import_task"
NEW = "profiles.import_export.jobs.workspace_import_task"


def rename(apps, old: str, new: str) -> None:
    DBTaskResult = apps.get_model("django_tasks_database", "DBTaskResult")
    DBTaskResult.objects.filter(task_path=old).update(task_path=new)


class Migration(migrations.Migration):
    dependencies = [
        ("profiles", "0013_change_request_revision"),
        ("django_tasks_database", "0021_conditional_partial_index_ordering"),
    ]

    operations = [
        migrations.RunPython(
            lambda apps, schema_editor: rename(apps, OLD, NEW),
            lambda apps, schema_editor: rename(apps, NEW, OLD),
        ),
    ]

"""API keys stored hashed (profiles.models.keys), and DRF's plain-text tokens moved into them.

Each ``authtoken_token`` row becomes a user token with the SHA-256 of the same key, so an
application's ``Authorization: Token <key>`` keeps working; then the plain-text rows are
deleted. The ``authtoken`` app is no longer installed: its table is read only when it exists
(a database made before this migration), and is left empty. Reversing drops the keys: the
plain-text tokens cannot be given back.
"""

import datetime
import hashlib

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models
from django.utils import timezone

PLAIN_TEXT_TOKENS = "authtoken_token"


def _aware(created):
    if isinstance(created, str):  # SQLite without type detection
        created = datetime.datetime.fromisoformat(created)
    return timezone.make_aware(created, datetime.UTC) if timezone.is_naive(created) else created


def tokens_hashed(apps, schema_editor) -> None:
    connection = schema_editor.connection
    if PLAIN_TEXT_TOKENS not in connection.introspection.table_names():
        return
    ApiKey = apps.get_model("profiles", "ApiKey")
    table = connection.ops.quote_name(PLAIN_TEXT_TOKENS)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT key, user_id, created FROM {table}")  # noqa: S608 (a constant)
        rows = cursor.fetchall()
    ApiKey.objects.bulk_create(
        ApiKey(
            owner_id=user_id,
            kind="user",
            name="user token",
            prefix=key[:6],
            hash=hashlib.sha256(key.encode()).hexdigest(),
            created_at=_aware(created),
        )
        for key, user_id, created in rows
    )
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table}")  # noqa: S608


class Migration(migrations.Migration):
    dependencies = [
        ("profiles", "0014_import_task_moved"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ApiKey",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[("user", "user token"), ("scoped", "scoped key")],
                        default="scoped",
                        max_length=8,
                    ),
                ),
                ("name", models.CharField(max_length=100)),
                (
                    "prefix",
                    models.CharField(help_text="The key's first characters.", max_length=12),
                ),
                (
                    "hash",
                    models.CharField(help_text="SHA-256 of the key.", max_length=64, unique=True),
                ),
                (
                    "scopes",
                    models.JSONField(blank=True, default=list, help_text="Empty for a user token."),
                ),
                (
                    "environments",
                    models.JSONField(
                        blank=True,
                        default=list,
                        help_text="Environment keys; empty: every environment.",
                    ),
                ),
                ("expires_at", models.DateTimeField(blank=True, null=True)),
                ("last_used_at", models.DateTimeField(blank=True, null=True)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("revoked_at", models.DateTimeField(blank=True, null=True)),
                (
                    "owner",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="api_keys",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "verbose_name": "API key",
                "ordering": ["-created_at", "-pk"],
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("kind", "user"), ("revoked_at__isnull", True)),
                        fields=("owner",),
                        name="one_live_user_token_per_user",
                    )
                ],
            },
        ),
        migrations.RunPython(tokens_hashed, migrations.RunPython.noop),
    ]

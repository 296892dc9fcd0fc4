"""Items' stored terms in their packed form (issue 35 item 2): the JSON column goes.

The rows stored before are packed from their JSON (no text is tokenized again), a batch at a
time by primary key, whatever their analyser version (its stamp stays; another version's
rows are recomputed by the background task as before). A row whose JSON cannot be read gets
an empty value: the engine finds it damaged and tokenizes that item's text.
"""

import json

from django.db import migrations, models

from resolver.analysis import encode_terms, pack_terms, unpack_terms

BATCH = 2_000


def _packed(text: str) -> bytes:
    try:
        terms = json.loads(text)
        return pack_terms(terms) if isinstance(terms, dict) else b""
    except (ValueError, TypeError, OverflowError):
        return b""


def _encoded(packed) -> str:
    terms = unpack_terms(packed) if packed is not None else None
    return encode_terms(terms) if terms is not None else "{}"


def _convert(apps, schema_editor, source: str, target: str, convert) -> None:
    """Write ``target`` from ``source`` for every row, a batch at a time by primary key (one
    ``executemany`` of plain updates a batch: psycopg pipelines them)."""
    ItemTerms = apps.get_model("profiles", "ItemTerms")
    connection = schema_editor.connection
    rows = ItemTerms.objects.using(connection.alias).order_by("pk")
    quote = connection.ops.quote_name
    update = f"UPDATE {quote(ItemTerms._meta.db_table)} SET {quote(target)} = %s WHERE {quote('id')} = %s"
    last = 0
    while True:
        batch = list(rows.filter(pk__gt=last).values_list("pk", source)[:BATCH])
        if not batch:
            return
        with connection.cursor() as cursor:
            cursor.executemany(update, [(convert(value), pk) for pk, value in batch])
        last = batch[-1][0]


def pack(apps, schema_editor):
    _convert(apps, schema_editor, "terms", "packed", _packed)


def unpack(apps, schema_editor):
    _convert(apps, schema_editor, "packed", "terms", _encoded)


class Migration(migrations.Migration):
    dependencies = [("profiles", "0028_workspace_version_held_token")]

    operations = [
        migrations.AddField(
            model_name="itemterms",
            name="packed",
            field=models.BinaryField(default=b""),
            preserve_default=False,
        ),
        migrations.RunPython(pack, unpack),
        # A default only for the way back, which adds the column again before filling it.
        migrations.AlterField(
            model_name="itemterms", name="terms", field=models.TextField(default="{}")
        ),
        migrations.RemoveField(model_name="itemterms", name="terms"),
    ]

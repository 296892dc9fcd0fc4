"""The served read's key lookup as an index-only scan on PostgreSQL: the (layer, field, value)
index also holds ``item_id`` and ``id`` (issue 35). Built before the old one is dropped, both
CONCURRENTLY on PostgreSQL, so a desk's ticket writes and resolves go on during the
migration (an index an interrupted run left behind, invalid, is dropped and built again);
plain elsewhere (SQLite ignores the included columns)."""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models
from django.db.migrations.operations import AddIndex, RemoveIndex


def _online(postgres, plain):
    """An index operation run CONCURRENTLY on PostgreSQL, as the plain one elsewhere."""

    class Online(postgres):
        def database_forwards(self, app_label, schema_editor, from_state, to_state):
            if schema_editor.connection.vendor == "postgresql":
                if plain is AddIndex:
                    # A build interrupted earlier leaves its index behind, invalid: start anew.
                    name = schema_editor.quote_name(self.index.name)
                    schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
                return super().database_forwards(app_label, schema_editor, from_state, to_state)
            return plain.database_forwards(self, app_label, schema_editor, from_state, to_state)

        def database_backwards(self, app_label, schema_editor, from_state, to_state):
            if schema_editor.connection.vendor == "postgresql":
                return super().database_backwards(app_label, schema_editor, from_state, to_state)
            return plain.database_backwards(self, app_label, schema_editor, from_state, to_state)

    Online.__name__ = plain.__name__
    return Online


AddIndexOnline = _online(AddIndexConcurrently, AddIndex)
RemoveIndexOnline = _online(RemoveIndexConcurrently, RemoveIndex)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("profiles", "0029_item_terms_packed"),
    ]

    operations = [
        AddIndexOnline(
            model_name="itemkey",
            index=models.Index(
                fields=["layer", "field", "value"],
                include=["item_id", "id"],
                name="item_key_lookup_cover",
            ),
        ),
        RemoveIndexOnline(model_name="itemkey", name="item_key_lookup"),
    ]

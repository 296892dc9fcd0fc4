"""Import a workspace document (SPEC §2) into the database, all-or-nothing; or, with
``--items LAYER``, a batch of item operations for one layer (NDJSON or a JSON array, as
``POST /api/v1/layers/<key>/bulk`` takes), through the same bulk ingest."""

import sys

from django.core.management.base import BaseCommand, CommandError

from profiles.import_export.documents import WorkspaceImportError
from profiles.import_export.imports import workspace_import
from profiles.material.bulk_ingest import (
    BatchInvalid,
    BatchNotReadable,
    BatchTooLarge,
    IngestStopped,
    batch_is_ndjson,
    bulk_ingest_parse,
    items_bulk_ingest_in_parts,
)
from profiles.models import Layer
from profiles.versioning.environments import ChangeRequestRequired
from profiles.workspace.validation import issues_in_text


class Command(BaseCommand):
    help = (
        "Import a YAML or JSON workspace document. Merge (default) upserts by key and path; "
        "--replace also deletes what the file does not contain. Any error writes nothing. "
        "With --items LAYER the file is a batch of item operations for that layer (NDJSON, or "
        "a JSON array), applied as the API's bulk ingest applies it."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="workspace document (YAML or JSON); - reads stdin")
        parser.add_argument(
            "--replace",
            action="store_true",
            help="delete consumers, layers, items, profiles and rules the file does not contain",
        )
        parser.add_argument(
            "--items",
            metavar="LAYER",
            help="the file is a bulk ingest batch for LAYER: one operation a line (NDJSON) or "
            'a JSON array of them ({"op": "upsert", "item": {...}}, {"op": "delete", "path": '
            '"..."}, or an item); every line is checked first (a bad line writes nothing), '
            "then the batch is written BULK_INGEST_MAX_LINES operations at a time",
        )

    def handle(self, *args, **options):
        name = options["file"]
        try:
            if name == "-":
                text = sys.stdin.read()
            else:
                with open(name, encoding="utf-8") as handle:
                    text = handle.read()
        except OSError as exc:
            raise CommandError(f"cannot read {name}: {exc.strerror}", returncode=2) from exc
        except UnicodeDecodeError as exc:
            raise CommandError(
                f"{name}: not UTF-8 text (byte {exc.start}: {exc.reason}); nothing was imported.",
                returncode=2,
            ) from exc
        if options["items"]:
            if options["replace"]:
                raise CommandError("--replace imports a workspace: not with --items", returncode=2)
            return self._items(name, text, options["items"])
        mode = "replace" if options["replace"] else "merge"
        try:
            summary = workspace_import(text=text, mode=mode)
        except WorkspaceImportError as exc:
            for issue in issues_in_text(exc.issues, text=text):
                self.stderr.write(str(issue))
            raise CommandError(
                f"{name}: {len(exc.issues)} error(s); nothing was imported.", returncode=2
            ) from exc
        except ChangeRequestRequired as exc:
            raise CommandError(f"{name}: {exc}; nothing was imported.", returncode=2) from exc
        if summary.changed:
            self.stdout.write(f"Imported {name} ({mode}):")
        else:
            self.stdout.write(f"Nothing to change: {name} ({mode}) equals the workspace.")
        for line in summary.lines():
            self.stdout.write(f"  {line}")

    def _items(self, name: str, text: str, layer: str) -> None:
        """Apply a bulk ingest batch from the file, part by part, telling the progress."""
        ndjson = batch_is_ndjson(text)
        try:
            operations = bulk_ingest_parse(text=text, ndjson=ndjson, layer=layer, job=True)
        except BatchInvalid as exc:
            for issue in exc.issues:
                self.stderr.write(str(issue))
            raise CommandError(
                f"{name}: {len(exc.issues)} error(s); nothing was written.", returncode=2
            ) from exc
        except (BatchNotReadable, BatchTooLarge) as exc:
            raise CommandError(f"{name}: {exc}", returncode=2) from exc
        if not Layer.objects.filter(key=layer).exists():
            raise CommandError(
                f'layer "{layer}" does not exist; nothing was written.', returncode=2
            )
        total = len(operations)

        def part_written(summary) -> None:
            self.stdout.write(f"  {summary.applied:,} of {total:,} operations applied")

        try:
            summary = items_bulk_ingest_in_parts(
                layer=layer, operations=operations, on_part=part_written
            )
        except IngestStopped as stopped:
            applied = (
                f"the first {stopped.applied:,} operations were applied; the batch is "
                "idempotent by path, so running it again finishes it"
                if stopped.applied
                else "nothing was written"
            )
            raise CommandError(f"{name}: {stopped.cause}; {applied}.", returncode=2) from stopped
        counts = summary.as_dict()
        self.stdout.write(
            f"Ingested {name} into layer {layer}: "
            + ", ".join(
                f"{counts[n]:,} {n}" for n in ("created", "updated", "deleted", "unchanged")
            )
        )

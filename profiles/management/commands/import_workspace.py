"""Import a workspace document (SPEC §2) into the database, all-or-nothing."""

import sys

from django.core.management.base import BaseCommand, CommandError

from profiles.import_export.workspace import WorkspaceImportError, workspace_import
from profiles.safechange.environments import ChangeRequestRequired
from profiles.workspace.validation import issues_in_text


class Command(BaseCommand):
    help = (
        "Import a YAML or JSON workspace document. Merge (default) upserts by key and path; "
        "--replace also deletes what the file does not contain. Any error writes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="workspace document (YAML or JSON); - reads stdin")
        parser.add_argument(
            "--replace",
            action="store_true",
            help="delete consumers, layers, items, profiles and rules the file does not contain",
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

"""Export the stored workspace as a SPEC §2 document."""

from django.core.management.base import BaseCommand, CommandError

from profiles.import_export.export_stream import workspace_export_chunks


class Command(BaseCommand):
    help = "Print (or write with -o) the stored workspace as a YAML or JSON workspace document."

    def add_arguments(self, parser):
        parser.add_argument("-o", "--output", help="file to write (default: standard output)")
        parser.add_argument(
            "--format",
            choices=["yaml", "json"],
            help="default: json when the output file ends in .json, else yaml",
        )

    def handle(self, *args, **options):
        output = options["output"]
        export_format = options["format"] or (
            "json" if output and output.lower().endswith(".json") else "yaml"
        )
        chunks = workspace_export_chunks(format=export_format)
        if not output or output == "-":
            for chunk in chunks:
                self.stdout.write(chunk, ending="")
            return
        try:
            with open(output, "w", encoding="utf-8") as handle:
                handle.writelines(chunks)
        except OSError as exc:
            raise CommandError(f"cannot write {output}: {exc.strerror}", returncode=2) from exc
        self.stderr.write(f"Wrote {output} ({export_format}).")

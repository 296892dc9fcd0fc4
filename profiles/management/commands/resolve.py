"""Resolve a request against the stored workspace; print the same JSON as ``python -m resolver``."""

from django.core.management.base import BaseCommand, CommandError

from profiles.resolution.services import workspace_resolve
from resolver import ResolverError
from resolver.cli import build_request
from resolver.report import json_text


class Command(BaseCommand):
    help = (
        "Print the resolution JSON (SPEC §7) of a request against the database, exactly as "
        "`python -m resolver resolve` prints it for a workspace file. Errors print "
        '{"error": {...}} and exit 2.'
    )

    def add_arguments(self, parser):
        parser.add_argument("--request", help="request JSON, or @FILE")
        parser.add_argument("--profile", help="profile key")
        parser.add_argument("--input", help="input JSON object, or @FILE")
        parser.add_argument("--now", help="ISO-8601 date or datetime (default: now)")
        parser.add_argument("--format", choices=("markdown", "xml"), dest="render_format")
        parser.add_argument(
            "--availability",
            action="append",
            default=[],
            metavar="LAYER=STATE",
            help="what-if availability (repeatable)",
        )

    def handle(self, *args, **options):
        flags = _Flags(
            request=options["request"],
            profile=options["profile"],
            input=options["input"],
            now=options["now"],
            format=options["render_format"],
            availability=options["availability"],
        )
        try:
            resolution = workspace_resolve(request=build_request(flags))
        except ResolverError as exc:
            self.stdout.write(json_text(exc.as_dict()).rstrip("\n"))
            raise CommandError(str(exc), returncode=2) from exc
        self.stdout.write(json_text(resolution).rstrip("\n"))


class _Flags:
    """The attributes ``resolver.cli.build_request`` reads, so both commands build alike."""

    def __init__(self, **values):
        self.__dict__.update(values)

"""Command line: ``python -m resolver resolve|render|validate`` (SPEC §8).

This module, ``resolver.documents`` (which parses the text it reads), ``resolver.yaml_writer``
(which writes YAML), ``resolver.yaml_plain`` (what those two share) and ``resolver.locations``
(which finds an issue's line in a text) are the only ones of the package that touch files or
YAML.
"""

import argparse
import json
import sys

from resolver.compiled import compile_workspace
from resolver.documents import TOO_DEEP, dump_yaml, json_depth, load_document
from resolver.errors import INVALID_REQUEST, RequestError, ResolverError, WorkspaceError
from resolver.limits import MAX_DOCUMENT_DEPTH
from resolver.locations import locate_issues
from resolver.report import json_text
from resolver.validation import validate_workspace

EXIT_OK, EXIT_ERROR, EXIT_BLOCKED = 0, 2, 3


# The loading and writing of documents live in resolver.documents and resolver.yaml_writer
# (dump_yaml, re-exported by resolver.documents); these names stay for the
# code that imported them from here.
load_workspace_text = load_document

__all__ = ["build_request", "dump_yaml", "load_workspace_text", "main"]


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise RequestError(f"usage: {message}", code=INVALID_REQUEST)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m resolver", description="Resolve Context Profiles.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, text in (
        ("resolve", "print the resolution JSON of a request"),
        ("render", "print only the rendered output text"),
    ):
        sub = commands.add_parser(name, help=text)
        sub.add_argument("workspace", help="workspace document (YAML or JSON), - for stdin")
        sub.add_argument("--request", help="request JSON, or @FILE")
        sub.add_argument("--profile", help="profile key")
        sub.add_argument("--input", help="input JSON object, or @FILE")
        sub.add_argument("--now", help="ISO-8601 date or datetime")
        sub.add_argument("--format", choices=("markdown", "xml"))
        sub.add_argument(
            "--detail", choices=("full", "summary"), help="summary: list only what is rendered"
        )
        sub.add_argument("--pretty", action="store_true", help="indent the JSON (resolve only)")
        sub.add_argument(
            "--availability",
            action="append",
            default=[],
            metavar="LAYER=STATE",
            help="what-if availability (repeatable)",
        )
    sub = commands.add_parser("validate", help="check a workspace document")
    sub.add_argument("workspace", help="workspace document (YAML or JSON), - for stdin")
    return parser


def _read(source: str, what: str, error_class) -> str:
    try:
        if source == "-":
            return sys.stdin.read()
        with open(source, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise error_class(f"cannot read {what} {source!r}: {exc}") from None


def _json_argument(value: str, what: str):
    text = _read(value[1:], what, RequestError) if value.startswith("@") else value
    if json_depth(text) > MAX_DOCUMENT_DEPTH:  # SPEC §2.2: refused before it is parsed
        raise RequestError(TOO_DEEP)
    try:
        return json.loads(text)
    except ValueError as exc:  # a JSONDecodeError, or an integer beyond 4,300 digits
        raise RequestError(f"{what} is not valid JSON: {exc}", path=what) from None


def build_request(args) -> dict:
    """Build the request from ``--request`` and the convenience flags (flags win)."""
    request = _json_argument(args.request, "request") if args.request else {}
    if not isinstance(request, dict):
        raise RequestError("the request must be a JSON object")
    if args.profile is not None:
        for name in ("consumer", "objective", "environment"):
            request.pop(name, None)
        request["profile"] = args.profile
    if args.input is not None:
        request["input"] = _json_argument(args.input, "input")
    if args.now is not None:
        request["now"] = args.now
    if args.format is not None:
        request["format"] = args.format
    # Callers that build ``args`` themselves (manage.py resolve) may not know --detail.
    if getattr(args, "detail", None) is not None:
        request["detail"] = args.detail
    if args.availability:
        overrides = dict(request.get("availability") or {})
        for pair in args.availability:
            layer, sep, state = pair.partition("=")
            if not sep or not layer:
                raise RequestError(
                    f"--availability expects LAYER=STATE, got {pair!r}", path="availability"
                )
            overrides[layer] = state
        request["availability"] = overrides
    return request


def _print_json(value, *, pretty: bool = False) -> None:
    sys.stdout.write(json_text(value, pretty=pretty))


def _print_bytes(data: bytes) -> None:
    """Write UTF-8 JSON bytes (``resolve_json``) to standard output as they are."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a text-only stream put in place of stdout
        sys.stdout.write(data.decode())
        return
    sys.stdout.flush()
    buffer.write(data)
    buffer.flush()


def _compiled(text: str):
    """Compile the workspace text; an invalid entry's error also says where it is written
    (its entry, line and column), as ``validate`` does."""
    document = load_document(text)
    try:
        return compile_workspace(document)
    except WorkspaceError as exc:
        where = locate_issues(text, exc.issues[:1])[0].where if exc.issues else ""
        if not where:
            raise
        raise WorkspaceError(f"{exc.message} ({where})", path=exc.path, issues=exc.issues) from None


def main(argv=None) -> int:
    try:
        args = _parser().parse_args(argv)
        text = _read(args.workspace, "workspace", WorkspaceError)
        if args.command == "validate":
            try:
                document = load_document(text)
            except WorkspaceError as exc:
                print(str(exc))
                return EXIT_ERROR
            issues = validate_workspace(document)
            if issues:
                # Each names its entry and the line and column of its value in the file.
                for issue in locate_issues(text, issues):
                    print(issue)
                return EXIT_ERROR
            print("ok")
            return EXIT_OK
        # When both are bad, the workspace's error is the one reported (SPEC §3).
        workspace = _compiled(text)
        request = build_request(args)
        if args.command == "resolve" and args.pretty:
            _print_json(workspace.resolve(request), pretty=True)
            return EXIT_OK
        # The bytes the API writes too (``json_text`` of the resolution, built without it).
        encoded = workspace.resolve_json(request)
    except ResolverError as exc:
        _print_json(exc.as_dict())
        return EXIT_ERROR
    if args.command == "render":
        head = encoded.head
        if head["status"] == "BLOCKED":
            sys.stderr.write(json.dumps(head["blockers"], ensure_ascii=False) + "\n")
            return EXIT_BLOCKED
        sys.stdout.write(head["output"]["text"])
        return EXIT_OK
    _print_bytes(encoded.data)
    return EXIT_OK

"""Command line: ``python -m resolver resolve|render|validate`` (SPEC §8).

This is the only module of the package that reads files or YAML.
"""

import argparse
import json
import sys

import yaml

from resolver.engine import compile_workspace
from resolver.errors import INVALID_REQUEST, RequestError, ResolverError, WorkspaceError
from resolver.report import json_text
from resolver.validation import validate_workspace

EXIT_OK, EXIT_ERROR, EXIT_BLOCKED = 0, 2, 3


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe YAML loader that rejects duplicate mapping keys."""


def _construct_mapping(loader, node, deep=False):
    loader.flatten_mapping(node)
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            hashable = key in seen
        except TypeError:
            raise WorkspaceError(
                f"line {key_node.start_mark.line + 1}: a mapping key must be a scalar"
            ) from None
        if hashable:
            raise WorkspaceError(
                f'line {key_node.start_mark.line + 1}: duplicate key "{key}" '
                f"(first on line {seen[key] + 1})"
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _reject_duplicate_json_keys(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise WorkspaceError(f'duplicate key "{key}"')
        out[key] = value
    return out


def load_workspace_text(text: str) -> dict:
    """Parse a workspace document: JSON if it parses as JSON, else safe YAML without duplicates."""
    try:
        return json.loads(text, object_pairs_hook=_reject_duplicate_json_keys)
    except json.JSONDecodeError:
        pass
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise WorkspaceError(f"{where}not valid YAML or JSON ({problem})") from None


def dump_yaml(document: dict) -> str:
    """Return a workspace document as block-style YAML, keys in document order."""
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)


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
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
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
    if args.detail is not None:
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


def main(argv=None) -> int:
    try:
        args = _parser().parse_args(argv)
        text = _read(args.workspace, "workspace", WorkspaceError)
        if args.command == "validate":
            try:
                document = load_workspace_text(text)
            except WorkspaceError as exc:
                print(str(exc))
                return EXIT_ERROR
            issues = validate_workspace(document)
            if issues:
                for issue in issues:
                    print(issue)
                return EXIT_ERROR
            print("ok")
            return EXIT_OK
        request = build_request(args)
        workspace = compile_workspace(load_workspace_text(text))
        resolution = workspace.resolve(request)
    except ResolverError as exc:
        _print_json(exc.as_dict())
        return EXIT_ERROR
    if args.command == "render":
        if resolution["status"] == "BLOCKED":
            sys.stderr.write(json.dumps(resolution["blockers"], ensure_ascii=False) + "\n")
            return EXIT_BLOCKED
        sys.stdout.write(resolution["output"]["text"])
        return EXIT_OK
    _print_json(resolution, pretty=args.pretty)
    return EXIT_OK

"""Renderers and parsers of the API's own formats."""

from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer, JSONRenderer

from resolver import EncodedResolution
from resolver.cli import dump_yaml
from resolver.report import json_text


class ResolutionJSONRenderer(JSONRenderer):
    """JSON exactly as ``python -m resolver resolve`` prints it (UTF-8, final newline)."""

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        if isinstance(data, EncodedResolution):  # resolve_json's bytes: written as they are
            return data.data
        return json_text(data).encode()


class YAMLRenderer(BaseRenderer):
    """The workspace document as YAML (``?format=yaml``), keys in document order."""

    media_type = "application/yaml"
    format = "yaml"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        return dump_yaml(data).encode()


class WorkspaceText(str):
    """The raw text of an uploaded workspace document (parsed by the import service)."""


class WorkspaceTextParser(BaseParser):
    """Hand a workspace upload (JSON or YAML) to the import service as text.

    The service's loader rejects duplicate keys and names the line of a syntax error, which
    a generic JSON parser would not.
    """

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        try:
            return WorkspaceText(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise ParseError("the workspace document must be UTF-8 text") from exc


class WorkspaceYAMLParser(WorkspaceTextParser):
    media_type = "application/yaml"


class WorkspaceTextYAMLParser(WorkspaceTextParser):
    media_type = "text/yaml"


class WorkspaceXYAMLParser(WorkspaceTextParser):
    media_type = "application/x-yaml"


WORKSPACE_PARSERS = [
    WorkspaceTextParser,
    WorkspaceYAMLParser,
    WorkspaceTextYAMLParser,
    WorkspaceXYAMLParser,
]

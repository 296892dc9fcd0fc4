"""The API's JSON parser (request bodies read within SPEC §2.2's document limits) and the
bulk ingest's, which hand its body to the service as text."""

from rest_framework import parsers
from rest_framework.exceptions import ParseError

from resolver.documents import load_json
from resolver.limits import MAX_DOCUMENT_DEPTH


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, reading through ``resolver.documents.load_json``.

    A body nested deeper than 64 levels is refused (400 ``INVALID_REQUEST`` at path ``""``)
    by a linear scan before the recursive JSON parser sees it: 5,000 levels made that
    parser raise ``RecursionError`` (500). Like DRF's strict mode, ``NaN`` and ``Infinity``
    are refused; text that is not UTF-8 JSON, or an integer of more than 4,300 digits, too.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        body = stream.read() if stream is not None else b""
        return load_json(body, max_depth=MAX_DOCUMENT_DEPTH, allow_nan=not self.strict)


class BatchText(str):
    """The raw text of a bulk ingest body; ``ndjson`` says how to read it."""

    ndjson = False


class BatchJSONParser(parsers.BaseParser):
    """Hand a bulk ingest body (a JSON array) to the service as text: its issues name the
    line and column of each bad operation, which a parsed body no longer knows."""

    media_type = "application/json"
    ndjson = False

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        try:
            text = BatchText(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise ParseError("the batch must be UTF-8 text") from exc
        text.ndjson = self.ndjson
        return text


class BatchNDJSONParser(BatchJSONParser):
    """NDJSON (one JSON object a line): ``application/x-ndjson``."""

    media_type = "application/x-ndjson"
    ndjson = True


BATCH_PARSERS = [BatchJSONParser, BatchNDJSONParser]

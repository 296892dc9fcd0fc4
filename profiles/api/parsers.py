"""The API's JSON parser: request bodies read within SPEC §2.2's document limits."""

from rest_framework import parsers

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

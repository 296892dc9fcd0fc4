"""The limits of SPEC §2.2 (v1.1): one vocabulary for the validator, the loader and the web side.

They keep one bad entry from harming every resolution: text that the database or a JSON
encoder cannot store, texts that would make every response huge, metadata too deep to walk,
and documents whose aliases or nesting would explode while being read.
"""

import re

MAX_NAME_CHARS = 1_000  # name and description of consumers, layers and profiles
MAX_TITLE_CHARS = 1_000
MAX_BODY_CHARS = 1_000_000
MAX_METADATA_LEVELS = 4  # the metadata object itself is level 1
MAX_METADATA_VALUES = 1_000  # scalar values per item, null included, keys not counted
MAX_ALIAS_NODES = 100_000  # nodes YAML aliases may add to a document, in all
MAX_DOCUMENT_DEPTH = 64  # container levels of a YAML or JSON document (workspace or request)

TEXT_RULE_MESSAGE = "must not contain U+0000 (NUL) or a lone surrogate (U+D800-U+DFFF)"

_BAD_CHARACTER = re.compile("[\x00\ud800-\udfff]")


def violates_text_rule(text: str) -> bool:
    """Return True when a string contains U+0000 or a lone surrogate (SPEC §2.2 text rule)."""
    if text.isascii():
        return "\x00" in text
    return _BAD_CHARACTER.search(text) is not None

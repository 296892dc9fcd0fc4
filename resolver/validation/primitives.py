"""The primitives of validation: reporting an issue at its path, and checking one value.

Each check takes a value found at a path of the document, reports what is wrong with it
(SPEC §2 messages, the text rule of §2.2 first) and returns the value to build with, or a
default. The checks of whole entries (``resolver.validation.entries``) are built of these.
"""

import datetime as dt
import math

from resolver.errors import ValidationIssue
from resolver.limits import (
    MAX_METADATA_LEVELS,
    MAX_METADATA_VALUES,
    TEXT_RULE_MESSAGE,
    violates_text_rule,
)
from resolver.validation.fields import KEY_RE
from resolver.values import canonical

_MISSING = object()


class _Stop(Exception):
    """Raised to stop at the first issue when only the first is wanted."""


class ValueChecks:
    """The issues found so far, and the checks of single values that report them.

    With ``first_only`` the first issue raises ``_Stop`` (the caller wants only that one).
    """

    def __init__(self, *, first_only: bool = False):
        self.first_only = first_only
        self.issues: list[ValidationIssue] = []

    # -- reporting -------------------------------------------------------------------------

    def error(self, path: str, message: str) -> None:
        self.issues.append(ValidationIssue(path, message))
        if self.first_only:
            raise _Stop

    # -- primitives ------------------------------------------------------------------------

    def bad_text(self, value, path: str) -> bool:
        """Report a string that breaks the text rule (SPEC §2.2); it gets no other error."""
        if isinstance(value, str) and violates_text_rule(value):
            self.error(path, TEXT_RULE_MESSAGE)
            return True
        return False

    def obj(self, value, path: str, allowed: tuple[str, ...]) -> dict | None:
        """Return the mapping at path (None when absent), reporting unknown fields."""
        if value is None or self.bad_text(value, path):
            return None
        if not isinstance(value, dict):
            self.error(path, "must be an object")
            return None
        for key in value:
            if isinstance(key, str) and violates_text_rule(key):
                # The key is not echoed: the mapping's path carries the error.
                self.error(path, "a key " + TEXT_RULE_MESSAGE)
            elif key not in allowed:
                self.error(_join(path, str(key)), "unknown field")
        return value

    def string(self, value, path: str, *, required: bool = False, default: str = "") -> str | None:
        if value is None or value is _MISSING:
            if required:
                self.error(path, "is required")
                return None
            return default
        if isinstance(value, str):
            if violates_text_rule(value):
                self.error(path, TEXT_RULE_MESSAGE)
                return None
            return value
        if isinstance(value, (bool, int, float, dt.date)):
            if isinstance(value, float) and not math.isfinite(value):
                self.error(path, "must be a string")
                return None
            return canonical(value)
        self.error(path, "must be a string")
        return None

    def bounded_string(self, value, path: str, limit: int) -> str | None:
        """Return an optional string of at most ``limit`` code points (text rule first)."""
        text = self.string(value, path)
        if text is not None and len(text) > limit:
            self.error(path, f"must be at most {limit:,} characters (got {len(text):,})")
            return None
        return text

    def key(self, value, path: str, *, required: bool = True) -> str | None:
        text = self.string(value, path, required=required, default=None)
        if text is None:
            return None
        if not KEY_RE.fullmatch(text):
            self.error(path, f"must match ^[a-z0-9][a-z0-9_-]{{0,63}}$ (got {text!r})")
            return None
        return text

    def enum(self, value, path: str, choices: tuple[str, ...], default: str | None):
        if value is None or value is _MISSING or self.bad_text(value, path):
            return default
        if not isinstance(value, str) or value not in choices:
            self.error(path, "must be one of " + ", ".join(choices))
            return default
        return value

    def boolean(self, value, path: str, default: bool) -> bool:
        if value is None or value is _MISSING or self.bad_text(value, path):
            return default
        if not isinstance(value, bool):
            self.error(path, "must be true or false")
            return default
        return value

    def integer(self, value, path: str, *, minimum: int, required: bool = False):
        if value is None or value is _MISSING:
            if required:
                self.error(path, "is required")
            return None
        if self.bad_text(value, path):
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(path, "must be an integer")
            return None
        if value < minimum:
            self.error(path, f"must be an integer >= {minimum}")
            return None
        return value

    def number(self, value, path: str, default: float) -> float:
        if value is None or value is _MISSING or self.bad_text(value, path):
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.error(path, "must be a number")
            return default
        if not math.isfinite(value):
            self.error(path, "must be a finite number")
            return default
        return value

    def list_of(self, value, path: str) -> list:
        if value is None or self.bad_text(value, path):
            return []
        if not isinstance(value, list):
            self.error(path, "must be a list")
            return []
        return value

    def string_list(self, value, path: str, *, keys: bool = False) -> tuple[str, ...]:
        out = []
        for i, element in enumerate(self.list_of(value, path)):
            element_path = f"{path}[{i}]"
            text = (
                self.key(element, element_path)
                if keys
                else self.string(element, element_path, required=True)
            )
            if text is None:
                continue
            if not keys and not text:
                self.error(element_path, "must be a non-empty string")
                continue
            out.append(text)
        return tuple(out)

    def unique(self, key: str, seen: dict | None, path: str, kind: str) -> None:
        """Report the key of the entry at ``path`` when met before in its list (if tracked)."""
        if seen is None:
            return
        if key in seen:
            self.error(_join(path, "key"), f'duplicate {kind} key "{key}" ({seen[key]})')
        else:
            seen[key] = f"first at {path}"

    def metadata(self, value, path: str) -> dict:
        """Return an item's metadata ({} when absent) within the limits of SPEC §2.2."""
        if value is None or self.bad_text(value, path):
            return {}
        if not isinstance(value, dict):
            self.error(path, "must be an object")
            return {}
        problem = metadata_problem(value)
        if problem is not None:
            self.error(path, problem)
            return {}
        return value


_CONTAINERS = (dict, list, tuple, set, frozenset)


def metadata_problem(metadata: dict) -> str | None:
    """Return what puts an item's metadata beyond SPEC §2.2, None when it is within.

    The text rule comes first (any key or value, at any level walked), then the nesting
    (the metadata object is level 1; no container may sit at level 5), then the number of
    scalar values. Containers beyond the last level are not entered, so the walk is bounded
    whatever the value (even a self-containing one).
    """
    values = 0
    too_deep = False
    stack = [(metadata, 1)]
    while stack:
        container, level = stack.pop()
        if isinstance(container, dict):
            # One check of all the keys (joined) costs less than one per key.
            keys = [key for key in container if isinstance(key, str)]
            if keys and violates_text_rule("".join(keys)):
                return "a key " + TEXT_RULE_MESSAGE
            children = container.values()
        else:
            children = container
        texts = []
        for child in children:
            if isinstance(child, str):
                texts.append(child)
            elif isinstance(child, _CONTAINERS):
                if level >= MAX_METADATA_LEVELS:
                    too_deep = True
                else:
                    stack.append((child, level + 1))
                continue
            values += 1
        if texts and violates_text_rule("".join(texts)):
            return "a value " + TEXT_RULE_MESSAGE
    if too_deep:
        return (
            f"must nest at most {MAX_METADATA_LEVELS} levels of objects and lists "
            "(the metadata object is level 1)"
        )
    if values > MAX_METADATA_VALUES:
        return f"must hold at most {MAX_METADATA_VALUES:,} values (got {values:,})"
    return None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key

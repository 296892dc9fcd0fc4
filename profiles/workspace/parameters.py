"""Numbers written in a request (query parameters, form fields, headers), read one way by every
door.

A number is ASCII digits only. ``str.isdigit`` also accepts ``²`` (which ``int`` refuses: the
500s of issue 18) and ``str.isdecimal`` accepts ``٣`` (which ``int`` reads as 3): neither is a
number a client means to send. Lengths are bounded before ``int`` runs, so a parameter of
thousands of digits costs nothing and never overflows a column.
"""

import re

from profiles.workspace.validation import MAX_STORED_INTEGER

ASCII_DIGITS = re.compile(r"[0-9]{1,18}")  # at most 18 digits: within a 64-bit integer


class ParameterInvalid(ValueError):
    """A request parameter is not what it must be; ``name`` is the parameter, for the path."""

    def __init__(self, name: str, message: str):
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


def whole_number(text: str | None) -> int | None:
    """Return ``text`` as an integer when it is 1 to 18 ASCII digits, else None."""
    if text is None or not ASCII_DIGITS.fullmatch(text):
        return None
    return int(text)


def positive_integer(parameters, name: str, *, meaning: str) -> int | None:
    """Return the parameter ``name`` of ``parameters`` (a QueryDict) as an integer from 1 to
    the largest stored integer, or None when it is absent or empty.

    Raise ``ParameterInvalid`` ("must be ``meaning``") for anything else.
    """
    text = parameters.get(name)
    if text in (None, ""):
        return None
    number = whole_number(text)
    if number is None or not 1 <= number <= MAX_STORED_INTEGER:
        raise ParameterInvalid(name, f"must be {meaning} (digits 0-9, from 1)")
    return number

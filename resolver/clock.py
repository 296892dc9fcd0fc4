"""The one place the resolver reads the time: the default for a request without ``now``."""

import datetime as dt


def system_clock() -> dt.datetime:
    """Return the current time in UTC."""
    return dt.datetime.now(dt.UTC)

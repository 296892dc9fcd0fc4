"""No stored material can make a resolution fail (SPEC v1.1 §2.2, §3), over generated values.

Metadata values of every date-like form (out-of-range offsets, year 0000, impossible days,
long fractions, date and datetime objects at the edges of the range), extreme numbers,
NaN and infinities, nested lists and objects within and beyond the limits, and text with
NUL or lone surrogates. A workspace either fails to compile with ``WorkspaceError`` (for
what validation refuses) or resolves, with JSON that encodes as UTF-8, in every format.
"""

import datetime as dt
import json

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from resolver import RequestError, WorkspaceError, compile_workspace, validate_workspace
from resolver.limits import violates_text_rule
from resolver.report import json_text
from resolver.values import parse_date

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

YEARS = st.sampled_from([0, 1, 2, 999, 1000, 1970, 2026, 9998, 9999])
TWO_DIGITS = st.integers(0, 99).map("{:02d}".format)


@st.composite
def date_strings(draw) -> str:
    """Return text of the SPEC §3 date form, often just outside the calendar or the range."""
    year = draw(YEARS)
    month = draw(st.sampled_from([1, 2, 6, 12, 0, 13]))
    day = draw(st.sampled_from([1, 15, 28, 29, 30, 31, 0, 32]))
    text = f"{year:04d}-{month:02d}-{day:02d}"
    if draw(st.booleans()):
        text += draw(st.sampled_from(["T", " "]))
        text += f"{draw(st.sampled_from([0, 12, 23, 24]))}".zfill(2) + ":" + draw(TWO_DIGITS)
        if draw(st.booleans()):
            text += ":" + draw(TWO_DIGITS)
            if draw(st.booleans()):
                text += "." + "9" * draw(st.integers(1, 12))
        offset = draw(
            st.sampled_from(["", "Z", "+00:00", "-05:00", "+01:00", "+14:00", "-23:59", "+24:00"])
        )
        text += offset
    return text


EDGE_DATETIMES = st.sampled_from(
    [dt.datetime(9999, 12, 31, 23, 59, 59, 999999), dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31)]
)
OFFSETS = st.integers(-(24 * 60 - 1), 24 * 60 - 1).map(
    lambda minutes: dt.timezone(dt.timedelta(minutes=minutes))
)
DATE_OBJECTS = st.one_of(
    st.dates(),
    st.datetimes(),
    st.builds(lambda moment, tz: moment.replace(tzinfo=tz), EDGE_DATETIMES, OFFSETS),
    st.builds(lambda moment, tz: moment.replace(tzinfo=tz), st.datetimes(), OFFSETS),
)
NUMBERS = st.one_of(
    st.integers(),
    st.sampled_from([10**300, -(10**300), 10**4299, 2**63, -(2**63) - 1, 0]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(
        [float("nan"), float("inf"), float("-inf"), -0.0, 5e-324, 1.7976931348623157e308]
    ),
)
TEXT = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["", " ", "C-1", "7", "7.0", "true", "\x00", "a\ud800b", "\udfff", "😀"]),
)
CLEAN_TEXT = TEXT.filter(lambda text: not violates_text_rule(text))
KEYS = st.sampled_from(["updated", "date", "customer_id", "summary", "extra"])


def values(scalars, text, levels: int):
    """Return metadata values nesting at most ``levels`` more container levels."""
    if levels == 0:
        return scalars
    inner = values(scalars, text, levels - 1)
    return st.one_of(scalars, st.lists(inner, max_size=3), st.dictionaries(text, inner, max_size=3))


SCALARS = st.one_of(date_strings(), DATE_OBJECTS, NUMBERS, TEXT, st.booleans(), st.none())
CLEAN_SCALARS = st.one_of(
    date_strings(), DATE_OBJECTS, NUMBERS, CLEAN_TEXT, st.booleans(), st.none()
)
# Within SPEC §2.2: the metadata object is level 1, so its values may hold three more levels.
METADATA = st.dictionaries(KEYS | CLEAN_TEXT, values(CLEAN_SCALARS, CLEAN_TEXT, 3), max_size=5)
# Anything: bad text anywhere, and nesting past the limit.
HOSTILE_METADATA = st.dictionaries(KEYS | TEXT, values(SCALARS, TEXT, 5), max_size=5)
IN_RANGE_NOW = st.one_of(date_strings(), DATE_OBJECTS).filter(
    lambda now: parse_date(now) is not None
)
CUSTOMERS = st.one_of(
    CLEAN_TEXT, st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.booleans()
)
OPTIONS = {
    "fmt": st.sampled_from(["markdown", "xml"]),
    "on_stale": st.sampled_from(["exclude", "warn"]),
    "on_unknown": st.sampled_from(["exclude", "warn"]),
    "order": st.sampled_from(["recency", "relevance", "path"]),
}


def workspace(items_metadata, fmt, on_stale, on_unknown, order) -> dict:
    return {
        "consumers": [{"key": "bot", "render": {"format": fmt, "includeCurrentness": True}}],
        "layers": [
            {
                "key": "filtered",
                "itemFilter": {"customer_id": "customer_id"},
                "items": [
                    {"path": f"f{n}", "title": f"F{n}", "body": "Refund body.", "metadata": meta}
                    for n, meta in enumerate(items_metadata)
                ],
            },
            {
                "key": "dated",
                "items": [
                    {"path": f"d{n}", "title": f"D{n}", "body": "Refund body.", "metadata": meta}
                    for n, meta in enumerate(items_metadata)
                ],
            },
        ],
        "profiles": [
            {
                "key": "p",
                "consumer": "bot",
                "objective": "answer",
                "budget": 100_000,
                "rules": {
                    layer: {
                        "order": order,
                        "facets": ["body", "summary", "meta.updated", "meta.customer_id"],
                        "currentness": {
                            "maxAgeDays": 30,
                            "onStale": on_stale,
                            "onUnknown": on_unknown,
                        },
                    }
                    for layer in ("filtered", "dated")
                },
            }
        ],
    }


def assert_well_formed(resolution) -> None:
    """The resolution serializes as the API and the CLI write it, dates with 4-digit years."""
    json_text(resolution).encode("utf-8")
    json.dumps(resolution, allow_nan=False)
    assert len(resolution["now"]) == 20 and resolution["now"][:4].isdigit()


@SETTINGS
@given(
    items_metadata=st.lists(METADATA, min_size=1, max_size=6),
    customer=CUSTOMERS,
    now=IN_RANGE_NOW,
    **OPTIONS,
)
def test_resolve__metadata_within_the_limits__always_resolves(
    items_metadata, customer, now, **options
):
    document = workspace(items_metadata, **options)
    request = {"profile": "p", "input": {"message": "refund", "customer_id": customer}, "now": now}

    resolution = compile_workspace(document).resolve(request)

    assert_well_formed(resolution)


@SETTINGS
@given(items_metadata=st.lists(HOSTILE_METADATA, min_size=1, max_size=4), **OPTIONS)
def test_compile__any_metadata__refused_by_validation_or_resolves(items_metadata, **options):
    document = workspace(items_metadata, **options)
    issues = validate_workspace(document)
    try:
        compiled = compile_workspace(document)
    except WorkspaceError as error:
        # Refused only for what validation reports: SPEC §2.2 on an item's metadata.
        assert issues and (error.path, error.message) == (issues[0].path, issues[0].message)
        assert error.path.endswith(".metadata")
        event("refused")
        return
    assert issues == []
    event("resolved")
    request = {"profile": "p", "input": {"customer_id": "C-1"}, "now": "2026-11-29T12:00:00Z"}

    assert_well_formed(compiled.resolve(request))


FIXED = workspace(
    [{"updated": "2026-11-01", "customer_id": "C-1"}, {"updated": "0999-05-01"}],
    "markdown",
    "warn",
    "warn",
    "recency",
)


@SETTINGS
@given(now=st.one_of(date_strings(), DATE_OBJECTS, NUMBERS, TEXT))
def test_resolve__any_now__resolves_or_invalid_request_at_now(now):
    compiled = compile_workspace(FIXED)
    try:
        resolution = compiled.resolve({"profile": "p", "now": now})
    except RequestError as error:
        assert (error.code, error.path) == ("INVALID_REQUEST", "now")
        assert parse_date(now) is None
        return

    assert parse_date(now) is not None
    assert_well_formed(resolution)

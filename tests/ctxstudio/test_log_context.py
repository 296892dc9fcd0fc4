"""Application log lines carry the time (UTC) and the level, and the request's id inside a
request (``ctxstudio.log_context``; issue 33: they had neither time nor level)."""

import io
import logging
import re
import secrets

import pytest
from django.conf import settings

from ctxstudio.log_context import RequestIdFilter
from ctxstudio.log_format import UtcFormatter
from tests.ctxstudio.test_production import run_manage

LINE = re.compile(
    r"^(?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (?P<level>[A-Z]+) (?P<logger>\S+) "
    r"\[(?P<request>[^\]]+)\] (?P<message>.*)$",
    re.MULTILINE,
)


def production_warning(**env):
    """Run a production process (DEBUG off) that logs one warning outside any request."""
    return run_manage(
        "shell",
        "-c",
        "import logging; logging.getLogger('profiles.notifications').warning('mail %s failed', 3)",
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
        CACHE_URL="redis://127.0.0.1:6379/0",  # not connected to
        **env,
    )


def test_log_line__production_process__time_level_logger_and_no_request():
    result = production_warning()

    lines = [match.groupdict() for match in LINE.finditer(result.stderr)]
    assert [
        (line["level"], line["logger"], line["request"], line["message"]) for line in lines
    ] == [("WARNING", "profiles.notifications", "-", "mail 3 failed")], result.stderr


@pytest.fixture
def request_log():
    """The console handler as settings.LOGGING builds it, on the logger of refused requests."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(UtcFormatter(settings.LOGGING["formatters"]["line"]["format"]))
    logger = logging.getLogger("django.request")
    logger.addHandler(handler)
    yield stream
    logger.removeHandler(handler)


@pytest.mark.django_db
def test_log_line__in_a_request__carries_the_proxys_request_id(client, request_log):
    response = client.get("/api/v1/no-such-thing", HTTP_X_REQUEST_ID="edge-7f3a.42")

    assert response.status_code == 404
    assert response["X-Request-ID"] == "edge-7f3a.42"
    line = LINE.search(request_log.getvalue())
    assert line is not None, request_log.getvalue()
    assert (line["level"], line["request"]) == ("WARNING", "edge-7f3a.42")
    assert "Not Found" in line["message"]
    # Once the response is closed, a line belongs to no request.
    logging.getLogger("django.request").warning("after")
    assert LINE.findall(request_log.getvalue())[-1][3] == "-"


@pytest.mark.django_db
@pytest.mark.parametrize("given", [None, "two words", "x" * 65, "id\nforged line"])
def test_request_id__absent_or_unusable__a_new_one_answered(client, request_log, given):
    headers = {} if given is None else {"HTTP_X_REQUEST_ID": given}
    response = client.get("/api/v1/no-such-thing", **headers)

    request_id = response["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{16}", request_id)
    assert f"[{request_id}]" in request_log.getvalue()
    assert client.get("/healthz")["X-Request-ID"] != request_id


def test_log_line__development_process__django_s_lines_said_once_with_time_and_level():
    # Given DEBUG (make run), where Django's own console handler is active
    result = run_manage(
        "shell",
        "-c",
        "import logging; logging.getLogger('django.utils.autoreload').info('watching %s', 3)",
        DEBUG="true",
    )

    # Then its line is written once, in the application's format
    assert result.stderr.count("watching 3") == 1, result.stderr
    lines = [match.groupdict() for match in LINE.finditer(result.stderr)]
    assert [(line["level"], line["logger"], line["message"]) for line in lines] == [
        ("INFO", "django.utils.autoreload", "watching 3")
    ], result.stderr

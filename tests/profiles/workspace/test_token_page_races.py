"""The token page's "Create token" posted many times at once (a double click, several tabs),
through a real threaded server on PostgreSQL: every post answers the page, and the token the
last of them shows is the one that works (issue 18: 1-7 of 16 answered 500 on the unique
constraint, and pages showed tokens that did not exist).

SQLite has no row locks (and one in-memory database per thread): this runs in the
PostgreSQL pass of the suite.
"""

import http.client
import os
import re
import threading

import pytest
from django.contrib.auth.models import User
from django.core.servers.basehttp import WSGIRequestHandler
from django.core.wsgi import get_wsgi_application
from django.test import Client

from profiles.models import ApiKey
from profiles.models.keys import key_hash
from profiles.workspace.keys import token_replace
from tests.profiles.workspace.test_parallel_writes_api import ParallelWSGIServer, in_parallel

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"),
        reason="needs PostgreSQL's row locks (the suite's second run)",
    ),
]

PARALLEL_POSTS = 16
CSRF_SECRET = "parallelposts" * 2 + "tokens"  # 32 characters: Django's unmasked secret
NEW_TOKEN = re.compile(r'<pre class="code" id="new-token" tabindex="0">(ctx_[\w-]{43})</pre>')


@pytest.fixture
def server():
    """Run the application on a threaded server; return a function calling it."""
    httpd = ParallelWSGIServer(("127.0.0.1", 0), WSGIRequestHandler, allow_reuse_address=False)
    httpd.set_app(get_wsgi_application())
    serving = threading.Thread(target=httpd.serve_forever, daemon=True)
    serving.start()

    def call(method: str, path: str, headers: dict) -> tuple[int, str]:
        connection = http.client.HTTPConnection("127.0.0.1", httpd.server_port, timeout=60)
        try:
            connection.request(method, path, b"" if method == "POST" else None, headers)
            response = connection.getresponse()
            return response.status, response.read().decode()
        finally:
            connection.close()

    try:
        yield call
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def signed_in() -> dict:
    """Return the headers of a signed-in user's browser: session and CSRF cookies, token."""
    user = User.objects.create_user("dana", password="dana-password-1")
    browser = Client()
    browser.force_login(user)
    session = browser.cookies["sessionid"].value
    return {
        "Cookie": f"sessionid={session}; csrftoken={CSRF_SECRET}",
        "X-CSRFToken": CSRF_SECRET,
        "Content-Type": "application/x-www-form-urlencoded",
    }


@pytest.mark.parametrize("attempt", range(3))
def test_token_create__16_posts_at_once__every_page_answers_and_the_last_token_works(
    server, signed_in, attempt
):
    token_replace(user=User.objects.get(username="dana"))  # "Replace with a new token"

    answers = in_parallel([lambda: server("POST", "/tokens/create/", signed_in)] * PARALLEL_POSTS)

    assert [status for status, _ in answers] == [200] * PARALLEL_POSTS, [
        body[:300] for status, body in answers if status != 200
    ]
    shown = [NEW_TOKEN.search(body).group(1) for _, body in answers]
    assert len(set(shown)) == PARALLEL_POSTS  # each post replaced the token once
    live = ApiKey.objects.get(owner__username="dana", kind="user", revoked_at=None)
    stored = next(key for key in shown if key_hash(key) == live.hash)  # the last commit's page
    status, _ = server("GET", "/api/v1/profiles/", {"Authorization": f"Token {stored}"})
    assert status == 200
    replaced = next(key for key in shown if key != stored)
    status, _ = server("GET", "/api/v1/profiles/", {"Authorization": f"Token {replaced}"})
    assert status == 401

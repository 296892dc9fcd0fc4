"""Browser tests: Playwright (sync API) driving Debian's chromium against pytest-django's
live server. No browser download: the executable is the system's ``chromium``."""

import os
import re
import shutil
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.contrib.auth.models import Group, User
from django.core.management import call_command

from profiles.authoring.scenarios import scenarios_upsert
from profiles.import_export.imports import workspace_import
from profiles.models import Profile, Scenario
from profiles.workspace import cache
from profiles.workspace.permissions import EDITORS_GROUP
from tests.profiles.conftest import RELEASE_SCENARIOS, release_workspace

# The sync API runs an event loop in this thread; Django's ORM calls from the tests are safe.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
)
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CASE_01 = next((Path(__file__).resolve().parents[1] / "resolver" / "conformance").glob("01-*.yaml"))
PASSWORD = "browser-pass-123"


@pytest.fixture(scope="session")
def browser():
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (CI must install it: see .ci/run)")
        pytest.skip("chromium is not installed (apt-get install chromium); CI runs these tests")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"failed-{request.node.name}.png"), full_page=True)
    context.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture
def workspace(transactional_db):
    """Conformance case 01 imported, with its request as the default scenario."""
    cache.workspace_cache_clear()
    case = yaml.safe_load(CASE_01.read_text(encoding="utf-8"))
    workspace_import(document=case["workspace"], mode="replace")
    profile = Profile.objects.get(key="support-answer")
    Scenario.objects.create(
        name="Dana's card refund",
        profile=profile,
        input=case["request"]["input"],
        now=case["request"]["now"],
        is_default=True,
    )
    yield profile
    cache.workspace_cache_clear()


@pytest.fixture
def user(transactional_db):
    return User.objects.create_superuser("editor", "", PASSWORD)


@pytest.fixture
def signed_in(page, live_server, user, workspace):
    """A page signed in through the login form, on the profiles list."""
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(user.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server.url}/profiles/")
    return page


@pytest.fixture
def release(transactional_db):
    """The release workspace with its saved scenarios and two editors, Dana and Lee (each with
    an address at example.com, signing in with PASSWORD): one proposes, the other reviews."""
    cache.workspace_cache_clear()
    workspace_import(document=release_workspace())
    scenarios_upsert(scenarios=RELEASE_SCENARIOS)
    editors, _ = Group.objects.get_or_create(name=EDITORS_GROUP)
    for name in ("dana", "lee"):
        User.objects.create_user(name, email=f"{name}@example.com", password=PASSWORD).groups.add(
            editors
        )
    yield
    cache.workspace_cache_clear()


@pytest.fixture
def demo_started(transactional_db, live_server) -> dict[str, str]:
    """The demo as ``make run`` starts it (production protected, the demo user and a second
    editor); return each user's password as ``load_demo`` printed it, by username."""
    cache.workspace_cache_clear()
    out = StringIO()
    call_command("load_demo", "--url", f"{live_server.url}/", stdout=out, stderr=StringIO())
    printed = out.getvalue()
    yield {
        "demo": re.search(r" as demo / (\S+)", printed).group(1),
        "reviewer": re.search(r": reviewer / (\S+)", printed).group(1),
    }
    cache.workspace_cache_clear()


def sign_in(page, live_server, username: str, password: str = PASSWORD) -> None:
    """Sign in through the login form and land on the profiles list."""
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{live_server.url}/profiles/")


def sign_out(page) -> None:
    page.get_by_role("button", name="Sign out").click()


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)

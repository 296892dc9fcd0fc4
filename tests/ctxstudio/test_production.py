"""Production settings, health check and database-outage answers."""

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import global_settings
from django.db import OperationalError, connection

import ctxstudio.settings as project

ROOT = Path(__file__).resolve().parents[2]


def run_manage(*args, **env):
    # A production process starts from a clean environment: nothing the test runner set
    # (such as the browser tests' DJANGO_ALLOW_ASYNC_UNSAFE) may leak into the check.
    leaked = ("DEBUG", "SECRET_KEY", "DJANGO_ALLOW_ASYNC_UNSAFE")
    environment = {k: v for k, v in os.environ.items() if k not in leaked}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_settings__debug_off_without_secret_key__refuse_to_start():
    result = run_manage("check", DEBUG="false")
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


def test_deploy_check__production_settings__reports_no_issue():
    result = run_manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="studio.example.com",
        CACHE_URL="redis://127.0.0.1:6379/0",  # not connected to by the check
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_deploy_check__no_shared_cache__warns_that_login_counters_are_per_process():
    result = run_manage(
        "check",
        "--deploy",
        DEBUG="false",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="studio.example.com",
        CACHE_URL="",
    )
    # One warning that names what to set (issue 33: axes.W001 named AXES_CACHE and CACHES).
    output = result.stdout + result.stderr
    assert output.count("ctxstudio.W001") == 1 and "Set CACHE_URL" in output
    assert "axes.W001" not in output


def test_make_serve__no_shared_cache__says_once_what_to_set(tmp_path):
    # make serve runs the migrations, then the task worker beside gunicorn: the warning was
    # printed by both (axes.W001 twice, naming AXES_CACHE and CACHES), now by the first only.
    env = {
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "HTTPS": "false",
        "CACHE_URL": "",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'serve.sqlite3'}",
    }
    migrated = run_manage("migrate", "--noinput", "-v", "0", **env)
    environment = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    served = subprocess.run(
        # The server's stand-in gives the worker time to start (and to check, if it did).
        [
            sys.executable,
            "scripts/with_worker.py",
            "--",
            sys.executable,
            "-c",
            "import time; time.sleep(6)",
        ],
        cwd=ROOT,
        env={**environment, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )

    output = migrated.stdout + migrated.stderr + served.stdout + served.stderr
    assert migrated.returncode == 0, output
    assert output.count("W001") == 1, output
    assert "Set CACHE_URL" in output


@pytest.mark.django_db
def test_healthz__database_reachable__answers_200_without_login(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok"}


@pytest.mark.django_db
def test_healthz__database_unreachable__answers_503(client, monkeypatch):
    def refuse(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(connection, "cursor", refuse)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["status"] == "unavailable"


@pytest.mark.django_db
def test_api__database_unreachable__answers_503_with_error_shape(admin_client, monkeypatch):
    from django.db.backends.base.base import BaseDatabaseWrapper

    def refuse(self, *args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    admin_client.get("/healthz")  # the session is loaded before the outage
    monkeypatch.setattr(BaseDatabaseWrapper, "cursor", refuse)
    response = admin_client.get("/api/v1/profiles/")
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json()["error"]["code"] == "SERVICE_UNAVAILABLE"


@pytest.mark.django_db
def test_pages__any_response__carry_a_csp_without_inline_scripts(client):
    response = client.get("/accounts/login/")
    policy = response["Content-Security-Policy"]
    script_sources = next(d for d in policy.split(";") if d.strip().startswith("script-src"))
    assert "'unsafe-inline'" not in script_sources
    assert "frame-ancestors 'none'" in policy
    assert response["X-Frame-Options"] == "DENY"


def test_healthz__https_on__answers_over_plain_http_while_pages_redirect():
    # Given production settings with HTTPS on, as a load balancer's plain-HTTP probe sees them,
    probe = (
        "from django.test import Client; c = Client();"
        "print(c.get('/healthz').status_code, c.get('/accounts/login/').status_code)"
    )
    result = run_manage(
        "shell",
        "--no-imports",
        "-c",
        probe,
        DEBUG="false",
        HTTPS="true",
        SECRET_KEY=secrets.token_urlsafe(50),
        DATABASE_URL="sqlite:///:memory:",
        ALLOWED_HOSTS="testserver",
    )
    # then /healthz answers itself and every other page still redirects to https.
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["200", "301"]


# --- settings and their documentation ---------------------------------------------------------

ENVIRONMENT_READ = re.compile(r"""(?:environ\.get|environ\[|env_bool|env_list)\(?\[?"([A-Z_]+)\"""")
SETTING_READ = re.compile(r"""getattr\(\s*settings,\s*"([A-Z_]+)"|\bsettings\.([A-Z][A-Z_]+)\b""")


def test_settings__every_setting_our_code_reads__declared_in_the_settings_module():
    read = {
        name
        for folder in ("profiles", "ctxstudio", "resolver")
        for path in (ROOT / folder).rglob("*.py")
        for match in SETTING_READ.finditer(path.read_text(encoding="utf-8"))
        for name in match.groups()
        if name
    }

    undeclared = {
        name for name in read if not hasattr(project, name) and not hasattr(global_settings, name)
    }
    assert read
    assert not undeclared


def test_operations_doc__every_environment_variable_of_the_server__listed():
    sources = [ROOT / "ctxstudio" / "settings.py", ROOT / "scripts" / "gunicorn.conf.py"]
    variables = {
        name for path in sources for name in ENVIRONMENT_READ.findall(path.read_text("utf-8"))
    }
    operations = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")

    assert "WRITE_LOCK_TIMEOUT" in variables
    assert {name for name in variables if f"`{name}`" not in operations} == set()


def test_check__development_defaults__no_warning_about_the_per_process_cache():
    # make run: DEBUG on, one runserver process, the local-memory cache — nothing to warn about.
    result = run_manage("check", "--fail-level", "WARNING", DEBUG="true", CACHE_URL="")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "W001" not in result.stdout + result.stderr

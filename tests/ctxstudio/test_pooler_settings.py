"""DB_POOLER and DB_PREPARE_THRESHOLD (docs/operations.md "PgBouncer"): what the settings make
of them, what they refuse, and the system check behind PgBouncer."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxstudio.checks import pooler_check

ROOT = Path(__file__).resolve().parents[2]
POSTGRES = "postgres://postgres@127.0.0.1:5432/ctx"


def database_settings(**env: str) -> subprocess.CompletedProcess:
    """Load the settings in a fresh process with ``env``; print its default database."""
    code = (
        "import json; from ctxstudio import settings as s; d = s.DATABASES['default']; "
        "print(json.dumps([d.get('DISABLE_SERVER_SIDE_CURSORS'), d.get('OPTIONS', {})]))"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("DB_")}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**clean, "DATABASE_URL": POSTGRES, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_settings__pgbouncer__server_side_cursors_off_and_nothing_prepared():
    result = database_settings(DB_POOLER="pgbouncer")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[true, {}]"


def test_settings__prepare_threshold__server_side_binding_and_the_threshold():
    result = database_settings(DB_PREPARE_THRESHOLD="2")

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        '[false, {"server_side_binding": true, "prepare_threshold": 2}]'
    )


def test_settings__default__neither():
    assert database_settings().stdout.strip() == "[false, {}]"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DB_POOLER": "pgbouncer", "DB_PREPARE_THRESHOLD": "5"}, "must be empty with DB_POOLER"),
        ({"DB_POOLER": "pgpool"}, "DB_POOLER: 'pgpool'"),
        ({"DB_PREPARE_THRESHOLD": "often"}, "DB_PREPARE_THRESHOLD must be a whole number"),
    ],
)
def test_settings__refused_combinations__improperly_configured(env, message):
    result = database_settings(**env)

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr


def postgres(**entries) -> dict:
    return {"default": {"ENGINE": "django.db.backends.postgresql", "OPTIONS": {}, **entries}}


def test_check__behind_pgbouncer__cursors_or_prepared_statements_refused(settings):
    settings.DB_POOLER = "pgbouncer"
    settings.DATABASES = postgres(OPTIONS={"prepare_threshold": 5})

    assert sorted(error.id for error in pooler_check()) == ["ctxstudio.E010", "ctxstudio.E011"]


def test_check__behind_pgbouncer_as_the_settings_make_it__no_error(settings):
    settings.DB_POOLER = "pgbouncer"
    settings.DATABASES = postgres(DISABLE_SERVER_SIDE_CURSORS=True)

    assert pooler_check() == []


def test_check__no_pooler__prepared_statements_allowed(settings):
    settings.DB_POOLER = ""
    settings.DATABASES = postgres(OPTIONS={"prepare_threshold": 5})

    assert pooler_check() == []

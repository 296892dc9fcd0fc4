"""The container files (Dockerfile, .dockerignore, compose.yaml) against the project.

Building and running them is ``python -m tests.perf.container_check`` (minutes, podman as
root); these checks are what can go stale without anybody building: a task queue with no
worker in compose.yaml, a file the image's commands need left out of the build context, the
web container's health check.
"""

import fnmatch
import os
import socket
import subprocess
import sys
from pathlib import Path

import yaml
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def ignored(path: str) -> bool:
    """Whether .dockerignore leaves ``path`` (or a folder above it) out of the context."""
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    return any(
        fnmatch.fnmatch(prefix, pattern.removeprefix("**/"))
        or fnmatch.fnmatch(prefix.rpartition("/")[2], pattern.removeprefix("**/"))
        for pattern in patterns
        for prefix in prefixes
    )


def test_every_task_queue_has_a_worker_service():
    services = compose()["services"]
    queues = []
    for service in services.values():
        command = service.get("command") or []
        if "db_worker" in command:
            queues.append(command[command.index("--queue-name") + 1])
    assert sorted(queues) == sorted(settings.TASK_QUEUES)


def test_app_services_share_the_image_and_reach_postgres_and_redis_by_service_name():
    services = compose()["services"]
    app = [name for name, service in services.items() if "ctxstudio" in service["image"]]
    assert sorted(app) == ["web", "worker", "worker-webhooks"]
    assert len({services[name]["image"] for name in app}) == 1
    for name in app:
        environment = services[name]["environment"]
        assert environment["DEBUG"] == "false"
        assert "@postgres:5432/" in environment["DATABASE_URL"]
        assert environment["CACHE_URL"].startswith("redis://redis:6379/")
        assert "${SECRET_KEY:?" in environment["SECRET_KEY"]  # no default secret
    assert services["web"]["build"]["args"]["BASE_IMAGE"].startswith("${BASE_IMAGE:-python:3.1")


def test_the_build_context_holds_what_the_image_runs():
    dockerfile = (ROOT / "Dockerfile").read_text()
    services = compose()["services"]
    needed = [
        "manage.py",
        "requirements/base.txt",
        "ctxstudio/settings.py",
        "profiles/apps.py",
        "resolver/__init__.py",
        "templates",
        "static/css",
        "scripts/container_web.sh",
        "scripts/pg_ready.py",
        "scripts/gunicorn.conf.py",
        services["web"]["healthcheck"]["test"][-1],
    ]
    assert 'CMD ["sh", "scripts/container_web.sh"]' in dockerfile
    for path in needed:
        assert (ROOT / path).exists(), path
        assert not ignored(path), path
    assert ignored(".venv") and ignored("tests/perf/bench.py") and ignored("db.sqlite3")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def health(port: int) -> int:
    env = {**os.environ, "GUNICORN_BIND": f"0.0.0.0:{port}"}
    script = ROOT / "scripts" / "container_health.py"
    return subprocess.run([sys.executable, script], env=env, timeout=30).returncode


def test_health_check_passes_on_a_live_server_and_fails_without_one(live_server):
    assert health(int(live_server.url.rpartition(":")[2])) == 0
    assert health(free_port()) == 1

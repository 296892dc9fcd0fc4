"""The client's tests: an in-memory fake server (``ctxstudio_client.testing``) for the
client's own behaviour, the Django app in process and a real gunicorn for parity."""

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from ctxstudio_client import Client
from ctxstudio_client.testing import FakeServer

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = sorted((ROOT / "tests" / "resolver" / "conformance").glob("*.yaml"))
NOW = "2026-11-29T12:00:00Z"


def case(name_start: str) -> dict:
    path = next(p for p in CONFORMANCE if p.name.startswith(name_start))
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.fixture
def support_case() -> dict:
    return case("01-")


@pytest.fixture
def server(support_case) -> FakeServer:
    return FakeServer(support_case["workspace"])


@pytest.fixture
def make_client(server, tmp_path):
    made = []

    def make(**options) -> Client:
        options.setdefault("snapshot_dir", tmp_path / "snapshots")
        options.setdefault("backoff", 0.001)
        client = Client("http://studio.test", key=server.key, transport=server.transport, **options)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def run_async(coroutine):
    """Run ``coroutine`` to its end in a thread of its own: a test in the same process may
    have left an event loop running in this thread (Playwright's sync API does), where
    ``asyncio.run`` refuses to start."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()

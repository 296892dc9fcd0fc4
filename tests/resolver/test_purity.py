"""The engine stays a pure library: no Django, no I/O, no clock (SPEC §1, house style)."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "resolver"
# Only the command line reads files and only it, documents.py, yaml_writer.py, yaml_plain.py
# (what those two share) and locations.py use YAML; only clock.py reads the time, as the
# default for a request without ``now`` (callers inject ``clock=``).
EDGE_MODULES = {
    "cli.py",
    "documents.py",
    "yaml_writer.py",
    "yaml_plain.py",
    "locations.py",
    "__main__.py",
    "clock.py",
    # The engine version: a digest of the package's own source (the client compares it).
    "fingerprint.py",
}
FORBIDDEN_IMPORTS = {
    "django",
    "yaml",
    "os",
    "pathlib",
    "shutil",
    "tempfile",
    "subprocess",
    "socket",
    "urllib",
    "http",
    "sqlite3",
    "psycopg",
    "time",
    "random",
}
# Third-party packages the engine may import (everything else it imports is the standard
# library or itself): the SPEC §5 stemmer, and numpy for array postings and shared records.
ALLOWED_THIRD_PARTY = {"snowballstemmer", "numpy"}
FORBIDDEN_CALLS = {
    "open",
    "datetime.now",
    "datetime.today",
    "datetime.utcnow",
    "date.today",
    "dt.datetime.now",
    "dt.datetime.today",
    "dt.datetime.utcnow",
    "dt.date.today",
    "datetime.datetime.now",
    "datetime.datetime.today",
    "datetime.datetime.utcnow",
    "datetime.date.today",
    "time.time",
}

RESOLUTION_SCRIPT = """
import json, sys
import resolver

document = json.loads(sys.argv[1])
resolution = resolver.compile_workspace(document).resolve(
    {"profile": "answer", "input": {"message": "refund"}, "now": "2026-11-29T12:00:00Z"}
)
print(json.dumps({
    "status": resolution["status"],
    "modules": sorted(name for name in sys.modules if name.split(".")[0] in ("django", "yaml")),
}))
"""
DOCUMENT = {
    "consumers": [{"key": "assistant"}],
    "layers": [{"key": "kb", "items": [{"path": "a", "title": "Refunds", "body": "Refund."}]}],
    "profiles": [
        {"key": "answer", "consumer": "assistant", "objective": "answer-ticket", "budget": 100}
    ],
}


def engine_modules():
    return sorted(
        path for path in PACKAGE.rglob("*.py") if path.relative_to(PACKAGE).name not in EDGE_MODULES
    )


def dotted_name(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def test_resolver__imported_and_run_in_a_fresh_interpreter__loads_neither_django_nor_yaml():
    completed = subprocess.run(
        [sys.executable, "-c", RESOLUTION_SCRIPT, json.dumps(DOCUMENT)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "", "PYTHONPATH": str(ROOT)},
    )

    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    assert report["status"] == "RESOLVED"
    assert report["modules"] == []


def test_engine_modules__found__include_the_entry_point():
    names = {path.relative_to(PACKAGE).as_posix() for path in engine_modules()}

    assert "__init__.py" in names
    assert len(names) > 1


@pytest.mark.parametrize(
    "module", engine_modules(), ids=lambda path: path.relative_to(PACKAGE).as_posix()
)
def test_engine_module__source__imports_no_io_clock_or_django(module):
    tree = ast.parse(module.read_text(), filename=str(module))

    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
    calls = {
        dotted_name(node.func)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and dotted_name(node.func)
    }

    assert imported & FORBIDDEN_IMPORTS == set()
    assert calls & FORBIDDEN_CALLS == set()
    third_party = imported - set(sys.stdlib_module_names) - {"resolver"}
    assert third_party <= ALLOWED_THIRD_PARTY

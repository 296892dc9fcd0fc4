"""The arrows of profiles/ point one way (docs/architecture.md), checked on the imports' AST like
tests/resolver/test_purity.py checks the engine.

* the shared hall (``profiles.workspace``, ``profiles.models``) imports no feature and no door;
* features (material, authoring, import_export, resolution, safechange) import no door;
* the studio and the API never import each other; the admin imports neither;
* no ``from profiles…`` import inside a function (a cycle hidden from the reader), except in
  ``AppConfig.ready`` and management commands;
* ``.objects`` (ORM queries) only in models, selectors and services.
"""

import ast
from pathlib import Path

import pytest

PROFILES = Path(__file__).resolve().parents[2] / "profiles"

HALL = ("profiles.workspace", "profiles.models")
FEATURES = (
    "profiles.material",
    "profiles.authoring",
    "profiles.import_export",
    "profiles.resolution",
    "profiles.safechange",
    "profiles.versioning",
    "profiles.activity",
    "profiles.notifications",
    "profiles.team",
)
DOORS = ("profiles.studio", "profiles.api", "profiles.admin", "profiles.templatetags")
# Modules that may query the ORM: the models, selectors and services (a feature's modules are
# its services); the doors and the hall's pure modules may not.
QUERYING = (
    "profiles.models",
    "profiles.workspace.selectors",
    *FEATURES,
    "profiles.workspace.writing",
    "profiles.workspace.bulk_writes",
    "profiles.workspace.concurrency",
    "profiles.workspace.cache",
    "profiles.workspace.derived",
    "profiles.workspace.served",
    "profiles.workspace.held_texts",
    "profiles.workspace.task_workers",
    "profiles.workspace.item_change_log",
    "profiles.workspace.permissions",
    "profiles.workspace.tokens",
    "profiles.management",
    "profiles.migrations",
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PROFILES.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {
    module_name(path): path
    for path in sorted(PROFILES.rglob("*.py"))
    if "migrations" not in path.parts
}


def within(module: str, packages) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


def imports(path: Path):
    """Yield (imported module, line, inside a function) for every import of profiles."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = []

    class Visitor(ast.NodeVisitor):
        def visit_FunctionDef(self, node):
            functions.append(node)
            self.generic_visit(node)
            functions.pop()

        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_ImportFrom(self, node):
            if node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    yield_list.append(
                        (full if full in MODULES else node.module, node.lineno, bool(functions))
                    )

        def visit_Import(self, node):
            for alias in node.names:
                yield_list.append((alias.name, node.lineno, bool(functions)))

    yield_list: list = []
    Visitor().visit(tree)
    return [item for item in yield_list if item[0].startswith("profiles")]


def violations(rule) -> list[str]:
    found = []
    for module, path in MODULES.items():
        for imported, line, in_function in imports(path):
            reason = rule(module, imported, in_function)
            if reason:
                found.append(
                    f"{path.relative_to(PROFILES.parent)}:{line} imports {imported}: {reason}"
                )
    return found


def test_shared_hall__imports_no_feature_and_no_door():
    def rule(module, imported, _):
        if within(module, HALL) and within(imported, FEATURES + DOORS):
            return "the shared hall serves every feature and knows none"
        return None

    assert violations(rule) == []


def test_features__import_no_door():
    def rule(module, imported, _):
        if within(module, FEATURES) and within(imported, DOORS):
            return "a feature is reached through doors, it does not reach them"
        return None

    assert violations(rule) == []


@pytest.mark.parametrize(
    "door, others",
    [
        ("profiles.studio", ("profiles.api", "profiles.admin")),
        ("profiles.api", ("profiles.studio", "profiles.admin")),
        ("profiles.admin", ("profiles.studio", "profiles.api")),
        ("profiles.templatetags", ("profiles.api", "profiles.admin")),
    ],
)
def test_doors__never_import_each_other(door, others):
    def rule(module, imported, _):
        if within(module, (door,)) and within(imported, others):
            return "doors stand side by side; what they share lives in a feature or the hall"
        return None

    assert violations(rule) == []


def test_no_function_level_imports_of_profiles__outside_ready_and_commands():
    def rule(module, imported, in_function):
        if in_function and not within(module, ("profiles.management", "profiles.apps")):
            return "an import inside a function hides a cycle: give the code its place instead"
        return None

    assert violations(rule) == []


def test_orm_queries__only_in_models_selectors_and_services():
    found = []
    for module, path in MODULES.items():
        if within(module, QUERYING):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "objects":
                found.append(f"{path.relative_to(PROFILES.parent)}:{node.lineno}")
    assert found == [], "ORM reads belong in a selector (workspace or feature), writes in a service"


def test_rules_see_every_module():
    # Every module is in the hall, a feature or a door (or the app's own files): none escapes.
    known = HALL + FEATURES + DOORS + ("profiles.management", "profiles.demo")
    loose = [
        module
        for module in MODULES
        if module not in ("profiles", "profiles.apps") and not within(module, known)
    ]
    assert loose == []

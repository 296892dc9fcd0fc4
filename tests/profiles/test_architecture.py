"""The arrows of profiles/ point one way (docs/architecture.md), checked on the imports' AST like
tests/resolver/test_purity.py checks the engine.

* the shared hall (``profiles.workspace``, ``profiles.models``) imports no feature and no door;
* the features stand on floors, declared once from the ground up (``FLOORS``): a feature
  imports only the features on the floors below its own, so no two features can import each
  other (no package cycle, however long);
* features import no door and no management command, a command imports no door, and nothing
  in profiles imports the project (``ctxstudio``), which may import any of them, as a project
  does;
* the studio and the API never import each other; the admin imports neither;
* no ``from profiles…`` import inside a function (a cycle hidden from the reader), except in
  ``AppConfig.ready`` and management commands;
* ORM queries only in models, selectors and services: neither ``.objects`` nor a query through
  a related manager (``profile.rules.filter(…)``, ``user.groups.exists()``) in a door.

Each rule is a function of (module name, source) returning what it finds, so the tests at the
end can feed it a planted violation and see it reported.
"""

import ast
from pathlib import Path

import pytest
from django.apps import apps

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "profiles"
PROJECT = ROOT / "ctxstudio"

HALL = ("profiles.workspace", "profiles.models")
# The features from the ground up: each may import only the features named before it.
FLOORS = (
    "profiles.activity",  # the activity log every write appends to
    "profiles.notifications",  # emails and webhooks
    "profiles.team",  # members, invitations, single sign-on
    "profiles.versioning",  # versions, environments, protection: the guard every write calls
    "profiles.material",  # consumers, layers, items
    "profiles.authoring",  # profiles, rules, scenarios
    "profiles.resolution",  # the one resolve service
    "profiles.safechange",  # change requests, change sets, reviews, restore, impact
    "profiles.import_export",  # the workspace document (its dry run is a change set)
)
FEATURES = FLOORS
COMMANDS = ("profiles.management",)
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
    "profiles.workspace.held_rows",
    "profiles.workspace.derived",
    "profiles.workspace.served",
    "profiles.workspace.held_texts",
    "profiles.workspace.task_workers",
    "profiles.workspace.item_change_log",
    "profiles.workspace.permissions",
    "profiles.workspace.keys",
    "profiles.management",
    "profiles.migrations",
)
# The methods of a QuerySet (and so of a related manager) that run or build a query. ``all()``
# is left out: it is how a door reads what a selector prefetched (``change_request.approvals``).
QUERYSET_METHODS = frozenset(
    (
        "filter exclude get create get_or_create update_or_create update delete count exists"
        " values values_list order_by select_related prefetch_related aggregate annotate first"
        " last only defer distinct in_bulk iterator bulk_create"
    ).split()
)
# Methods that a dict or a list has too (``values.items.get(layer.id, [])``): a call is a query
# only with arguments the builtin cannot take.
SHARED_WITH_BUILTINS = {
    "get": lambda call: bool(call.keywords) or not call.args,
    "update": lambda call: bool(call.keywords) and not call.args,
    "count": lambda call: not call.args and not call.keywords,
    "values": lambda call: bool(call.args or call.keywords),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {
    module_name(path): path
    for path in sorted([*PROFILES.rglob("*.py"), *PROJECT.rglob("*.py")])
    if "migrations" not in path.parts
}


def within(module: str, packages) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


def floor_of(module: str) -> int | None:
    for number, feature in enumerate(FLOORS):
        if within(module, (feature,)):
            return number
    return None


def imports(source: str) -> list[tuple[str, int, bool]]:
    """Return (imported module, line, inside a function) for every import of the project."""
    tree = ast.parse(source)
    functions = []
    found: list = []

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
                    found.append(
                        (full if full in MODULES else node.module, node.lineno, bool(functions))
                    )

        def visit_Import(self, node):
            for alias in node.names:
                found.append((alias.name, node.lineno, bool(functions)))

    Visitor().visit(tree)
    return [item for item in found if within(item[0], ("profiles", "ctxstudio"))]


def import_violations(rule, sources=None) -> list[str]:
    """Apply ``rule(module, imported, in_function)`` to every import of ``sources`` (module name
    -> source; the project's own modules unless given) and return what it reports."""
    if sources is None:
        sources = {module: path.read_text(encoding="utf-8") for module, path in MODULES.items()}
    found = []
    for module, source in sources.items():
        for imported, line, in_function in imports(source):
            reason = rule(module, imported, in_function)
            if reason:
                found.append(f"{module}:{line} imports {imported}: {reason}")
    return found


def floor_rule(module, imported, _):
    """A feature imports only the features on the floors below it; profiles never imports the
    project; a feature or the hall imports no door and no management command; a command
    imports no door."""
    if within(module, ("profiles",)) and within(imported, ("ctxstudio",)):
        return "the project includes the app, not the other way round"
    floor, imported_floor = floor_of(module), floor_of(imported)
    if floor is not None and imported_floor is not None and imported_floor >= floor:
        if imported_floor == floor:
            return None  # a feature's own modules
        below = ", ".join(f.removeprefix("profiles.") for f in FLOORS[:floor]) or "none"
        return (
            f"{FLOORS[floor].removeprefix('profiles.')} stands below "
            f"{FLOORS[imported_floor].removeprefix('profiles.')} (floors below it: {below})"
        )
    if within(module, HALL) and within(imported, FEATURES + DOORS + COMMANDS):
        return "the shared hall serves every feature and knows none"
    if within(module, FEATURES) and within(imported, DOORS + COMMANDS):
        return "a feature is reached through doors, it does not reach them"
    if within(module, COMMANDS) and within(imported, DOORS):
        return "a command calls the services, as the doors do, not a door"
    return None


def related_manager_names() -> frozenset[str]:
    """Return the names through which a model instance reaches a related manager: reverse
    foreign keys, both sides of many-to-many relations (as Django's ``_meta`` knows them)."""
    names = set()
    for model in apps.get_models():
        for relation in model._meta.related_objects:
            if not relation.one_to_one:
                names.add(relation.get_accessor_name())
        for field in model._meta.many_to_many:
            names.add(field.name)
    return frozenset(names)


RELATED_MANAGERS = related_manager_names()


def orm_queries(module: str, source: str) -> list[str]:
    """Return where ``source`` queries the ORM: ``.objects``, or a QuerySet method called on a
    related manager (``X.<related name>.<method>(…)``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "objects":
            found.append((node.lineno, f"{module}:{node.lineno} .objects"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in QUERYSET_METHODS
            and isinstance(node.func.value, ast.Attribute)
            and node.func.value.attr in RELATED_MANAGERS
            and SHARED_WITH_BUILTINS.get(node.func.attr, bool)(node)
        ):
            found.append(
                (
                    node.lineno,
                    f"{module}:{node.lineno} .{node.func.value.attr}.{node.func.attr}() "
                    "(a related manager)",
                )
            )
    return [message for _, message in sorted(found)]


def project_sources(packages) -> dict[str, str]:
    return {
        module: path.read_text(encoding="utf-8")
        for module, path in MODULES.items()
        if within(module, packages)
    }


def test_features__stand_on_floors__importing_only_the_ones_below():
    assert import_violations(floor_rule) == []


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

    assert import_violations(rule) == []


def no_function_level_imports(module, imported, in_function):
    if (
        in_function
        and within(module, ("profiles",))
        and within(imported, ("profiles",))
        and not within(module, ("profiles.management", "profiles.apps"))
    ):
        return "an import inside a function hides a cycle: give the code its place instead"
    return None


def test_no_function_level_imports_of_profiles__outside_ready_and_commands():
    assert import_violations(no_function_level_imports) == []


def test_orm_queries__only_in_models_selectors_and_services():
    found = [
        query
        for module, source in project_sources(("profiles",)).items()
        if not within(module, QUERYING)
        for query in orm_queries(module, source)
    ]
    assert found == [], "ORM reads belong in a selector (workspace or feature), writes in a service"


def test_rules_see_every_module():
    # Every module is in the hall, a feature or a door (or the app's own files): none escapes.
    known = HALL + FEATURES + DOORS + COMMANDS + ("profiles.demo", "ctxstudio")
    loose = [
        module
        for module in MODULES
        if module not in ("profiles", "profiles.apps") and not within(module, known)
    ]
    assert loose == []


# The rules can fail: each is fed a planted violation and must report it.


def test_floor_rule__planted_package_cycle__is_reported():
    # Given material importing safechange, which imports material (a cycle of two features)
    planted = {
        "profiles.material.layers": "from profiles.safechange import change_sets\n",
        "profiles.safechange.change_sets": "from profiles.material.layers import layer_create\n",
    }

    found = import_violations(floor_rule, planted)

    assert found == [
        "profiles.material.layers:1 imports profiles.safechange.change_sets: material stands "
        "below safechange (floors below it: activity, notifications, team, versioning)"
    ]


def test_floor_rule__planted_guard_calling_its_workflows__is_reported():
    planted = {"profiles.versioning.protection": "from profiles.safechange import impact\n"}

    assert import_violations(floor_rule, planted) == [
        "profiles.versioning.protection:1 imports profiles.safechange.impact: versioning stands "
        "below safechange (floors below it: activity, notifications, team)"
    ]


def test_floor_rule__planted_project_and_door_imports__are_reported():
    planted = {
        "profiles.authoring.rules": "import ctxstudio.urls\n",
        "profiles.workspace.cache": "from profiles.material import items\n",
        "profiles.resolution.services": "from profiles.api.resolution import ResolveView\n",
        "profiles.management.commands.resolve": "from profiles.api import resolution\n",
        "ctxstudio.urls": "from profiles.studio.views.editor import editor\n",
    }

    assert import_violations(floor_rule, planted) == [
        "profiles.authoring.rules:1 imports ctxstudio.urls: "
        "the project includes the app, not the other way round",
        "profiles.workspace.cache:1 imports profiles.material.items: "
        "the shared hall serves every feature and knows none",
        "profiles.resolution.services:1 imports profiles.api.resolution: "
        "a feature is reached through doors, it does not reach them",
        "profiles.management.commands.resolve:1 imports profiles.api.resolution: "
        "a command calls the services, as the doors do, not a door",
    ]


def test_orm_rule__planted_related_manager_read_in_a_view__is_reported():
    planted = (
        "def editor(request, profile):\n"
        "    rules = profile.rules.filter(layer__key='faq')\n"
        "    staff = request.user.groups.exists()\n"
        "    count = Layer.objects.count()\n"
        "    items = values.items.get(layer.id, [])\n"  # a dict, not a manager
        "    return rules, staff, count, items\n"
    )

    assert orm_queries("profiles.studio.views.editor", planted) == [
        "profiles.studio.views.editor:2 .rules.filter() (a related manager)",
        "profiles.studio.views.editor:3 .groups.exists() (a related manager)",
        "profiles.studio.views.editor:4 .objects",
    ]

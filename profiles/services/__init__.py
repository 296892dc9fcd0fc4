"""Writes and orchestration over the workspace: one service per write, called by every door.

The studio, the API, the admin, the import and the management commands all call these, so
they cannot drift apart. Every argument is keyword-only; every write takes ``user`` (for the
history) and, where it changes a stored object, ``if_match`` (the ETag the caller read).

Each single-entry write locks the writers' lock first, validates only the entry it changes,
writes only the rows that change (with history) and bumps the content tokens explicitly:
its cost does not grow with the workspace.
"""

from profiles.concurrency import PreconditionFailed, WriteConflict
from profiles.services.consumers import consumer_create, consumer_delete, consumer_update
from profiles.services.demo import DemoLoad, demo_load, demo_reset, workspace_has_material
from profiles.services.items import item_create, item_delete, item_update
from profiles.services.layers import layer_create, layer_delete, layer_update
from profiles.services.profiles import (
    profile_create,
    profile_delete,
    profile_save_rules,
    profile_update,
    rule_delete,
    rule_update,
)
from profiles.services.resolution import (
    RefNotAvailable,
    profile_resolve,
    ref_expand,
    resolution_refs,
    workspace_resolve,
)
from profiles.services.scenarios import (
    ScenarioInvalid,
    ScenarioNameTaken,
    scenario_create,
    scenario_delete,
    scenario_save,
    scenario_update,
    scenarios_upsert,
)
from profiles.services.workspace import (
    IMPORT_MODES,
    ImportSummary,
    WorkspaceImportError,
    workspace_export,
    workspace_import,
    workspace_parse,
)
from profiles.services.writing import Conflict, EntryInvalid
from profiles.validation import WorkspaceValidationError

__all__ = [
    "IMPORT_MODES",
    "Conflict",
    "DemoLoad",
    "EntryInvalid",
    "ImportSummary",
    "PreconditionFailed",
    "RefNotAvailable",
    "ScenarioInvalid",
    "ScenarioNameTaken",
    "WorkspaceImportError",
    "WorkspaceValidationError",
    "WriteConflict",
    "consumer_create",
    "consumer_delete",
    "consumer_update",
    "demo_load",
    "demo_reset",
    "item_create",
    "item_delete",
    "item_update",
    "layer_create",
    "layer_delete",
    "layer_update",
    "profile_create",
    "profile_delete",
    "profile_resolve",
    "profile_save_rules",
    "profile_update",
    "ref_expand",
    "resolution_refs",
    "rule_delete",
    "rule_update",
    "scenario_create",
    "scenario_delete",
    "scenario_save",
    "scenario_update",
    "scenarios_upsert",
    "workspace_export",
    "workspace_has_material",
    "workspace_import",
    "workspace_parse",
    "workspace_resolve",
]

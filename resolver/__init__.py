"""Context Studio's resolver: a pure function of (workspace, request), as specified in docs/spec.md.

Public API (other packages depend on these exact names):

* ``compile_workspace(document) -> CompiledWorkspace`` validates a workspace document (SPEC §2)
  and builds per-layer indexes once; raises ``WorkspaceError`` on the first error.
* ``CompiledWorkspace.resolve(request) -> dict`` returns the resolution JSON (SPEC §7);
  raises ``RequestError`` (``INVALID_REQUEST`` / ``PROFILE_NOT_FOUND``).
* ``CompiledWorkspace.with_profile_draft(profile_key, rules=..., budget=...)`` returns a
  workspace whose profile carries unsaved edits, sharing the compiled layer indexes.
* ``resolve(document, request) -> dict`` compiles and resolves in one call.
* ``validate_workspace(document) -> list[ValidationIssue]`` reports every error in document order.

The package imports nothing from Django and performs no I/O; only ``resolver.cli`` reads files.
"""

from resolver.engine import CompiledWorkspace, compile_workspace, resolve
from resolver.errors import RequestError, ResolverError, ValidationIssue, WorkspaceError
from resolver.validation import validate_workspace

__all__ = [
    "CompiledWorkspace",
    "RequestError",
    "ResolverError",
    "ValidationIssue",
    "WorkspaceError",
    "compile_workspace",
    "resolve",
    "validate_workspace",
]

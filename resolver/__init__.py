"""Context Studio's resolver: a pure function of (workspace, request).

Its contract is ``SPEC.md``, kept with the team's steering documents (not in this
repository); ``docs/resolution.md`` explains it in plain words.

Public API (other packages depend on these exact names):

* ``compile_workspace(document) -> CompiledWorkspace`` validates a workspace document (SPEC §2)
  and builds per-layer indexes once; raises ``WorkspaceError`` on the first error.
* ``CompiledWorkspace.resolve(request) -> dict`` returns the resolution JSON (SPEC §7);
  raises ``RequestError`` (``INVALID_REQUEST`` / ``PROFILE_NOT_FOUND``). The resolution is
  read-only: its records are shared with the compiled workspace and other resolutions.
* ``CompiledWorkspace.resolve_json(request) -> EncodedResolution``: the same resolution as
  the bytes the API and the CLI write (``.data`` is ``json_text(resolve(request)).encode()``,
  built without a Python object per listed item) and its small top-level fields (``.head``).
* ``CompiledWorkspace.resolve_with_reference_counts(request) -> (dict, dict)``: the
  resolution and, by layer key, the layer's references counted by reason (not in SPEC §7).
* ``CompiledWorkspace.with_profile_draft(profile_key, rules=..., budget=...)`` returns a
  workspace whose profile carries unsaved edits, sharing the compiled layer indexes.
* Keeping a compiled workspace current: ``compile_workspace(document, previous=compiled,
  tokens={layer_key: token})`` and ``CompiledWorkspace.with_layer_changes(layer_key,
  upsert=[...], delete=[...], token=...)`` (see ``resolver.compiled``).
* ``resolve(document, request) -> dict`` compiles and resolves in one call.
* ``validate_workspace(document) -> list[ValidationIssue]`` reports every error in document order.
* ``validate_consumer(entry, path=...)``, ``validate_layer(entry, path=..., items=False)``,
  ``validate_item(entry, path=...)`` and ``validate_profile(entry, path=..., layer_keys=...,
  consumer_keys=...)`` report the errors of one entry, with the messages and paths
  ``validate_workspace`` gives for it (SPEC §2.2 limits included), at the cost of that entry;
  uniqueness across entries (keys, paths, profile selection) is left to the caller.
* ``merge_rule(saved, partial) -> dict | None`` applies a partial rule edit to a saved rule
  document (given fields replace, None fields go, a None partial means the default rule); the
  draft preview and the saving of rules share it.

The package imports nothing from Django and performs no I/O; only ``resolver.cli`` reads files.
Edge modules are imported explicitly, never by ``import resolver``: ``resolver.documents``
(``load_document``, ``load_json``: YAML/JSON text within the SPEC §2.2 document limits; needs
PyYAML, and re-exports ``dump_yaml``), ``resolver.yaml_writer`` (``dump_yaml``: YAML byte for
byte as PyYAML writes it), ``resolver.yaml_plain`` (what those two share),
``resolver.locations`` (``locate_issues``: the entry and the line and column of each issue in
the text) and ``resolver.cli``. The limits themselves are in
``resolver.limits``.

Where things are: ``resolver.compiled`` (the compiled workspace) runs the SPEC §4 stages of
``resolver.engine`` over per-layer indexes (``resolver.index``, composing the BM25 postings of
``resolver.postings`` and the shared records of ``resolver.records``; ``resolver.patching``
derives the index of an edited layer); ``resolver.report`` writes the SPEC §7 JSON;
``resolver.sweep`` tells what one request admits at every budget, from one pass (the studio's
budget sweep); ``resolver.validation`` checks documents (SPEC §2).
"""

from resolver.compiled import CompiledWorkspace, compile_workspace, resolve
from resolver.errors import RequestError, ResolverError, ValidationIssue, WorkspaceError
from resolver.report import EncodedResolution
from resolver.validation import (
    merge_rule,
    validate_consumer,
    validate_item,
    validate_layer,
    validate_profile,
    validate_workspace,
)

__all__ = [
    "CompiledWorkspace",
    "EncodedResolution",
    "RequestError",
    "ResolverError",
    "ValidationIssue",
    "WorkspaceError",
    "compile_workspace",
    "merge_rule",
    "resolve",
    "validate_consumer",
    "validate_item",
    "validate_layer",
    "validate_profile",
    "validate_workspace",
]

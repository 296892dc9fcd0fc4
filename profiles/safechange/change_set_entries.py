"""Change-set entries: the shape of each entry of a set, checked before anything is read.

An entry is ``{"kind", "op", "key" (an item: "layer" and "path"), "value"}`` (see
``profiles.safechange.change_sets``); ``change_set_entries`` checks a set's list and its bounds and
``applied_order`` sorts the entries in the order they apply. No query is made here.
"""

import json
from collections.abc import Iterable
from dataclasses import dataclass

from profiles.versioning.environments import SafeChangeError
from profiles.workspace.entity_changes import KINDS, OPS
from profiles.workspace.validation import issues_body
from resolver import ValidationIssue
from resolver.validation import TEXT_RULE_MESSAGE, violates_text_rule

# One set holds at most this many entries (an import's proposal of a larger file is refused).
MAX_SET_CHANGES = 1_000
# ... and at most this many bytes of JSON (UTF-8): what a reviewer reads and every read of
# the request carries (an 8.7 MB set made each read 8.7 MB).
MAX_SET_BYTES = 2_000_000
ENTRY_FIELDS = ("kind", "op", "key", "layer", "path", "value")
SECTIONS = {"consumer": "consumers", "layer": "layers", "profile": "profiles"}
# The order entries are applied in: what others depend on first, what they stop using last.
APPLY_ORDER = {
    ("consumer", "create"): 0,
    ("consumer", "update"): 0,
    ("layer", "create"): 1,
    ("layer", "update"): 1,
    ("item", "create"): 2,
    ("item", "update"): 2,
    ("item", "delete"): 2,
    ("profile", "create"): 3,
    ("profile", "update"): 3,
    ("profile", "delete"): 4,
    ("layer", "delete"): 5,
    ("consumer", "delete"): 6,
}


class ChangeSetInvalid(SafeChangeError):
    """The set would not make a valid workspace; every issue names ``changes[i]…``."""

    code = "INVALID_WORKSPACE"

    def __init__(self, issues: list[ValidationIssue]):
        self.issues = issues
        first = issues[0]
        super().__init__(str(first), path=first.path, **issues_body(issues))


# --- entries -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SetEntry:
    """One validated entry of a set (``key``: an item's layer key, with ``path``)."""

    index: int
    kind: str
    op: str
    key: str
    path: str | None
    value: dict | None

    @property
    def ref(self) -> str:
        return (
            f"{self.kind}:{self.key}/{self.path}"
            if self.kind == "item"
            else f"{self.kind}:{self.key}"
        )

    def as_dict(self) -> dict:
        """Return the entry in its wire shape."""
        where = {"layer": self.key, "path": self.path} if self.kind == "item" else {"key": self.key}
        entry = {"kind": self.kind, "op": self.op, **where}
        if self.value is not None:
            entry["value"] = self.value
        return entry


def entry_at(index: int, path: str = "") -> str:
    return f"changes[{index}]" + (f".{path}" if path and not path.startswith("[") else path)


def _name(value, index: int, field: str, issues: list) -> str | None:
    if isinstance(value, str) and value:
        if violates_text_rule(value):
            issues.append(ValidationIssue(entry_at(index, field), TEXT_RULE_MESSAGE))
            return None
        return value
    issues.append(ValidationIssue(entry_at(index, field), "is required (a string)"))
    return None


def _entry(index: int, raw, issues: list) -> SetEntry | None:
    """Return the entry's shape checked, or None with ``issues`` saying why."""
    if not isinstance(raw, dict):
        issues.append(ValidationIssue(entry_at(index), "must be an object {kind, op, key, value}"))
        return None
    before = len(issues)
    for name in raw:
        if name not in ENTRY_FIELDS:
            issues.append(
                ValidationIssue(
                    entry_at(index, str(name)),
                    "unknown field (use kind, op, key, value; layer and path for an item)",
                )
            )
    kind, op, value = raw.get("kind"), raw.get("op"), raw.get("value")
    if kind not in KINDS:
        issues.append(
            ValidationIssue(entry_at(index, "kind"), "must be one of " + ", ".join(KINDS))
        )
    if op not in OPS:
        issues.append(ValidationIssue(entry_at(index, "op"), "must be one of " + ", ".join(OPS)))
    if len(issues) > before:
        return None
    if op == "delete":
        if value is not None:
            issues.append(ValidationIssue(entry_at(index, "value"), "a delete takes no value"))
    elif not isinstance(value, dict):
        issues.append(
            ValidationIssue(entry_at(index, "value"), "must be an object (the entry's fields)")
        )
    elif op == "update" and not value:
        issues.append(ValidationIssue(entry_at(index, "value"), "must change at least one field"))
    if kind == "item":
        if "key" in raw:
            issues.append(
                ValidationIssue(entry_at(index, "key"), "an item is named by layer and path")
            )
        key = _name(raw.get("layer"), index, "layer", issues)
        given = raw.get("path")
        if op == "create" and isinstance(value, dict):
            if given is not None and given != value.get("path"):
                issues.append(ValidationIssue(entry_at(index, "path"), "must equal value.path"))
            given = value.get("path")
            field = "value.path"
        else:
            field = "path"
        path = _name(given, index, field, issues)
    else:
        for name in ("layer", "path"):
            if name in raw:
                issues.append(ValidationIssue(entry_at(index, name), f"only an item has a {name}"))
        given = raw.get("key")
        field = "key"
        if op == "create" and isinstance(value, dict):
            if given is not None and given != value.get("key"):
                issues.append(ValidationIssue(entry_at(index, "key"), "must equal value.key"))
            given, field = value.get("key"), "value.key"
        key, path = _name(given, index, field, issues), None
    if op == "update" and isinstance(value, dict):
        own = "path" if kind == "item" else "key"
        if own in value and value[own] != (path if kind == "item" else key):
            issues.append(
                ValidationIssue(
                    entry_at(index, f"value.{own}"),
                    f"a change set does not rename: delete and create, or leave {own} out",
                )
            )
        if kind == "layer" and "items" in value:
            issues.append(
                ValidationIssue(entry_at(index, "value.items"), "change items with item entries")
            )
    if kind == "layer" and isinstance(value, dict) and "governed" in value:
        issues.append(
            ValidationIssue(
                entry_at(index, "value.governed"),
                "a change set does not change whether a layer is governed (staff do, directly)",
            )
        )
    if kind == "profile" and op == "update" and isinstance(value, dict):
        rules = value.get("rules")
        if rules is not None and not isinstance(rules, dict):
            issues.append(
                ValidationIssue(entry_at(index, "value.rules"), "must be an object keyed by layer")
            )
        elif isinstance(rules, dict):
            for layer_key, partial in rules.items():
                if partial is not None and not isinstance(partial, dict):
                    issues.append(
                        ValidationIssue(
                            entry_at(index, f"value.rules.{layer_key}"), "must be an object"
                        )
                    )
    if len(issues) > before or key is None or (kind == "item" and path is None):
        return None
    return SetEntry(index, kind, op, key, path, value if op != "delete" else None)


def change_set_bytes(changes) -> int:
    """Return the size of ``changes`` as compact JSON in UTF-8 (what a set's bound counts)."""
    try:
        text = json.dumps(changes, ensure_ascii=False, separators=(",", ":"), default=str)
    except ValueError:  # a circular structure: not JSON a client could have sent
        return MAX_SET_BYTES + 1
    return len(text.encode("utf-8", "surrogatepass"))


def change_set_entries(changes) -> list[SetEntry]:
    """Return the entries of a set's ``changes`` with their shape checked; raise
    ChangeSetInvalid naming ``changes[i].<field>``. Two entries of one entity are refused, and
    a set of more than ``MAX_SET_CHANGES`` entries or ``MAX_SET_BYTES`` bytes (at
    ``changes``)."""
    if not isinstance(changes, list):
        raise ChangeSetInvalid([ValidationIssue("changes", "must be a list of changes")])
    if not changes:
        raise ChangeSetInvalid([ValidationIssue("changes", "must hold at least one change")])
    if len(changes) > MAX_SET_CHANGES:
        raise ChangeSetInvalid(
            [
                ValidationIssue(
                    "changes",
                    f"a change set holds at most {MAX_SET_CHANGES:,} changes "
                    f"(got {len(changes):,})",
                )
            ]
        )
    size = change_set_bytes(changes)
    if size > MAX_SET_BYTES:
        raise ChangeSetInvalid(
            [
                ValidationIssue(
                    "changes",
                    f"a change set holds at most {MAX_SET_BYTES:,} bytes of JSON (got "
                    f"{size:,}): propose it in smaller sets",
                )
            ]
        )
    issues: list[ValidationIssue] = []
    entries: list[SetEntry] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(changes):
        entry = _entry(index, raw, issues)
        if entry is None:
            continue
        if entry.ref in seen:
            issues.append(
                ValidationIssue(
                    entry_at(index),
                    f"changes {entry.ref} again (changes[{seen[entry.ref]}] does): one entry "
                    "per entity",
                )
            )
            continue
        seen[entry.ref] = index
        entries.append(entry)
    if issues:
        raise ChangeSetInvalid(issues)
    return entries


def applied_order(entries: Iterable[SetEntry]) -> list[SetEntry]:
    """Return the entries in the order they apply (stable within a step)."""
    return sorted(entries, key=lambda entry: APPLY_ORDER[(entry.kind, entry.op)])

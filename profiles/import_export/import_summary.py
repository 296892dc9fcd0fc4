"""What an import changed: exact counts per kind of row and action, and the first names of
each (``ImportSummary``), as the import's synchronization fills it in and every door shows it.
"""

from dataclasses import dataclass, field
from itertools import islice

from profiles.workspace.mappers import canonical_string

# A summary names at most this many rows per kind and action; the counts stay exact.
NAMES_LISTED = 50
NAMED_ACTIONS = ("created", "updated", "deleted")


@dataclass
class ImportSummary:
    """What an import changed, per kind of row: created, updated, deleted, unchanged.

    ``counts`` are exact. ``names`` lists what was created, updated and deleted: consumers,
    layers and profiles by key, items as ``layer/path``, rules as ``profile/layer``, in the
    file's order (deletions in the stored order), at most ``NAMES_LISTED`` per kind and
    action, so a 50,000-item import keeps a small summary; the count minus the names listed
    is how many more there are.
    """

    mode: str
    counts: dict[str, dict[str, int]] = field(
        default_factory=lambda: {
            kind: {"created": 0, "updated": 0, "deleted": 0, "unchanged": 0}
            for kind in ("consumers", "layers", "items", "profiles", "rules")
        }
    )
    names: dict[str, dict[str, list[str]]] = field(
        default_factory=lambda: {
            kind: {action: [] for action in NAMED_ACTIONS}
            for kind in ("consumers", "layers", "items", "profiles", "rules")
        }
    )

    @property
    def changed(self) -> bool:
        return any(
            counts["created"] or counts["updated"] or counts["deleted"]
            for counts in self.counts.values()
        )

    def add(self, kind: str, action: str, number: int = 1, names=()) -> None:
        """Count ``number`` rows; ``names`` (keys, or (layer, path) / (profile, layer)
        pairs, an iterable read only as far as the list has room) names them."""
        self.counts[kind][action] += number
        if names:
            self.name(kind, action, names)

    def name(self, kind: str, action: str, names) -> None:
        """List the first of ``names`` (counted elsewhere) while the list has room."""
        listed = self.names[kind].get(action)
        if listed is None or len(listed) >= NAMES_LISTED:
            return
        for name in islice(names, NAMES_LISTED - len(listed)):
            listed.append(name if isinstance(name, str) else "/".join(name))

    def name_deletions(self, rows, target: dict) -> None:
        """Name the stored rows (``WorkspaceValues``) the target document does not keep (and
        the items and rules their deletion takes along); the synchronization counts them as it
        deletes."""
        layer_keys = {layer.id: layer.key for layer in rows.layers}
        consumer_keys = {canonical_string(entry["key"]) for entry in target.get("consumers") or []}
        item_paths = {
            canonical_string(entry["key"]): {
                canonical_string(item["path"]) for item in entry.get("items") or []
            }
            for entry in target.get("layers") or []
        }
        rule_layers = {
            canonical_string(entry["key"]): {
                canonical_string(layer_key) for layer_key in entry.get("rules") or {}
            }
            for entry in target.get("profiles") or []
        }
        self.name(
            "consumers",
            "deleted",
            (row.key for row in rows.consumers if row.key not in consumer_keys),
        )
        self.name(
            "layers", "deleted", (row.key for row in rows.layers if row.key not in item_paths)
        )
        self.name(
            "items",
            "deleted",
            (
                (layer.key, item.path)
                for layer in rows.layers
                for item in rows.items.get(layer.id, ())
                if item.path not in item_paths.get(layer.key, ())
            ),
        )
        self.name(
            "profiles", "deleted", (row.key for row in rows.profiles if row.key not in rule_layers)
        )
        self.name(
            "rules",
            "deleted",
            (
                (profile.key, layer_keys[rule.layer_id])
                for profile in rows.profiles
                for rule in rows.rules.get(profile.id, ())
                if layer_keys[rule.layer_id] not in rule_layers.get(profile.key, ())
            ),
        )

    def as_dict(self) -> dict:
        return {"mode": self.mode, "changed": self.changed, **self.counts, "names": self.names}

    def lines(self) -> list[str]:
        """Return the summary in words, a line per kind: counts, then what they name."""
        lines = []
        for kind, counts in self.counts.items():
            figures = []
            for action, number in counts.items():
                if not number:
                    continue
                listed = self.names[kind].get(action)
                if listed:
                    more = number - len(listed)
                    named = ", ".join(listed) + (f" and {more} more" if more else "")
                    figures.append(f"{number} {action} ({named})")
                else:
                    figures.append(f"{number} {action}")
            lines.append(f"{kind}: {', '.join(figures) or 'none'}")
        return lines

    def __str__(self) -> str:
        return "; ".join(self.lines())

""" "Propose change" where a material write needs a change request.

A layer, consumer or item form whose save is refused (``ChangeRequestRequired``: the write can
change a protected profile's answer) shows the protected profiles it affects and offers to
propose the same write as a change set instead. A new layer is offered with a choice per
protected profile that would read it: exclude it there (an ``exclude`` rule in the same set, so
that profile's answer stays as it is) or include it.
"""

from collections.abc import Callable
from dataclasses import dataclass

from profiles.models import ChangeRequest
from profiles.safechange.change_sets import change_set_create
from profiles.safechange.impact import impact_throttle_check
from profiles.safechange.reviews import change_request_open, reviewer_candidates_list
from profiles.versioning.protection import protected_profiles_affected
from profiles.workspace.entity_changes import EntityChange, canonical_entry

TITLE_FIELD = "proposal_title"
DESCRIPTION_FIELD = "proposal_description"
PROPOSE_FIELD = "propose"
REVIEWERS_FIELD = "proposal_reviewers"


def proposal_context(request, *, title: str, **extra) -> dict:
    """Return what a page's "Propose change" form shows: the default title, the names of
    its fields and the users who may be asked to review (never the author)."""
    return {
        "title": title,
        "fields": (TITLE_FIELD, DESCRIPTION_FIELD, PROPOSE_FIELD),
        "reviewers_field": REVIEWERS_FIELD,
        "reviewer_choices": [
            user.get_username() for user in reviewer_candidates_list(exclude=request.user)
        ],
        **extra,
    }


def proposal_open(request, *, title: str, changes: list[dict]) -> ChangeRequest:
    """Open the change set ``changes`` from a posted "Propose change" form: its title (or
    ``title``), description and requested reviewers (emailed once it is stored); raise what
    ``change_set_create`` and the reviewers' check raise, opening nothing (``ImpactThrottled``
    too: opening computes the set's impact, counted in the ``impact`` scope)."""
    impact_throttle_check(request.user)
    return change_request_open(
        opener=change_set_create,
        reviewers=request.POST.getlist(REVIEWERS_FIELD),
        title=request.POST.get(TITLE_FIELD) or title,
        description=request.POST.get(DESCRIPTION_FIELD, ""),
        changes=changes,
        user=request.user,
    )


def read_choice_field(profile_key: str) -> str:
    """Return the form field naming what a protected profile does with a new layer."""
    return f"proposal_read_{profile_key}"


@dataclass(frozen=True)
class Proposal:
    """How a form's write becomes a change set: ``changes(form)`` returns its entries
    (``{kind, op, key | layer+path, value}``); ``title(form)`` the default title;
    ``new_layer(form)`` the new layer's key when the write creates one (then each protected
    profile that would read it can exclude it)."""

    changes: Callable
    title: Callable
    new_layer: Callable | None = None

    def readers(self, form) -> list[str]:
        """Return the protected profiles that would read the new layer (none when the write
        creates no layer)."""
        if self.new_layer is None:
            return []
        document = form.document()
        entry = canonical_entry("layer", document)
        return protected_profiles_affected([EntityChange("layer", entry["key"], None, entry)])

    def open(self, request, form) -> ChangeRequest:
        """Open the change set from the posted form (its data, title, description, reviewers
        and the include/exclude choices); raise what ``proposal_open`` raises."""
        changes = list(self.changes(form))
        if self.new_layer is not None:
            layer_key = self.new_layer(form)
            for profile_key in self.readers(form):
                if request.POST.get(read_choice_field(profile_key), "exclude") == "exclude":
                    changes.append(
                        {
                            "kind": "profile",
                            "op": "update",
                            "key": profile_key,
                            "value": {"rules": {layer_key: {"participation": "exclude"}}},
                        }
                    )
        return proposal_open(request, title=self.title(form), changes=changes)


def layer_create_proposal() -> Proposal:
    return Proposal(
        changes=lambda form: [
            {
                "kind": "layer",
                "op": "create",
                "key": form.document()["key"],
                "value": form.document(),
            }
        ],
        title=lambda form: f"Create layer {form.document()['key']}",
        new_layer=lambda form: form.document()["key"],
    )


LAYER_FIELDS = ("name", "description", "availability", "appliesTo", "requiresInput", "itemFilter")


def layer_update_proposal(key: str) -> Proposal:
    def changes(form):
        document = form.document()
        return [
            {
                "kind": "layer",
                "op": "update",
                "key": key,
                "value": {name: document.get(name) for name in LAYER_FIELDS},
            }
        ]

    return Proposal(changes=changes, title=lambda form: f"Change layer {key}")


def consumer_update_proposal(key: str) -> Proposal:
    def changes(form):
        document = form.document()
        return [
            {
                "kind": "consumer",
                "op": "update",
                "key": key,
                "value": {name: document.get(name) for name in ("name", "render")},
            }
        ]

    return Proposal(changes=changes, title=lambda form: f"Change consumer {key}")


def item_create_proposal(layer: str) -> Proposal:
    return Proposal(
        changes=lambda form: [
            {
                "kind": "item",
                "op": "create",
                "layer": layer,
                "path": form.document()["path"],
                "value": form.document(),
            }
        ],
        title=lambda form: f"Add {layer}/{form.document()['path']}",
    )


def item_update_proposal(layer: str, path: str) -> Proposal:
    def changes(form):
        document = form.document()
        return [
            {
                "kind": "item",
                "op": "update",
                "layer": layer,
                "path": path,
                "value": {name: document.get(name) for name in ("title", "body", "metadata")},
            }
        ]

    return Proposal(changes=changes, title=lambda form: f"Change {layer}/{path}")


def delete_change(kind: str, key: str, path: str | None = None) -> dict:
    """Return the change-set entry deleting one entity."""
    if kind == "item":
        return {"kind": "item", "op": "delete", "layer": key, "path": path}
    return {"kind": kind, "op": "delete", "key": key}

"""The demo workspace: loaded into an empty workspace only, replaced only on purpose.

``make run`` loads the demo on every start. A workspace that already has material is left
exactly as it is (edits, versions, applied change requests), so starting twice changes
nothing. ``demo_reset`` is the explicit way back to the demo: an operator's action that
replaces everything in one transaction, including profiles of protected environments; each
profile version it writes says so (source ``reset``, message and protection bypass naming
the command), and the bypass is logged (docs/decisions.md, "Resetting the demo").

The demo starts protected: loading or resetting it leaves its production environment
requiring a change request with one approval (through the environments service, recorded as
any protection change is), so a newcomer's first change of production, a new layer included,
meets the change request flow (docs/decisions.md, "The demo starts protected").
"""

from dataclasses import dataclass

from profiles.authoring.scenarios import scenarios_upsert
from profiles.import_export.import_summary import ImportSummary
from profiles.import_export.imports import workspace_import
from profiles.material.layers import layer_update
from profiles.models import Consumer, Layer, Profile, ProfileVersion, Scenario
from profiles.versioning.environments import environment_get, environment_update
from profiles.versioning.versions import WriteOrigin
from profiles.workspace.concurrency import workspace_write
from profiles.workspace.writing import delete_row


@dataclass(frozen=True)
class DemoLoad:
    """What loading (or resetting) the demo wrote."""

    summary: ImportSummary
    scenarios: dict[str, int]


# The demo's policies are what a compliance reviewer reads before production does: governed
# (their item edits need a change request while a protected profile reads them).
DEMO_GOVERNED_LAYERS = ("policies",)


def _govern_demo_layers(origin: WriteOrigin | None) -> None:
    for key in DEMO_GOVERNED_LAYERS:
        if Layer.objects.filter(key=key).exists():
            layer_update(key=key, changes={}, governed=True, user=None, origin=origin)


# The demo's production environment (its profiles say ``environment: production``) and the
# approvals a change there needs: protected from the start.
DEMO_PRODUCTION_ENVIRONMENT = "production"
DEMO_PRODUCTION_APPROVALS = 1


def _protect_demo_production(origin: WriteOrigin | None) -> None:
    """Protect the demo's production environment, unless it already is as the demo wants
    (then nothing is written, not even the settings' "updated by")."""
    current = environment_get(key=DEMO_PRODUCTION_ENVIRONMENT)
    if (
        current is not None
        and current.requires_change_request
        and current.approvals == DEMO_PRODUCTION_APPROVALS
    ):
        return
    environment_update(
        key=DEMO_PRODUCTION_ENVIRONMENT,
        requires_change_request=True,
        approvals=DEMO_PRODUCTION_APPROVALS,
        user=None,
        origin=origin,
    )


def workspace_has_material() -> bool:
    """Return whether the workspace holds any consumer, layer or profile."""
    return any(model.objects.exists() for model in (Consumer, Layer, Profile))


def demo_load(*, workspace_text: str, scenarios: list) -> DemoLoad | None:
    """Load the demo workspace and its scenarios into an empty workspace, all-or-nothing.

    Its production environment is protected (one approval) once it is loaded. Return None,
    writing nothing, when the workspace already has material (protection included: an
    operator who lifted it keeps it lifted). Raises what
    ``workspace_import`` and ``scenarios_upsert`` raise.
    """
    with workspace_write():
        if workspace_has_material():
            return None
        summary = workspace_import(text=workspace_text, mode="merge")
        _govern_demo_layers(None)
        _protect_demo_production(None)
        return DemoLoad(summary=summary, scenarios=scenarios_upsert(scenarios=scenarios))


def demo_reset(*, workspace_text: str, scenarios: list, operator_action: str) -> DemoLoad:
    """Replace the whole workspace and every saved scenario by the demo, in one transaction.

    An operator's explicit action (``operator_action`` names it, e.g. ``load_demo --reset``):
    profiles of protected environments are replaced too, without change requests; their
    versions record the action as source, message and protection bypass. Versions, change
    requests and environment settings are kept: history is never rewritten; the demo's
    production is protected again (one approval) if it no longer was.
    """
    origin = WriteOrigin(
        source=ProfileVersion.Source.RESET, message=operator_action, operator_action=operator_action
    )
    with workspace_write():
        for scenario in Scenario.objects.order_by("pk"):
            delete_row(scenario, user=None)
        summary = workspace_import(text=workspace_text, mode="replace", origin=origin)
        _govern_demo_layers(origin)
        _protect_demo_production(origin)
        return DemoLoad(summary=summary, scenarios=scenarios_upsert(scenarios=scenarios))

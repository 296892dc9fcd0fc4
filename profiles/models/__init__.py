"""The workspace of SPEC §2 stored in tables, one module per feature; every model is importable
from ``profiles.models``.

The models mirror the workspace document field by field; optional rule fields stay NULL when
the document did not give them, so an export gives back exactly what was imported. The engine
validator (``resolver.validate_workspace``, reached through ``profiles.workspace.validation``)
is the source of truth for what is valid; the constraints are a safety net for writes that
bypass it. Models do not know the engine.
"""

from profiles.models.activity import Activity, ActivityOrigin
from profiles.models.authoring import Profile, Rule, Scenario
from profiles.models.base import (
    FIELD_PATTERN,
    HISTORY_EXCLUDED,
    KEY_PATTERN,
    Availability,
    CurrentnessAction,
    Mode,
    Order,
    Participation,
    Positioned,
    RenderFormat,
    Tracked,
    key_validator,
    new_token,
)
from profiles.models.import_export import ImportJob, PreviewedUpload
from profiles.models.keys import ApiKey, KeyScope
from profiles.models.material import Consumer, Item, ItemChange, ItemKey, ItemTerms, Layer
from profiles.models.notifications import WEBHOOK_EVENTS, Webhook, WebhookDelivery
from profiles.models.resolution import DecisionLog
from profiles.models.safechange import (
    ENVIRONMENT_MAX_APPROVALS,
    ChangeRequest,
    ChangeRequestApproval,
    ChangeRequestComment,
    ChangeRequestStatus,
    Environment,
    ProfileVersion,
)
from profiles.models.team import (
    INVITATION_EMAIL_MAX_LENGTH,
    Invitation,
    SsoIdentity,
    invitation_token_hash,
)
from profiles.models.workers import TaskWorker
from profiles.models.workspace import WorkspaceVersion

__all__ = [
    "ENVIRONMENT_MAX_APPROVALS",
    "FIELD_PATTERN",
    "HISTORY_EXCLUDED",
    "INVITATION_EMAIL_MAX_LENGTH",
    "KEY_PATTERN",
    "WEBHOOK_EVENTS",
    "Activity",
    "ActivityOrigin",
    "ApiKey",
    "Availability",
    "ChangeRequest",
    "ChangeRequestApproval",
    "ChangeRequestComment",
    "ChangeRequestStatus",
    "Consumer",
    "CurrentnessAction",
    "DecisionLog",
    "Environment",
    "ImportJob",
    "Invitation",
    "Item",
    "ItemChange",
    "ItemKey",
    "ItemTerms",
    "KeyScope",
    "Layer",
    "Mode",
    "Order",
    "Participation",
    "Positioned",
    "PreviewedUpload",
    "Profile",
    "ProfileVersion",
    "RenderFormat",
    "Rule",
    "Scenario",
    "SsoIdentity",
    "TaskWorker",
    "Tracked",
    "Webhook",
    "WebhookDelivery",
    "WorkspaceVersion",
    "invitation_token_hash",
    "key_validator",
    "new_token",
]

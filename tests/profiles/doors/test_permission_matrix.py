"""The permission matrix: every URL pattern × every role × the methods that matter → a status.

The patterns come from the URL resolver itself (studio, API, accounts, admin), so a new URL
without an entry here fails ``test_permission_matrix__every_url_pattern__has_an_expectation``:
whoever adds a door decides who may open it. The policy is ``profiles.workspace.permissions``:

| role         | capabilities                                     |
|--------------|--------------------------------------------------|
| anonymous    | none (studio → login page, API → 401)            |
| reader       | RESOLVE, READ_CONFIG                              |
| token reader | the same reader with an API token and no session |
| editor       | the editors group: all but ADMINISTER, MANAGE_WEBHOOKS |
| staff        | is_staff: all                                     |

Each request runs in a savepoint that is rolled back, so a DELETE by the editor leaves the
object for the staff member's turn.
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import pytest
from axes.models import AccessFailureLog
from django.contrib.auth.models import Group, User
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.utils import timezone
from django.utils.regex_helper import normalize
from django_tasks_db.models import DBTaskResult, get_date_max

from profiles.models import (
    Activity,
    ApiKey,
    ChangeRequest,
    Consumer,
    DecisionLog,
    Environment,
    ImportJob,
    Invitation,
    Item,
    Layer,
    Profile,
    ProfileVersion,
    Rule,
    Scenario,
    Webhook,
    WebhookDelivery,
    WorkspaceVersion,
)
from profiles.workspace.permissions import EDITORS_GROUP
from tests.profiles.doors.roles import CONSUMER, ENVIRONMENT, ITEM, LAYER, PROFILE, ROLES, SCENARIO

LOGIN = "login"  # 302 to the studio's login page
ADMIN_LOGIN = "admin login"  # 302 to the admin's login page
LOGIN_PREFIX = {LOGIN: "/accounts/login/", ADMIN_LOGIN: "/admin/login/"}


# --- the URL conf -------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    """One URL pattern with the patterns above it: its route text, name and regex."""

    route: str
    name: str | None
    regex: str

    def __str__(self) -> str:
        return self.route


def walk(resolver: URLResolver, route: str = "", regex: str = "", namespace: str = ""):
    for pattern in resolver.url_patterns:
        piece = str(pattern.pattern)
        joined = route + (piece.removeprefix("^") if route else piece)
        joined_regex = regex + pattern.pattern.regex.pattern.removeprefix("^")
        if isinstance(pattern, URLResolver):
            inner = namespace + (f"{pattern.namespace}:" if pattern.namespace else "")
            yield from walk(pattern, joined, joined_regex, inner)
        elif isinstance(pattern, URLPattern):
            name = f"{namespace}{pattern.name}" if pattern.name else None
            yield Route(joined, name, joined_regex)


ROUTES = list(walk(get_resolver()))


# --- the expectations -----------------------------------------------------------------------


@dataclass(frozen=True)
class Door:
    """What each role gets, per method; a status tuple lists the roles in ``ROLES`` order.

    A method key may carry form fields: ``"POST action=save"`` posts ``action=save``.
    """

    methods: dict[str, tuple]
    api: bool = False  # bodies are JSON ({}), not form fields

    def cases(self) -> Iterator[tuple[str, dict, str, object]]:
        for key, statuses in self.methods.items():
            assert len(statuses) == len(ROLES), key
            method, *fields = key.split(" ")
            data = dict(field.split("=", 1) for field in fields)
            for role, status in zip(ROLES, statuses, strict=True):
                yield method, data, role, status


def everyone(status) -> tuple:
    return (status,) * len(ROLES)


# Studio pages. Anonymous and the token reader (a token opens no studio page) go to the login.
STUDIO_SIGNED_IN = Door({"GET": (LOGIN, 200, LOGIN, 200, 200)})  # RESOLVE / READ_CONFIG
STUDIO_WRITE_RULES = Door(  # an empty form: errors beside the fields (400)
    {"GET": (LOGIN, 403, LOGIN, 200, 200), "POST": (LOGIN, 403, LOGIN, 400, 400)}
)
STUDIO_POST_WRITE_RULES = Door(  # WRITE_RULES, POST only; an empty form: error, redirect
    {"GET": (LOGIN, 403, LOGIN, 405, 405), "POST": (LOGIN, 403, LOGIN, 302, 302)}
)
STUDIO_MATERIAL = Door(  # READ_MATERIAL, POST WRITE_MATERIAL (an empty item form saves)
    {"GET": (LOGIN, 403, LOGIN, 200, 200), "POST": (LOGIN, 403, LOGIN, 302, 302)}
)

# API. Anonymous: 401. The reader, with a session or a token, gets the same answers.
API_CONFIG = Door(  # READ_CONFIG; writes WRITE_RULES or WRITE_MATERIAL
    {"GET": (401, 200, 200, 200, 200), "POST": (401, 403, 403, 400, 400)}, api=True
)
API_KEYS = Door({"GET": (401, 403, 403, 200, 200), "POST": (401, 403, 403, 400, 400)}, api=True)
API_CONFIG_DETAIL = Door(  # PUT {}: every field back to its default
    {
        "GET": (401, 200, 200, 200, 200),
        "PUT": (401, 403, 403, 200, 200),
        "PATCH": (401, 403, 403, 200, 200),
        "DELETE": (401, 403, 403, 204, 204),
    },
    api=True,
)
API_REQUIRED_FIELDS_DETAIL = Door(  # PUT {}: the required fields are missing
    {**API_CONFIG_DETAIL.methods, "PUT": (401, 403, 403, 400, 400)}, api=True
)
API_RESOLUTION = Door(  # RESOLVE, POST only
    {"GET": (401, 405, 405, 405, 405), "POST": (401, 400, 400, 400, 400)}, api=True
)
API_ITEMS = Door(  # READ_MATERIAL; writes WRITE_MATERIAL
    {"GET": (401, 403, 403, 200, 200), "POST": (401, 403, 403, 400, 400)}, api=True
)
API_READ_ONLY = Door({"GET": (401, 200, 200, 200, 200)}, api=True)  # READ_CONFIG
# Webhooks: MANAGE_WEBHOOKS, staff only, at every door (the studio's and the API's).
STAFF_ONLY = (403, LOGIN, 403)  # reader, token reader, editor (studio)
API_STAFF_ONLY = (403, 403, 403)
API_CHANGE_REQUEST_ACTION = Door(  # WRITE_RULES
    {"GET": (401, 405, 405, 405, 405), "POST": (401, 403, 403, 200, 200)}, api=True
)

EXPECTATIONS: dict[str, Door] = {
    # -- studio
    "home": Door({"GET": (200, 302, 200, 302, 302)}),  # signed in: on to the profiles
    "profile-list": STUDIO_SIGNED_IN,
    "profile-create": STUDIO_WRITE_RULES,
    "profile-duplicate": STUDIO_WRITE_RULES,
    "profile-delete": Door(
        {"GET": (LOGIN, 403, LOGIN, 200, 200), "POST": (LOGIN, 403, LOGIN, 302, 302)}
    ),
    # The editor (RESOLVE): the page, its preview and what the preview loads on demand…
    "profile-editor": Door(
        {"GET": (LOGIN, 200, LOGIN, 200, 200), "POST": (LOGIN, 405, LOGIN, 405, 405)}
    ),
    "profile-preview": Door(
        {"GET": (LOGIN, 405, LOGIN, 405, 405), "POST": (LOGIN, 200, LOGIN, 200, 200)}
    ),
    "profile-preview-rows": Door(  # no layer named: 400
        {"GET": (LOGIN, 405, LOGIN, 405, 405), "POST": (LOGIN, 400, LOGIN, 400, 400)}
    ),
    "profile-preview-cut": Door(
        {"GET": (LOGIN, 405, LOGIN, 405, 405), "POST": (LOGIN, 200, LOGIN, 200, 200)}
    ),
    "profile-preview-handoff": Door(
        {"GET": (LOGIN, 405, LOGIN, 405, 405), "POST": (LOGIN, 200, LOGIN, 200, 200)}
    ),
    "profile-preview-sweep": Door(
        {"GET": (LOGIN, 405, LOGIN, 405, 405), "POST": (LOGIN, 200, LOGIN, 200, 200)}
    ),
    # …sample-input actions are part of previewing (RESOLVE)…
    "profile-discard": Door(
        {"GET": (LOGIN, 405, LOGIN, 405, 405), "POST": (LOGIN, 302, LOGIN, 302, 302)}
    ),
    "profile-scenario-load": Door(  # no scenario chosen: 400
        {"GET": (LOGIN, 405, LOGIN, 405, 405), "POST": (LOGIN, 400, LOGIN, 400, 400)}
    ),
    # …saving rules or a scenario is WRITE_RULES.
    "profile-save": Door(
        {"GET": (LOGIN, 403, LOGIN, 405, 405), "POST": (LOGIN, 403, LOGIN, 302, 302)}
    ),
    "profile-scenario-save": Door(  # no name given: 400
        {"GET": (LOGIN, 403, LOGIN, 405, 405), "POST": (LOGIN, 403, LOGIN, 400, 400)}
    ),
    "profile-compare": STUDIO_SIGNED_IN,
    "activity": STUDIO_SIGNED_IN,  # READ_CONFIG; item rows only with READ_MATERIAL
    "profile-playground": STUDIO_SIGNED_IN,  # RESOLVE: one input against every profile
    "profile-edit": Door(  # WRITE_RULES; an empty form: errors (400)
        {"GET": (LOGIN, 403, LOGIN, 200, 200), "POST": (LOGIN, 403, LOGIN, 400, 400)}
    ),
    # Consumers: READ_CONFIG to look, WRITE_MATERIAL to write.
    "consumer-list": STUDIO_SIGNED_IN,
    "consumer-create": Door(  # an empty form: errors (400)
        {"GET": (LOGIN, 403, LOGIN, 200, 200), "POST": (LOGIN, 403, LOGIN, 400, 400)}
    ),
    "consumer-edit": Door(  # every field is optional: an empty form saves (302)
        {"GET": (LOGIN, 200, LOGIN, 200, 200), "POST": (LOGIN, 403, LOGIN, 302, 302)}
    ),
    "consumer-delete": Door(  # ops-agent has no profile: deleted
        {"GET": (LOGIN, 403, LOGIN, 200, 200), "POST": (LOGIN, 403, LOGIN, 302, 302)}
    ),
    "layer-create": Door(
        {"GET": (LOGIN, 403, LOGIN, 200, 200), "POST": (LOGIN, 403, LOGIN, 400, 400)}
    ),
    "layer-delete": Door(  # tickets has rules in profiles: 409
        {"GET": (LOGIN, 403, LOGIN, 200, 200), "POST": (LOGIN, 403, LOGIN, 409, 409)}
    ),
    "item-create": Door(
        {"GET": (LOGIN, 403, LOGIN, 200, 200), "POST": (LOGIN, 403, LOGIN, 400, 400)}
    ),
    "item-delete": Door(
        {"GET": (LOGIN, 403, LOGIN, 200, 200), "POST": (LOGIN, 403, LOGIN, 302, 302)}
    ),
    # Everyone signed in manages their own API token.
    "token-list": STUDIO_SIGNED_IN,
    "token-create": Door(
        {"GET": (LOGIN, 405, LOGIN, 405, 405), "POST": (LOGIN, 200, LOGIN, 200, 200)}
    ),
    "token-revoke": Door(
        {"GET": (LOGIN, 405, LOGIN, 405, 405), "POST": (LOGIN, 302, LOGIN, 302, 302)}
    ),
    # Scoped keys: MANAGE_KEYS (editors their own, staff everyone's; the fixture's is the
    # editor's). An empty form: errors beside the fields (400).
    "key-create": Door(
        {"GET": (LOGIN, 405, LOGIN, 405, 405), "POST": (LOGIN, 403, LOGIN, 400, 400)}
    ),
    "key-revoke": Door(
        {"GET": (LOGIN, 405, LOGIN, 405, 405), "POST": (LOGIN, 403, LOGIN, 302, 302)}
    ),
    "layer-list": STUDIO_SIGNED_IN,
    "layer-edit": Door(  # READ_CONFIG (the layer's own fields); POST WRITE_MATERIAL
        {"GET": (LOGIN, 200, LOGIN, 200, 200), "POST": (LOGIN, 403, LOGIN, 400, 400)}
    ),
    "item-list": Door({"GET": (LOGIN, 403, LOGIN, 200, 200)}),
    "item-edit": STUDIO_MATERIAL,
    # A layer's bulk upload: WRITE_MATERIAL for the page and the upload, as the API's bulk
    # ingest; an empty form: the file is required (400).
    "item-bulk": Door(
        {"GET": (LOGIN, 403, LOGIN, 200, 200), "POST": (LOGIN, 403, LOGIN, 400, 400)}
    ),
    # Its job (the editor's): WRITE_MATERIAL, its owner or an administrator, as the API's.
    "item-bulk-job": Door({"GET": (LOGIN, 403, LOGIN, 200, 200)}),
    "workspace-download": Door({"GET": (LOGIN, 403, LOGIN, 200, 200)}),
    "workspace-upload": Door(  # IMPORT_EXPORT for the page and the upload
        {"GET": (LOGIN, 403, LOGIN, 200, 200), "POST": (LOGIN, 403, LOGIN, 200, 200)}
    ),
    # IMPORT_EXPORT; the job is the editor's: staff see it too (ADMINISTER), others get 404.
    "workspace-import-job": Door({"GET": (LOGIN, 403, LOGIN, 200, 200)}),
    # -- versioning and safe change (profiles.studio.views.{versioning,safechange}); the
    # fixture's change request is the staff's
    "profile-history": STUDIO_SIGNED_IN,
    "profile-version-restore": Door(  # WRITE_RULES; version 1 is current: "nothing to do"
        {"GET": (LOGIN, 403, LOGIN, 200, 200), "POST": (LOGIN, 403, LOGIN, 302, 302)}
    ),
    "profile-save-impact": Door(  # RESOLVE: the summary Save shows first (an empty draft: 200)
        {"GET": (LOGIN, 405, LOGIN, 405, 405), "POST": (LOGIN, 200, LOGIN, 200, 200)}
    ),
    "profile-propose": STUDIO_POST_WRITE_RULES,
    "profile-promote": STUDIO_POST_WRITE_RULES,
    "change-request-list": STUDIO_SIGNED_IN,
    "change-request": Door(
        {
            "GET": (LOGIN, 200, LOGIN, 200, 200),
            "POST": (LOGIN, 403, LOGIN, 400, 400),  # no action
            # The staff is the author; the editor's approval names no revision (428).
            "POST action=approve": (LOGIN, 403, LOGIN, 428, 403),
        }
    ),
    "change-request-preview": Door({"GET": (LOGIN, 200, LOGIN, 200, 200)}),
    # -- reviews (profiles.studio.views.reviews): POST only; an empty form is refused (a message
    # and back to the page), the confirmation of an empty draft re-shows the editor (400)
    "profile-propose-confirm": Door(
        {"GET": (LOGIN, 403, LOGIN, 405, 405), "POST": (LOGIN, 403, LOGIN, 400, 400)}
    ),
    "profile-promote-confirm": STUDIO_POST_WRITE_RULES,
    "change-request-comment": STUDIO_POST_WRITE_RULES,
    "change-request-review": STUDIO_POST_WRITE_RULES,
    "change-request-reviewers": STUDIO_POST_WRITE_RULES,
    "change-request-schedule": STUDIO_POST_WRITE_RULES,
    "change-request-update-changes": STUDIO_POST_WRITE_RULES,
    "change-request-impact-more": Door({"GET": (LOGIN, 200, LOGIN, 200, 200)}),
    "environment-list": Door(  # protecting an environment is ADMINISTER
        {"GET": (LOGIN, 200, LOGIN, 200, 200), "POST": (LOGIN, 403, LOGIN, 403, 302)}
    ),
    "help-safe-change": STUDIO_SIGNED_IN,
    # -- webhooks (profiles.studio.views.notifications): an empty form is refused beside its fields
    "webhook-list": Door({"GET": (LOGIN, *STAFF_ONLY, 200), "POST": (LOGIN, *STAFF_ONLY, 400)}),
    "webhook": Door({"GET": (LOGIN, *STAFF_ONLY, 200), "POST": (LOGIN, *STAFF_ONLY, 400)}),
    "webhook-delete": Door({"GET": (LOGIN, *STAFF_ONLY, 200), "POST": (LOGIN, *STAFF_ONLY, 302)}),
    "webhook-test": Door({"GET": (LOGIN, *STAFF_ONLY, 405), "POST": (LOGIN, *STAFF_ONLY, 302)}),
    # -- the team (profiles.studio.views.team): ADMINISTER, staff only. An empty invitation is
    # refused beside its fields (400); an empty role change is refused (a message, back to
    # the page); the member is the reader (deactivated, then rolled back).
    "team": Door({"GET": (LOGIN, *STAFF_ONLY, 200), "POST": (LOGIN, *STAFF_ONLY, 405)}),
    "team-invite": Door({"GET": (LOGIN, *STAFF_ONLY, 405), "POST": (LOGIN, *STAFF_ONLY, 400)}),
    "team-invitation-revoke": Door(
        {"GET": (LOGIN, *STAFF_ONLY, 405), "POST": (LOGIN, *STAFF_ONLY, 302)}
    ),
    "team-member-role": Door({"GET": (LOGIN, *STAFF_ONLY, 405), "POST": (LOGIN, *STAFF_ONLY, 302)}),
    "team-member-active": Door(
        {"GET": (LOGIN, *STAFF_ONLY, 200), "POST": (LOGIN, *STAFF_ONLY, 302)}
    ),
    # An invitation's page opens signed out; a link that is no invitation's: 404 for everyone.
    "team-join": Door({"GET": everyone(404), "POST": everyone(404)}),
    "help-reasons": STUDIO_SIGNED_IN,
    # -- accounts (django.contrib.auth)
    "login": Door({"GET": everyone(200)}),
    "logout": Door({"GET": everyone(405), "POST": everyone(302)}),
    "password_change": Door({"GET": (LOGIN, 200, LOGIN, 200, 200)}),
    "password_change_done": Door({"GET": (LOGIN, 200, LOGIN, 200, 200)}),
    "password_reset": Door({"GET": everyone(200)}),
    "password_reset_done": Door({"GET": everyone(200)}),
    "password_reset_confirm": Door({"GET": everyone(200)}),  # a bad link: the "invalid" page
    "password_reset_complete": Door({"GET": everyone(200)}),
    # -- single sign-on (profiles.studio.views.sso): not configured here, so the login page
    "oidc_authentication_init": Door({"GET": everyone(LOGIN), "POST": everyone(405)}),
    "oidc_authentication_callback": Door({"GET": everyone(LOGIN), "POST": everyone(405)}),
    "healthz": Door({"GET": everyone(200)}),
    "readyz": Door({"GET": everyone(200)}),
    # Off (404) unless METRICS_TOKEN or METRICS_ALLOWED_IPS is set; then the token or the
    # address decides, not a role (tests/ctxstudio/test_metrics.py).
    "metrics": Door({"GET": everyone(404)}),
    "favicon": Door({"GET": everyone(301)}),  # on to the static SVG
    # -- API
    "api:resolve": API_RESOLUTION,
    "api:expand": API_RESOLUTION,
    "api:snapshot": Door(  # RESOLVE, GET only (the client's local evaluation)
        {"GET": (401, 200, 200, 200, 200), "POST": (401, 405, 405, 405, 405)}, api=True
    ),
    "api:profile-preview": Door(
        {"GET": (401, 405, 405, 405, 405), "POST": (401, 200, 200, 200, 200)}, api=True
    ),
    "api:consumer-list": API_CONFIG,
    "api/v1/consumers$": API_CONFIG,
    "api:consumer-detail": API_CONFIG_DETAIL,
    "api:layer-list": API_CONFIG,
    "api/v1/layers$": API_CONFIG,
    "api:layer-detail": Door(  # the layer has rules: its DELETE is refused after the check
        {**API_CONFIG_DETAIL.methods, "DELETE": (401, 403, 403, 409, 409)}, api=True
    ),
    "api:item-list": API_ITEMS,
    "api/v1/layers/(?P<key>[^/]+)/items$": API_ITEMS,
    # Bulk ingest: POST only, like the item writes; {} is not a batch (an array or NDJSON).
    "api:item-bulk": Door(
        {"GET": (401, 403, 403, 405, 405), "POST": (401, 403, 403, 400, 400)}, api=True
    ),
    "api:item-detail": Door(
        {
            "GET": (401, 403, 403, 200, 200),
            "PUT": (401, 403, 403, 200, 200),
            "PATCH": (401, 403, 403, 200, 200),
            "DELETE": (401, 403, 403, 204, 204),
        },
        api=True,
    ),
    "api:profile-list": API_CONFIG,
    "api/v1/profiles$": API_CONFIG,
    "api:profile-detail": API_REQUIRED_FIELDS_DETAIL,
    "api:rule-detail": API_CONFIG_DETAIL,
    "api:scenario-list": API_CONFIG,
    "api/v1/scenarios$": API_CONFIG,
    "api:scenario-detail": API_REQUIRED_FIELDS_DETAIL,
    "api:workspace": Door(  # export: READ_MATERIAL + IMPORT_EXPORT; import: a job (202)
        {"GET": (401, 403, 403, 200, 200), "POST": (401, 403, 403, 202, 202)}, api=True
    ),
    "api:import-job": Door({"GET": (401, 403, 403, 200, 200)}, api=True),  # as the studio's
    # A bulk ingest job (the editor's): WRITE_MATERIAL, its owner or an administrator.
    "api:item-bulk-job": Door({"GET": (401, 403, 403, 200, 200)}, api=True),
    # Versioning and safe change (profiles.api.{versioning,safechange}). The fixture's change
    # request is the staff's.
    "api:profile-version-list": API_READ_ONLY,
    "api/v1/profiles/(?P<key>[^/]+)/versions$": API_READ_ONLY,
    "api:profile-version-detail": API_READ_ONLY,
    "api:profile-diff": API_READ_ONLY,
    "api:activity": API_READ_ONLY,  # READ_CONFIG; item rows only with READ_MATERIAL
    "api:profile-version-restore": Door(  # restoring the current version changes nothing
        {"GET": (401, 405, 405, 405, 405), "POST": (401, 403, 403, 200, 200)}, api=True
    ),
    "api:profile-impact": Door(  # RESOLVE: a dry run, like the preview
        {"GET": (401, 405, 405, 405, 405), "POST": (401, 200, 200, 200, 200)}, api=True
    ),
    "api:profile-promote": Door(  # WRITE_RULES; {} names no target environment
        {"GET": (401, 405, 405, 405, 405), "POST": (401, 403, 403, 400, 400)}, api=True
    ),
    "api:environment-list": API_READ_ONLY,
    "api/v1/environments$": API_READ_ONLY,
    "api:environment-detail": Door(  # PUT is ADMINISTER; {} = unprotected, 1 approval
        {"GET": (401, 200, 200, 200, 200), "PUT": (401, 403, 403, 403, 200)}, api=True
    ),
    "api:change-request-list": API_CONFIG,
    "api/v1/change-requests$": API_CONFIG,
    "api:change-request-detail": Door(  # only the author edits
        {"GET": (401, 200, 200, 200, 200), "PATCH": (401, 403, 403, 403, 200)}, api=True
    ),
    # Never one's own request (403 SELF_APPROVAL); an approval without If-Match: 428.
    "api:change-request-approve": Door(
        {"GET": (401, 405, 405, 405, 405), "POST": (401, 403, 403, 428, 403)}, api=True
    ),
    "api:change-request-reject": API_CHANGE_REQUEST_ACTION,
    "api:change-request-rebase": API_CHANGE_REQUEST_ACTION,
    "api:change-request-close": Door(  # only the author withdraws
        {"GET": (401, 405, 405, 405, 405), "POST": (401, 403, 403, 403, 200)}, api=True
    ),
    "api:change-request-apply": Door(  # WRITE_RULES, then 409: nobody approved it yet
        {"GET": (401, 405, 405, 405, 405), "POST": (401, 403, 403, 409, 409)}, api=True
    ),
    # Reviews (profiles.api.reviews): the thread is read like the request; {} has no body (400).
    "api:change-request-comments": Door(
        {"GET": (401, 200, 200, 200, 200), "POST": (401, 403, 403, 400, 400)}, api=True
    ),
    "api:change-request-request-changes": Door(
        {"GET": (401, 405, 405, 405, 405), "POST": (401, 403, 403, 400, 400)}, api=True
    ),
    "api:auth-token": Door({"GET": everyone(405), "POST": everyone(400)}, api=True),
    # Scoped keys: MANAGE_KEYS; {} names no key (400). The fixture's key is the editor's.
    "api:key-list": API_KEYS,
    "api/v1/keys$": API_KEYS,
    "api:key-detail": Door(
        {"GET": (401, 403, 403, 405, 405), "DELETE": (401, 403, 403, 204, 204)}, api=True
    ),
    # Webhooks: MANAGE_WEBHOOKS; {} names no URL (400), changes nothing (PATCH 200).
    "api:webhook-list": Door(
        {"GET": (401, *API_STAFF_ONLY, 200), "POST": (401, *API_STAFF_ONLY, 400)}, api=True
    ),
    "api/v1/webhooks$": Door(
        {"GET": (401, *API_STAFF_ONLY, 200), "POST": (401, *API_STAFF_ONLY, 400)}, api=True
    ),
    "api:webhook-detail": Door(
        {
            "GET": (401, *API_STAFF_ONLY, 200),
            "PATCH": (401, *API_STAFF_ONLY, 200),
            "DELETE": (401, *API_STAFF_ONLY, 204),
        },
        api=True,
    ),
    "api:webhook-deliveries": Door({"GET": (401, *API_STAFF_ONLY, 200)}, api=True),
    "api:webhook-test": Door(
        {"GET": (401, *API_STAFF_ONLY, 405), "POST": (401, *API_STAFF_ONLY, 202)}, api=True
    ),
    # The API's description is public (drf-spectacular's SERVE_PERMISSIONS): no workspace data.
    "api:schema": Door({"GET": everyone(200)}, api=True),
    "api:docs": Door({"GET": everyone(200)}, api=True),
}


# -- the admin: one rule. Only is_staff users log in (Django); everyone else is sent to the
# admin's login page. What staff get depends on the page and on who governs the model.

NOT_STAFF = (ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN, ADMIN_LOGIN)

# Models administered through profiles.workspace.permissions (ADMINISTER = staff).
ADMINISTERED = {
    "profiles.consumer",
    "profiles.layer",
    "profiles.item",
    "profiles.profile",
    "profiles.rule",
    "profiles.scenario",
    "profiles.environment",
}
# Shown, never changed by anyone: the version counter, the decision log, background tasks,
# profile versions and change requests (they change only through their own services).
ADMINISTERED_READ_ONLY = {
    "profiles.workspaceversion",
    "profiles.decisionlog",
    "django_tasks_database.dbtaskresult",
    "profiles.profileversion",
    "profiles.changerequest",
    "profiles.apikey",  # revoked by an action, never edited: it holds no secret to show
    "profiles.activity",  # the activity log: the write services record it
    "profiles.webhook",  # managed in the studio and the API (their one service)
    "profiles.webhookdelivery",
}
# Accounts and login lockouts keep Django's model permissions (superusers): staff alone get
# 403, so being staff is not enough to make oneself superuser or lift a lockout.
DJANGO_PERMISSIONS = {"auth.user", "auth.group", "axes.accessfailurelog"}

ADMIN_SITE_PAGES = {  # staff's status on the site's own pages, by name (or route)
    "admin:index": 200,
    "admin:password_change": 200,
    "admin:password_change_done": 200,
    "admin:jsi18n": 200,
    "admin:autocomplete": 403,  # no field named: refused whoever asks
    "admin:view_on_site": 404,  # a layer has no page on the site
    "admin:app_list": 200,
    "admin/(?P<url>.*)$": 404,  # the catch-all
}

ADMIN_MODEL_PAGE = re.compile(r"^admin/(?P<app>\w+)/(?P<model>\w+)/(?P<page>.*)$")


def admin_staff_status(model: str, page: str) -> int | None:
    """Return staff's status for a model page of the admin, None for an unknown page."""
    pages = {
        "": "view",
        "add/": "add",
        "<path:object_id>/history/": "view",
        "<path:object_id>/delete/": "delete",
        "<path:object_id>/change/": "view",  # a read-only model shows a view-only page
        "<path:object_id>/": "redirect",
        "<path:object_id>/resolve/": "view",
        "([^/]+)/history/([^/]+)/$": "view",  # simple_history: one past version
        "<id>/password/": "change",
    }
    kind = pages.get(page)
    if kind is None:
        return None
    if kind == "redirect":
        return 302
    if model in ADMINISTERED:
        return 200
    if model in ADMINISTERED_READ_ONLY:
        return 200 if kind == "view" else 403
    if model in DJANGO_PERMISSIONS:
        return 403
    return None


def admin_door(route: Route) -> Door | None:
    if route.name == "admin:login":
        # Signed-in staff are sent on to the index; anyone else gets the form.
        return Door({"GET": (200, 200, 200, 200, 302)})
    if route.name == "admin:logout":
        # Not staff: sent to the index (and from there to the login page).
        return Door({"GET": (302, 302, 302, 302, 405), "POST": everyone(302)})
    if route.name == "admin:profiles_decisionlog_save_scenario":
        # Staff who may write scenarios; the logged entry kept no input: refused, redirected.
        return Door({"GET": (*NOT_STAFF, 405), "POST": (*NOT_STAFF, 302)})
    page = ADMIN_SITE_PAGES.get(route.name) or ADMIN_SITE_PAGES.get(route.route)
    if page is not None:
        return Door({"GET": (*NOT_STAFF, page)})
    match = ADMIN_MODEL_PAGE.match(route.route)
    if match is None:
        return None
    status = admin_staff_status(f"{match['app']}.{match['model']}", match["page"])
    return None if status is None else Door({"GET": (*NOT_STAFF, status)})


def door_for(route: Route) -> Door | None:
    if route.route.startswith("admin/"):
        return admin_door(route)
    return EXPECTATIONS.get(route.name) or EXPECTATIONS.get(route.route)


# --- concrete URLs --------------------------------------------------------------------------


ADMIN_OBJECTS = {
    "profiles.consumer": lambda: Consumer.objects.get(key=CONSUMER),
    "profiles.layer": lambda: Layer.objects.get(key=LAYER),
    "profiles.item": lambda: Item.objects.get(layer__key=LAYER, path=ITEM),
    "profiles.profile": lambda: Profile.objects.get(key=PROFILE),
    "profiles.rule": lambda: Rule.objects.get(profile__key=PROFILE, layer__key=LAYER),
    "profiles.scenario": lambda: Scenario.objects.get(name=SCENARIO),
    "profiles.workspaceversion": lambda: WorkspaceVersion.objects.first(),
    "profiles.decisionlog": lambda: DecisionLog.objects.first(),
    "profiles.profileversion": lambda: ProfileVersion.objects.get(profile_key=PROFILE, number=1),
    "profiles.changerequest": lambda: ChangeRequest.objects.get(),
    "profiles.environment": lambda: Environment.objects.get(key=ENVIRONMENT),
    "profiles.apikey": lambda: ApiKey.objects.get(kind="scoped"),
    "profiles.activity": lambda: (
        Activity.objects.first()
        or Activity.objects.create(origin="cli", kind="layer", key=LAYER, op="update")
    ),
    "profiles.webhook": lambda: matrix_webhook(),
    "profiles.webhookdelivery": lambda: WebhookDelivery.objects.get_or_create(
        webhook=matrix_webhook(), event="ping"
    )[0],
    "auth.user": lambda: User.objects.get(username="reader"),
    "auth.group": lambda: Group.objects.get(name=EDITORS_GROUP),
    "django_tasks_database.dbtaskresult": lambda: DBTaskResult.objects.get_or_create(
        task_path="profiles.import_export.jobs.workspace_import_task",
        defaults={
            "args_kwargs": {"args": [], "kwargs": {}},
            "backend_name": "default",
            "run_after": get_date_max(),
            "exception_class_path": "",
            "traceback": "",
        },
    )[0],
    "axes.accessfailurelog": lambda: AccessFailureLog.objects.get_or_create(
        username="reader", ip_address="192.0.2.1", user_agent="test", path_info="/accounts/login/"
    )[0],
}


def matrix_invitation() -> Invitation:
    return Invitation.objects.get_or_create(
        email="invitee@example.com",
        defaults={"token_hash": "0" * 64, "expires_at": timezone.now() + timedelta(days=7)},
    )[0]


def matrix_webhook() -> Webhook:
    return Webhook.objects.get_or_create(
        url="http://127.0.0.1:9/hook",
        defaults={"events": ["import.finished"], "secret": "a-secret-of-sixteen-or-more"},
    )[0]


def url_kwargs(route: str) -> dict[str, str]:
    """Return values for the route's parameters, naming the fixture objects."""
    match = ADMIN_MODEL_PAGE.match(route)
    if match:
        model = f"{match['app']}.{match['model']}"
        if model not in ADMIN_OBJECTS:
            return {}
        obj = ADMIN_OBJECTS[model]()
        values = {"object_id": str(obj.pk), "id": str(obj.pk), "_0": str(obj.pk)}
        history = getattr(type(obj), "history", None)
        if history is not None:
            values["_1"] = str(history.filter(id=obj.pk).first().history_id)
        return values
    layer = Layer.objects.get(key=LAYER)
    key = CONSUMER if "consumers/" in route else LAYER if "layers/" in route else PROFILE
    if "environments/" in route:
        key = ENVIRONMENT
    return {
        "key": key,
        "number": "1",
        "pk": str(ChangeRequest.objects.get().pk),
        "layer": LAYER,
        "path": ITEM,
        "item_id": str(Item.objects.get(layer=layer, path=ITEM).pk),
        "name": SCENARIO,
        "uidb64": "MQ",
        "token": "no-such-token",
        "content_type_id": str(ContentType.objects.get_for_model(Layer).pk),
        "object_id": str(layer.pk),
        "app_label": "profiles",
        "url": "no-such-page/",
        "job_id": str(
            ImportJob.objects.get(
                user__username="editor",
                kind=ImportJob.Kind.BULK if "/bulk/" in route else ImportJob.Kind.IMPORT,
            ).pk
        ),
        "key_id": str(ApiKey.objects.get(kind="scoped").pk),
        "id": str(ApiKey.objects.get(kind="scoped").pk),
        "webhook_id": str(matrix_webhook().pk),
        "member_id": str(User.objects.get(username="reader").pk),
        "invitation_id": str(matrix_invitation().pk),
    }


def concrete_url(route: Route) -> str:
    """Return a URL that the resolver maps back to exactly this pattern."""
    template, parameters = normalize(route.regex)[0]
    values = url_kwargs(route.route)
    missing = [name for name in parameters if name not in values]
    assert not missing, f"{route}: no fixture value for {missing}"
    url = "/" + template % {name: values[name] for name in parameters}
    assert resolve(url).route == route.route, f"{url} resolves to another pattern than {route}"
    return url


def request(client: Client, method: str, url: str, data: dict, *, api: bool):
    """Send one request inside a savepoint that is rolled back afterwards."""
    with transaction.atomic():
        if method in ("GET", "HEAD"):
            response = client.generic(method, url)
        elif api:
            response = client.generic(method, url, "{}", content_type="application/json")
        else:
            response = client.post(url, data) if method == "POST" else client.generic(method, url)
        transaction.set_rollback(True)
    return response


def outcome(response, expected) -> object:
    """Return the response as the table writes it (a login redirect by its name)."""
    if expected in LOGIN_PREFIX and response.status_code == 302:
        location = response.headers.get("Location", "")
        return expected if location.startswith(LOGIN_PREFIX[expected]) else f"302 {location}"
    return response.status_code


# --- the tests ------------------------------------------------------------------------------


def test_permission_matrix__every_url_pattern__has_an_expectation():
    missing = [route.route for route in ROUTES if door_for(route) is None]

    assert not missing, "decide who may open these URLs (add them to the matrix):\n" + "\n".join(
        missing
    )


def test_permission_matrix__expectations__name_only_existing_patterns():
    known = {route.name for route in ROUTES} | {route.route for route in ROUTES}

    assert not [key for key in EXPECTATIONS if key not in known]


@pytest.mark.parametrize("route", ROUTES, ids=str)
def test_permission_matrix__each_role__gets_the_expected_status(people, route):
    door = door_for(route)
    if door is None:
        pytest.fail(f"{route} has no entry in the permission matrix")
    url = concrete_url(route)

    wrong = []
    for method, data, role, expected in door.cases():
        response = request(people.clients[role], method, url, data, api=door.api)
        got = outcome(response, expected)
        if got != expected:
            wrong.append(f"{method} {url} {data or ''} as {role}: expected {expected}, got {got}")

    assert not wrong, "\n".join(wrong)


def test_permission_matrix__size__covers_every_pattern_and_role():
    # A figure for the report, and a guard that the matrix is not silently shrunk.
    cases = sum(1 for route in ROUTES for _ in door_for(route).cases())

    assert len(ROUTES) >= 100
    assert cases >= len(ROUTES) * len(ROLES)


API_ROUTES = [route for route in ROUTES if route.route.startswith("api/")]
REFUSED = (401, 403)


def options_status(door: Door, role: str) -> int:
    """Return what OPTIONS answers ``role``: the refusal every method gets, else 200."""
    statuses = {status for _, _, who, status in door.cases() if who == role}
    return statuses.pop() if len(statuses) == 1 and statuses <= set(REFUSED) else 200


@pytest.mark.parametrize("route", API_ROUTES, ids=str)
def test_permission_matrix__options_on_every_api_url__described_to_every_role(people, route):
    # OPTIONS describes a door (DRF's metadata) to whoever may use one of its methods; a view
    # that reads its body itself (no serializer_class, no queryset) answered 500 (issue 18).
    door = door_for(route)
    url = concrete_url(route)

    wrong = []
    for role in ROLES:
        people.clients[role].raise_request_exception = False
        response = request(people.clients[role], "OPTIONS", url, {}, api=True)
        expected = options_status(door, role)
        if response.status_code != expected:
            wrong.append(
                f"OPTIONS {url} as {role}: expected {expected}, got {response.status_code}"
            )
        elif expected == 200 and route.name != "api:schema":  # the schema view answers YAML
            assert response.json()["name"], url
        elif expected != 200:
            assert set(response.json()["error"]) == {"code", "message", "path", "retryable"}, url

    assert not wrong, "\n".join(wrong)

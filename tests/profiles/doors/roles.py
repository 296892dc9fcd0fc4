"""The people of the permission tests: one user per role, with clients, on conformance case 01."""

from dataclasses import dataclass, field
from pathlib import Path

import yaml
from django.contrib.auth.models import Group, User
from django.test import Client

from profiles.import_export.imports import workspace_import
from profiles.models import DecisionLog, Environment, Profile, Scenario
from profiles.safechange.change_requests import change_request_create
from profiles.workspace.permissions import EDITORS_GROUP
from tests.profiles.conftest import api_key_for

ROLES = ("anonymous", "reader", "token reader", "editor", "staff")
CASE_01 = next((Path(__file__).resolve().parents[2] / "resolver" / "conformance").glob("01-*.yaml"))
PROFILE, LAYER, ITEM, CONSUMER = "support-answer", "tickets", "T-1001", "ops-agent"
ENVIRONMENT = "production"  # protected; no profile of case 01 is in it
SCENARIO = "Dana's card refund"  # customer C-7
# Material of customer C-9: outside the itemFilter of every resolution for C-7.
OTHER_CUSTOMER_MATERIAL = ("Lee Park", "Two open disputes", "T-2002", "Dispute opened", "7781")


@dataclass
class People:
    users: dict[str, User]
    clients: dict[str, Client] = field(default_factory=dict)


def load_workspace() -> None:
    """Import case 01 and save its request (customer C-7) as the default scenario."""
    case = yaml.safe_load(CASE_01.read_text(encoding="utf-8"))
    workspace_import(document=case["workspace"], mode="replace")
    Scenario.objects.create(
        name=SCENARIO,
        profile=Profile.objects.get(key=PROFILE),
        input=case["request"]["input"],
        now=case["request"]["now"],
        is_default=True,
    )
    DecisionLog.objects.create(request_fingerprint="f" * 64, status="RESOLVED")


def make_people() -> People:
    """Return a reader (also with an API token), an editor (the group) and a staff member."""
    editors, _ = Group.objects.get_or_create(name=EDITORS_GROUP)
    users = {
        "reader": User.objects.create_user("reader", password="reader-password-1"),
        "editor": User.objects.create_user("editor", password="editor-password-1"),
        "staff": User.objects.create_user("staff", password="staff-password-1", is_staff=True),
    }
    users["editor"].groups.add(editors)
    token = api_key_for(users["reader"])
    api_key_for(users["editor"], scopes=["read"], name="editor's bot")  # a scoped key to revoke
    # Safe change: a protected environment, and an open change request by the staff member.
    Environment.objects.create(key=ENVIRONMENT, requires_change_request=True)
    change_request_create(
        profile_key=PROFILE, title="A larger budget", changes={"budget": 999}, user=users["staff"]
    )
    people = People(users=users)
    people.clients["anonymous"] = Client()
    # A token opens the API only: to the studio and the admin this client is anonymous.
    people.clients["token reader"] = Client(headers={"Authorization": f"Token {token}"})
    for role in ("reader", "editor", "staff"):
        people.clients[role] = Client()
        people.clients[role].force_login(users[role])
    return people

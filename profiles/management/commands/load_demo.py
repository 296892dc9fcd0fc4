"""Load the demo workspace and scenarios into an empty workspace (its production protected),
and create the demo user and a second editor to approve its change requests."""

import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from profiles.import_export.demo import (
    DEMO_PRODUCTION_APPROVALS,
    DEMO_PRODUCTION_ENVIRONMENT,
    demo_load,
    demo_reset,
)
from profiles.import_export.documents import WorkspaceImportError, workspace_parse
from profiles.models import Profile
from profiles.team.members import member_role_set
from profiles.versioning.environments import SafeChangeError, protected_environments
from profiles.versioning.versions import VersionConflict
from profiles.workspace.concurrency import WriteConflict
from profiles.workspace.origin import CLI
from profiles.workspace.permissions import Role
from profiles.workspace.validation import WorkspaceValidationError
from profiles.workspace.writing import Conflict

DEMO_DIR = Path(settings.BASE_DIR) / "profiles" / "demo"
DEMO_USERNAME = "demo"
# A second editor: a change request needs an approval by someone other than its author.
REVIEWER_USERNAME = "reviewer"
RESET_ACTION = "load_demo --reset"
RESET_CONFIRMATION = "reset"


class Command(BaseCommand):
    help = (
        "Load the demo workspace and its scenarios when the workspace is empty, and create "
        "the demo user (staff) and a second editor (reviewer) if they do not exist; the "
        "demo's production environment is protected (one approval). A workspace that "
        "already has material is left as it is, so running it again changes nothing "
        "(make run runs it on every start). "
        "--reset replaces every consumer, layer, item, profile and saved scenario by the "
        "demo, in one transaction, after a typed confirmation (--yes skips it); profiles of "
        "protected environments are replaced too, their versions recording load_demo --reset."
    )

    def add_arguments(self, parser):
        parser.add_argument("--workspace", default=str(DEMO_DIR / "workspace.yaml"))
        parser.add_argument("--scenarios", default=str(DEMO_DIR / "scenarios.yaml"))
        parser.add_argument(
            "--no-user",
            action="store_true",
            help="do not create the demo user nor the second editor",
        )
        parser.add_argument(
            "--url",
            default="http://127.0.0.1:8000/",
            help="where the studio is served, for the sign-in hint (make run passes HOST/PORT)",
        )
        parser.add_argument(
            "--reset",
            action="store_true",
            help="replace the whole workspace and every saved scenario by the demo",
        )
        parser.add_argument(
            "--yes",
            "--noinput",
            "--no-input",
            action="store_true",
            dest="yes",
            help="reset without asking for confirmation",
        )

    def handle(self, *args, **options):
        workspace_path = Path(options["workspace"])
        scenarios_path = Path(options["scenarios"])
        try:
            workspace_text = workspace_path.read_text(encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"cannot read {workspace_path}: {exc.strerror}") from exc
        scenarios = []
        if scenarios_path.exists():
            scenarios = self._read_scenarios(scenarios_path)

        if options["reset"] and not options["yes"]:
            self._confirm_reset()
        try:
            if options["reset"]:
                loaded = demo_reset(
                    workspace_text=workspace_text,
                    scenarios=scenarios,
                    operator_action=RESET_ACTION,
                )
            else:
                loaded = demo_load(workspace_text=workspace_text, scenarios=scenarios)
        except WorkspaceImportError as exc:
            for issue in exc.issues:
                self.stderr.write(f"{workspace_path}: {issue}")
            raise CommandError("the demo workspace is invalid; nothing was loaded") from exc
        except WorkspaceValidationError as exc:
            for issue in exc.issues:
                self.stderr.write(f"{scenarios_path}: {issue}")
            raise CommandError("the demo scenarios are invalid; nothing was loaded") from exc
        except (SafeChangeError, VersionConflict, WriteConflict, Conflict) as exc:
            raise CommandError(f"{exc}; nothing was loaded") from exc
        except DatabaseError as exc:
            raise CommandError(
                f"the database refused the demo ({exc}); nothing was loaded"
            ) from exc

        if loaded is None:
            self.stdout.write(
                "The workspace already has material; the demo was not loaded "
                "(load_demo --reset replaces it)."
            )
        else:
            verb = "reset" if options["reset"] else "loaded"
            self.stdout.write(f"Demo workspace {verb} — {loaded.summary}")
            counts = loaded.scenarios
            self.stdout.write(
                f"Scenarios: {counts['created']} created, {counts['updated']} updated, "
                f"{counts['unchanged']} unchanged."
            )
            approvals = DEMO_PRODUCTION_APPROVALS
            self.stdout.write(
                f'Environment "{DEMO_PRODUCTION_ENVIRONMENT}" is protected: its profiles change '
                f"through change requests, applied after {approvals} approval"
                f"{'' if approvals == 1 else 's'} by another editor."
            )
        if not options["no_user"]:
            self._ensure_demo_user(options["url"])
            self._ensure_reviewer()

    def _confirm_reset(self) -> None:
        """Ask the operator to type the confirmation; raise CommandError unless they do."""
        environments = Profile.objects.exclude(environment=None).values_list(
            "environment", flat=True
        )
        protected = sorted(protected_environments(set(environments)))
        self.stdout.write(
            "This deletes every consumer, layer, item, profile and saved scenario of the "
            "workspace and loads the demo in their place. Profile versions and change "
            "requests are kept."
        )
        if protected:
            self.stdout.write(
                f"Protected environments ({', '.join(protected)}) are replaced too, without "
                f'change requests; their versions record "{RESET_ACTION}".'
            )
        try:
            answer = input(f'Type "{RESET_CONFIRMATION}" to continue: ')
        except EOFError:
            answer = ""
        if answer.strip() != RESET_CONFIRMATION:
            raise CommandError("reset cancelled; nothing was changed (--yes skips the question)")

    def _read_scenarios(self, path: Path) -> list:
        try:
            loaded = workspace_parse(text=path.read_text(encoding="utf-8"))
        except WorkspaceImportError as exc:
            raise CommandError(f"{path}: {exc}") from exc
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
        if isinstance(loaded, dict) and "scenarios" in loaded:
            loaded = loaded["scenarios"]
        if not isinstance(loaded, list):
            raise CommandError(f"{path}: expected a list of scenarios")
        return loaded

    def _ensure_demo_user(self, url: str) -> None:
        User = get_user_model()
        if User.objects.filter(username=DEMO_USERNAME).exists():
            self.stdout.write(
                f'User "{DEMO_USERNAME}" exists. To reset its password: '
                f"python manage.py changepassword {DEMO_USERNAME}"
            )
            return
        password = secrets.token_urlsafe(12)
        User.objects.create_superuser(username=DEMO_USERNAME, email="", password=password)
        self.stdout.write(f"Log in at {url} as {DEMO_USERNAME} / {password} (staff)")

    def _ensure_reviewer(self) -> None:
        """Create the second editor, who approves the demo user's change requests."""
        User = get_user_model()
        if User.objects.filter(username=REVIEWER_USERNAME).exists():
            self.stdout.write(
                f'User "{REVIEWER_USERNAME}" exists. To reset its password: '
                f"python manage.py changepassword {REVIEWER_USERNAME}"
            )
            return
        password = secrets.token_urlsafe(12)
        reviewer = User.objects.create_user(username=REVIEWER_USERNAME, email="", password=password)
        member_role_set(reviewer, Role.EDITOR, actor=None, origin=CLI)
        self.stdout.write(
            f"A second editor to approve change requests: {REVIEWER_USERNAME} / {password}"
        )

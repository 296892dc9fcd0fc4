"""Load the demo workspace and scenarios, and create the demo user once."""

import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from profiles.services import (
    WorkspaceImportError,
    WorkspaceValidationError,
    scenarios_upsert,
    workspace_import,
    workspace_parse,
)

DEMO_DIR = Path(settings.BASE_DIR) / "profiles" / "demo"
DEMO_USERNAME = "demo"


class Command(BaseCommand):
    help = (
        "Import the demo workspace (merge), upsert its scenarios and create the demo user "
        "if it does not exist. Running it again changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--workspace", default=str(DEMO_DIR / "workspace.yaml"))
        parser.add_argument("--scenarios", default=str(DEMO_DIR / "scenarios.yaml"))
        parser.add_argument("--no-user", action="store_true", help="do not create the demo user")
        parser.add_argument(
            "--url",
            default="http://127.0.0.1:8000/",
            help="where the studio is served, for the sign-in hint (make run passes HOST/PORT)",
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

        try:
            with transaction.atomic():
                summary = workspace_import(text=workspace_text, mode="merge")
                counts = scenarios_upsert(scenarios=scenarios)
        except WorkspaceImportError as exc:
            for issue in exc.issues:
                self.stderr.write(f"{workspace_path}: {issue}")
            raise CommandError("the demo workspace is invalid; nothing was loaded") from exc
        except WorkspaceValidationError as exc:
            for issue in exc.issues:
                self.stderr.write(f"{scenarios_path}: {issue}")
            raise CommandError("the demo scenarios are invalid; nothing was loaded") from exc

        if summary.changed:
            self.stdout.write(f"Demo workspace loaded — {summary}")
        else:
            self.stdout.write("Demo workspace already up to date.")
        self.stdout.write(
            f"Scenarios: {counts['created']} created, {counts['updated']} updated, "
            f"{counts['unchanged']} unchanged."
        )
        if not options["no_user"]:
            self._ensure_demo_user(options["url"])

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
        self.stdout.write(f"Log in at {url} as {DEMO_USERNAME} / {password}")

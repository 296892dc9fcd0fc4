"""Create an API key for a user and print it, once: a scoped key, or the user's own token."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from profiles.models import KeyScope
from profiles.workspace.keys import ApiKeyInvalid, api_key_create, token_replace
from profiles.workspace.permissions import user_role


class Command(BaseCommand):
    help = (
        "Create a scoped API key for USERNAME (--scope, repeatable) and print it, or with "
        "--user-token replace the user's own token. The key is printed once: only its hash "
        "is stored."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="what the key is for")
        parser.add_argument(
            "--scope",
            action="append",
            dest="scopes",
            choices=KeyScope.values,
            help="resolve, read or write (repeatable)",
        )
        parser.add_argument(
            "--environment",
            action="append",
            dest="environments",
            help="resolve only profiles of this environment (repeatable)",
        )
        parser.add_argument("--expires", default=None, help="expiry, ISO 8601 (e.g. 2027-06-30)")
        parser.add_argument(
            "--user-token",
            action="store_true",
            help="replace the user's own token (their whole role; sent as 'Token <key>')",
        )

    def handle(self, *args, username, name, scopes, environments, expires, user_token, **options):
        try:
            user = get_user_model().objects.get_by_natural_key(username)
        except get_user_model().DoesNotExist:
            raise CommandError(f'no user "{username}"') from None
        if not user.is_active:
            raise CommandError(f'user "{username}" is inactive: a key of theirs would not work')
        if user_token:
            if scopes or environments or expires or name:
                raise CommandError(
                    "--user-token takes no --name, --scope, --environment, --expires"
                )
            _, key = token_replace(user=user)
            self.stderr.write(
                f"{username}'s token (the previous one is revoked); "
                "send it as 'Authorization: Token <key>':"
            )
            self.stdout.write(key)
            return
        if not scopes:
            raise CommandError("give --scope (resolve, read, write) or --user-token")
        if expires is not None and len(expires) == 10:  # a date: the end of that day, UTC
            expires = f"{expires}T23:59:59Z"
        try:
            made = api_key_create(
                owner=user,
                name=name or f"key of {username}",
                scopes=scopes,
                environments=environments,
                expires_at=expires,
            )
        except ApiKeyInvalid as exc:
            option = {
                "expiresAt": "--expires",
                "scopes": "--scope",
                "environments": "--environment",
            }
            field = exc.field.split("[")[0]
            raise CommandError(f"{option.get(field, '--' + field)}: {exc.message}") from None
        # What the key may do, as applied (on stderr: stdout carries the key alone).
        record = made.record
        environments = ", ".join(record.environments) or "every environment"
        expiry = (
            "no expiry"
            if record.expires_at is None
            else f"expires {record.expires_at:%Y-%m-%dT%H:%M:%SZ}"
        )
        self.stderr.write(
            f'key "{record.name}" of {username} ({user_role(user)}); scopes '
            f"{', '.join(record.scopes)}; environments {environments}; {expiry}; "
            "send it as 'Authorization: Token <key>':"
        )
        self.stdout.write(made.key)

"""Start the test provider on a free loopback port, its accounts set through ``shell -c``."""

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.processes import ROOT, free_port, stop

CLIENT_ID = "context-studio"
CLIENT_SECRET = "the-studio's-test-secret"
PASSWORD = "provider-password-1"


def _rsa_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


class Provider:
    """A running provider: its issuer and a way to set its accounts."""

    def __init__(self, directory: Path):
        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        self.issuer = f"{self.base}/o"
        self.env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("DJANGO_", "DATABASE_URL"))
        }
        self.env.update(
            OIDC_PROVIDER_DATABASE=str(directory / "provider.sqlite3"),
            OIDC_PROVIDER_RSA_KEY=_rsa_key(),
            OIDC_PROVIDER_ISSUER=self.issuer,
        )
        self._command("migrate", "--noinput", "-v", "0")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.oidc_provider",
                "runserver",
                "--noreload",
                f"127.0.0.1:{port}",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                discovery = f"{self.issuer}/.well-known/openid-configuration"
                with urllib.request.urlopen(discovery, timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                stop(self.process)
                raise AssertionError("the OpenID Connect provider did not start")
            time.sleep(0.1)

    def _command(self, *args: str) -> None:
        completed = subprocess.run(
            [sys.executable, "-m", "tests.oidc_provider", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert completed.returncode == 0, completed.stdout + completed.stderr

    def _call(self, function: str, **arguments) -> None:
        self._command(
            "shell",
            "-c",
            f"import json; from tests.oidc_provider.accounts import {function}; "
            f"{function}(**json.loads({json.dumps(json.dumps(arguments))}))",
        )

    def member_set(self, username: str, *, groups=(), email: str = "") -> None:
        """Create or update the provider's account ``username`` in exactly ``groups``."""
        self._call(
            "member_set",
            username=username,
            password=PASSWORD,
            email=email or f"{username}@example.com",
            groups=list(groups),
        )

    def client_set(self, *redirect_uris: str) -> None:
        """Register the studio with its callback URLs."""
        self._call(
            "client_set",
            client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET,
            redirect_uris=list(redirect_uris),
        )

    def studio_settings(self) -> dict:
        """Return the studio's settings that point single sign-on at this provider."""
        return {
            "OIDC_ISSUER": self.issuer,
            "OIDC_RP_CLIENT_ID": CLIENT_ID,
            "OIDC_RP_CLIENT_SECRET": CLIENT_SECRET,
            "OIDC_PROVIDER_NAME": "the test provider",
            "OIDC_STAFF_GROUPS": ["studio-admins"],
            "OIDC_EDITOR_GROUPS": ["studio-editors", "writers"],
            "OIDC_DEFAULT_ROLE": "reader",
        }

    def stop(self) -> None:
        stop(self.process)

"""On whose behalf, and through which door, a write happens (``WriteOrigin``).

Every write service takes an ``origin`` and passes it down: profile versions record it, the
protection checks (``profiles.versioning.protection``) let an applied change request through,
and the activity log names the door and the request.
"""

from dataclasses import dataclass, field, replace

from profiles.models import ProfileVersion


@dataclass(frozen=True)
class WriteOrigin:
    """On whose behalf a write happens: the ``origin`` a profile write passes to the version."""

    source: str = ProfileVersion.Source.WRITE
    message: str = ""
    author: object = None  # None: the user who writes
    change_request: object = None  # authorizes writes of its own profile in protected envs
    approvers: tuple[str, ...] = ()
    restored_from: int | None = None
    # An operator's explicit action on the command line (``load_demo --reset``): its writes
    # in protected environments go through, flagged ``protection_bypassed`` and logged.
    operator_action: str = ""
    # Profile key -> the version number the write must start from (None: no version yet).
    expected_versions: dict = field(default_factory=dict)
    # The door the write came through (ActivityOrigin: studio, api, admin, import, bulk,
    # change-request, cli, sso), recorded in the activity log; "" when a caller did not say.
    door: str = ""

    def through(self, door: str) -> "WriteOrigin":
        """Return this origin as it arrives through ``door`` (kept when already known)."""
        return self if self.door else replace(self, door=door)


def origin_of(origin: "WriteOrigin | None", door: str = "") -> "WriteOrigin":
    """Return ``origin`` (a user's own write when None) with its door known."""
    origin = origin or WriteOrigin()
    return origin.through(door) if door else origin


# Each door's own writes (ActivityOrigin values; the models' choices name them).
STUDIO = WriteOrigin(door="studio")
API = WriteOrigin(door="api")
ADMIN = WriteOrigin(door="admin")
CLI = WriteOrigin(door="cli")
SSO = WriteOrigin(door="sso")  # single sign-on (profiles.team.sso): roles from the groups claim
BULK = WriteOrigin(door="bulk")  # bulk ingest (profiles.material.bulk_ingest), any door

"""The hall's one row: the workspace's version token (the writers' lock)."""

from django.db import models
from django.utils import timezone

from profiles.models.base import new_token


class WorkspaceVersion(models.Model):
    """One row: the writers' lock and the content tokens of the committed workspace.

    Every workspace write (the features' write services) locks this row first and changes ``token``
    in its own transaction; ``profiles_token`` changes too when consumers, profiles or rules
    change, and each layer carries its own ``Layer.content_token``. The tokens are random
    rather than counters, so a rolled-back write can never be mistaken for a committed one.
    """

    counter = models.BigIntegerField(default=0)
    token = models.CharField(max_length=32, default="")
    # Consumers, profiles and rules (everything of the document but the layers' material).
    profiles_token = models.CharField(max_length=32, default="")
    # Everything a worker compiles and holds: it moves with every write except one that only
    # writes items of served layers (``profiles.workspace.served``), whose items no worker
    # holds: a customer's new ticket does not make every worker catch up.
    held_token = models.CharField(max_length=32, default="")
    changed_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "workspace version"

    def __str__(self) -> str:
        return f"workspace version {self.counter}"

    @classmethod
    def bump(cls, *, profiles: bool = True, held: bool = True) -> None:
        """Mark the workspace as changed; call inside the transaction of the write.

        ``profiles`` says whether consumers, profiles or rules changed (their token too);
        ``held`` whether anything workers hold changed (False: only served layers' items).
        """
        changes = {"counter": models.F("counter") + 1, "token": new_token()}
        if profiles:
            changes["profiles_token"] = new_token()
        if held or profiles:
            changes["held_token"] = new_token()
        updated = cls.objects.filter(pk=1).update(**changes, changed_at=timezone.now())
        if not updated:
            cls.objects.get_or_create(
                pk=1,
                defaults={
                    "counter": 1,
                    "token": new_token(),
                    "profiles_token": new_token(),
                    "held_token": new_token(),
                },
            )

    @classmethod
    def current_token(cls) -> str | None:
        """Return the token of the committed workspace state, or None before any write."""
        return cls.objects.filter(pk=1).values_list("token", flat=True).first()

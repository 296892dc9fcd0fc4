"""The decision log: one row per resolution served, written so that it can never fail one."""

import hashlib
import json
import logging
import time

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from profiles import cache
from profiles.models import DecisionLog

logger = logging.getLogger("profiles.decision_log")


def request_fingerprint(request_data: dict) -> str:
    """Return the SHA-256 of the request's canonical JSON (keys sorted, dates as strings)."""
    text = json.dumps(request_data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def decision_log_record(
    *,
    request_data: dict,
    resolution: dict,
    source: str,
    started: float,
    workspace_version: str = "",
    user=None,
    auth: str = "",
) -> DecisionLog | None:
    """Record a served resolution; log (never raise) when it cannot be written.

    ``started`` is a ``time.perf_counter()`` value taken before resolving. The input is kept
    only as a fingerprint unless ``DECISION_LOG_STORE_INPUT`` is on.
    """
    if not settings.DECISION_LOG_ENABLED:
        return None
    if source == DecisionLog.Source.PREVIEW and not settings.DECISION_LOG_PREVIEWS:
        return None
    duration_ms = (time.perf_counter() - started) * 1000
    try:
        with transaction.atomic():
            return DecisionLog.objects.create(
                source=source,
                user=user if getattr(user, "is_authenticated", False) else None,
                auth=auth,
                profile_key=(resolution.get("profile") or {}).get("key", ""),
                workspace_version=workspace_version or cache.cached_token(),
                request_fingerprint=request_fingerprint(request_data),
                input=request_data.get("input") if settings.DECISION_LOG_STORE_INPUT else None,
                status=resolution.get("status", ""),
                blockers=resolution.get("blockers") or [],
                estimated_tokens=(resolution.get("budget") or {}).get("estimatedTokens", 0),
                duration_ms=round(duration_ms, 3),
            )
    except Exception:  # a failure to log must not fail the resolution
        logger.exception("could not write the decision log entry")
        return None


def decision_log_prune(*, days: int | None = None, dry_run: bool = False) -> int:
    """Delete entries older than ``days`` (default: the retention setting); return how many."""
    days = settings.DECISION_LOG_RETENTION_DAYS if days is None else days
    old = DecisionLog.objects.filter(created_at__lt=timezone.now() - timezone.timedelta(days=days))
    if dry_run:
        return old.count()
    deleted, _ = old.delete()
    return deleted

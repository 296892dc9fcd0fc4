"""Uploads kept between the studio's import preview and its Import or Propose.

The preview (the import's dry run) shows what the file would change; the file then waits for
the user's Import or Propose, for ``PREVIEW_SECONDS``, in a ``PreviewedUpload`` row bound to
the user. Not in the shared cache: a file may be ``MAX_BODY_BYTES`` large, and the cache
(Redis) holds the throttling and login counters, whose memory it must not take. A user keeps
at most ``PREVIEWS_KEPT_PER_USER`` of them (a new preview drops the oldest), and every new
preview deletes the expired ones of everybody, so the table holds at most a few files a user
of the last half hour.
"""

import uuid
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from profiles.models import PreviewedUpload

# How long a preview keeps the file for its Import or Propose.
PREVIEW_SECONDS = 30 * 60
# How many previewed files a user keeps at once (the newest).
PREVIEWS_KEPT_PER_USER = 2


def _expired_before():
    return timezone.now() - timedelta(seconds=PREVIEW_SECONDS)


def previewed_upload_keep(*, user, text: str, mode: str) -> str:
    """Keep an uploaded file for its Import or Propose; return the token that names it."""
    with transaction.atomic():
        PreviewedUpload.objects.filter(created_at__lt=_expired_before()).delete()
        kept = PreviewedUpload.objects.filter(user=user).values_list("pk", flat=True)
        older = list(kept[PREVIEWS_KEPT_PER_USER - 1 :])
        if older:
            PreviewedUpload.objects.filter(pk__in=older).delete()
        upload = PreviewedUpload.objects.create(user=user, source=text, mode=mode)
    return str(upload.pk)


def previewed_upload_get(*, token: str, user) -> PreviewedUpload | None:
    """Return the user's file kept under ``token``, or None (unknown, someone else's, expired)."""
    try:
        pk = uuid.UUID(token)
    except (TypeError, ValueError):
        return None
    return PreviewedUpload.objects.filter(
        pk=pk, user=user, created_at__gte=_expired_before()
    ).first()


def previewed_upload_forget(*, upload: PreviewedUpload) -> None:
    """Drop a kept file once its Import or Propose has used it."""
    PreviewedUpload.objects.filter(pk=upload.pk).delete()

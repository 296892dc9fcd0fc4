"""The studio's "or 404": the object a page's URL names, or the 404 page (``Http404``) when
there is none (``or_404``, and the profile, layer and change request many pages open), and
whether a user sees a background job (its owner, or anyone who administers)."""

from django.http import Http404

from profiles.models import ChangeRequest, ImportJob, Layer, Profile
from profiles.safechange.selectors import change_request_get
from profiles.workspace.permissions import ADMINISTER, user_can
from profiles.workspace.selectors import found_or_none, layer_get, profile_get


def or_404(message: str, get, /, **lookup):
    """Return ``get(**lookup)``; what the getter does not find (``None``, or its model's
    ``DoesNotExist``) is the 404 page, saying ``message``."""
    found = found_or_none(get, **lookup)
    if found is None:
        raise Http404(message)
    return found


def profile_or_404(key: str) -> Profile:
    return or_404(f'no profile "{key}"', profile_get, key=key)


def layer_or_404(key: str) -> Layer:
    return or_404(f'no layer "{key}"', layer_get, key=key)


def change_request_or_404(pk: int, get=change_request_get) -> ChangeRequest:
    """Return change request ``pk`` as ``get`` reads it (a selector's ``get``)."""
    return or_404("no such change request", get, pk=pk)


def job_shown(user, job: ImportJob | None) -> bool:
    """Return whether the user sees the job: its own, or any when they administer (to others
    it does not exist)."""
    return job is not None and (job.user_id == user.pk or user_can(user, ADMINISTER))

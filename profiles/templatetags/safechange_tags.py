"""Template tags of safe change for pages others own (the editor)."""

from django import template

from profiles.models import ChangeRequest
from profiles.safechange.environments import profile_write_refusal

register = template.Library()


@register.simple_tag(takes_context=True)
def profile_safe_change(context, profile) -> dict:
    """Return what the editor shows of safe change: whether a direct save is refused here
    (then it offers "Propose change"), the profile's version and its open change requests."""
    request = context.get("request")
    user = getattr(request, "user", None)
    return {
        "protected": profile_write_refusal(user=user, environments=[profile.environment])
        is not None,
        "version": profile.version,
        "open_requests": ChangeRequest.objects.filter(
            profile_key=profile.key, status=ChangeRequest.Status.OPEN
        ).count(),
    }

"""The rendered text diff of a version diff over the API (``?scenario=`` on
``GET /api/v1/profiles/<key>/diff``): the parameter, its check, its throttle and its record.

Resolving costs what two resolutions cost, so a diff with a scenario counts 2 in the
``resolve`` scope the studio's doors and ``/resolve`` count in; a diff without one resolves
nothing and is not counted.
"""

from drf_spectacular.utils import OpenApiParameter
from rest_framework import exceptions

from profiles.api.base import invalid
from profiles.api.exceptions import not_found
from profiles.api.serializers.entries import SCENARIO_NAME_MAX_LENGTH
from profiles.safechange.text_diff import ScenarioNotFound, version_text_diff
from profiles.workspace.permissions import require_key_environment, require_key_profile
from profiles.workspace.throttling import user_throttle_wait

SCENARIO_PARAMETER = OpenApiParameter(
    "scenario",
    {"type": "string", "maxLength": SCENARIO_NAME_MAX_LENGTH},
    description="A saved scenario of the profile: the answer adds `text`, the rendered texts "
    "of both versions for it (each version's budget and rules on today's material) and their "
    "unified diff. Unknown: 404 naming `scenario`. Counts as two resolutions in the throttle.",
)


def version_text_record(
    request, *, key: str, documents: dict, from_number: int, to_number: int
) -> dict | None:
    """Return the ``text`` of a version diff for the request's ``scenario`` (None: not asked)."""
    name = request.query_params.get("scenario")
    if not name:
        return None
    # The text is a resolution of the profile: a key limited to environments resolves only
    # profiles of those, as it was then (each version) and as it is now.
    require_key_profile(request.auth, key)
    for number in (from_number, to_number):
        require_key_environment(request.auth, documents[number].get("environment"), key)
    if len(name) > SCENARIO_NAME_MAX_LENGTH:
        raise invalid("scenario", f"must be at most {SCENARIO_NAME_MAX_LENGTH} characters")
    wait = user_throttle_wait(scope="resolve", user=request.user, cost=2)
    if wait is not None:
        raise exceptions.Throttled(wait=wait)
    try:
        diff = version_text_diff(
            profile_key=key,
            scenario_name=name,
            before=documents[from_number],
            after=documents[to_number],
            before_number=from_number,
            after_number=to_number,
        )
    except ScenarioNotFound:
        raise not_found(f'scenario "{name}" of profile "{key}"', "scenario") from None
    return diff.as_dict()
